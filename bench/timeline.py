#!/usr/bin/env python3
"""Where a CUDA training run's GPU works and where it waits: a timeline from the profiler.

Runs ``sgmcmc.train`` (the binary's trainer, in this process: the Python package as built, e.g.
``PYTHONPATH=build-cuda/python``) under ``torch.profiler`` (Kineto, CUPTI: every kernel, copy and fill
on the GPU, also inside replayed CUDA graphs, and the host's ops) and summarises the GPU's side:

- the steady steps: a step ends with the sampler's update kernel (``fused_kernel``); per step its
  period, the GPU's busy time (the union of its operations), its operations, the gap before its first
  operation (what sits between two replays: the per-step copies, the graph's launch) and the largest
  gap inside it;
- the epochs' boundaries (the periods well above the steady one: Gibbs, the sample's predictions, the
  evaluation): their length, busy time and idle time, and the GPU's idle time after each host read
  (``sgmcmc::host_read``, the evaluation's one read), i.e. while the host finishes an evaluation
  before it queues the next steps;
- the operations of a steady step by total time.

The profiler costs host time per op, so host-bound phases run slower than without it; the GPU's own
operation times are not changed. Usage (the GPU session's ``timeline`` stage runs it):

    PYTHONPATH=build-cuda/python python3 bench/timeline.py configs/mnist_bnn_sghmc.yaml \\
        --set data.dir=... --set device=cuda --epochs 8 --skip 3 --trace t.json.gz --json t.json

``--summarize TRACE`` summarises an existing chrome trace (.json or .json.gz) instead of running.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
from typing import Dict, List, Sequence, Tuple

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
STEP_END = "fused_kernel"  # the sampler's fused update: the last kernel of every step
HOST_READ = "sgmcmc::host_read"


def load_trace(path: str) -> List[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def union_length(intervals: Sequence[Tuple[float, float]]) -> float:
    """Total length covered by [start, end) intervals (overlaps counted once)."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def summarize(events: List[dict], skip_steps: int = 0) -> Dict[str, object]:
    """The GPU's busy and idle time by step and by epoch boundary, from chrome-trace events."""
    gpu = sorted(((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("name", ""), e.get("cat", ""))
                  for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS), key=lambda g: g[0])
    out: Dict[str, object] = {"gpu_operations": len(gpu)}
    if not gpu:
        out["note"] = "no GPU operations in the trace (a CPU run, or CUPTI unavailable)"
        return out
    ends = [i for i, g in enumerate(gpu) if STEP_END in g[2]]
    ends = ends[skip_steps:]
    if len(ends) < 3:
        out["note"] = f"fewer than 3 steps ({STEP_END} kernels) after the skipped ones"
        return out
    steps = []  # (period, busy, ops, gap before the first op, largest inner gap, index range)
    for a, b in zip(ends, ends[1:]):
        prev_end = gpu[a][1]
        ops = gpu[a + 1:b + 1]
        period = gpu[b][1] - prev_end
        busy = union_length([(s, e) for s, e, _, _ in ops])
        before = ops[0][0] - prev_end
        inner, reach = 0.0, ops[0][1]
        for s, e, _, _ in ops[1:]:
            inner = max(inner, s - reach)
            reach = max(reach, e)
        steps.append((period, busy, len(ops), before, inner, a + 1, b + 1))
    typical = median([p for p, *_ in steps])
    steady = [s for s in steps if s[0] <= 3 * typical]
    boundary = [s for s in steps if s[0] > 3 * typical]
    out["steps"] = {
        "count": len(steady),
        "period_us": median([s[0] for s in steady]),
        "busy_us": median([s[1] for s in steady]),
        "idle_us": median([s[0] - s[1] for s in steady]),
        "operations": median([s[2] for s in steady]),
        "gap_before_first_op_us": median([s[3] for s in steady]),
        "largest_inner_gap_us": median([s[4] for s in steady]),
    }
    by_name: Dict[str, List[float]] = {}
    for s in steady:
        for g in gpu[s[5]:s[6]]:
            by_name.setdefault(f"{g[3]}: {g[2][:100]}", []).append(g[1] - g[0])
    n = max(len(steady), 1)
    out["step_operations"] = sorted(({"name": k, "per_step": len(v) / n, "us_per_step": sum(v) / n,
                                      "median_us": median(v)} for k, v in by_name.items()),
                                     key=lambda r: -r["us_per_step"])[:15]
    out["boundaries"] = {
        "count": len(boundary),
        "period_us": median([s[0] for s in boundary]),
        "busy_us": median([s[1] for s in boundary]),
        "idle_us": median([s[0] - s[1] for s in boundary]),
        "operations": median([s[2] for s in boundary]),
    }
    # the GPU's idle time after each host read: from the read's end to the next GPU operation's start
    reads = sorted(float(e["ts"]) + float(e.get("dur", 0)) for e in events
                   if e.get("ph") == "X" and e.get("name") == HOST_READ)
    starts = [g[0] for g in gpu]
    first_step = gpu[ends[0]][1]
    idle_after = []
    j = 0
    for r in reads:
        if r < first_step:
            continue
        while j < len(starts) and starts[j] < r:
            j += 1
        if j < len(starts):
            idle_after.append(starts[j] - r)
    out["after_host_read"] = {"count": len(idle_after), "gpu_idle_us": median(idle_after),
                              "gpu_idle_us_total": sum(idle_after)}
    return out


def print_summary(s: Dict[str, object]) -> None:
    if "steps" not in s:
        print("timeline:", s.get("note", "nothing to summarise"))
        return
    st, bd, hr = s["steps"], s["boundaries"], s["after_host_read"]
    print(f"timeline: {st['count']} steady steps: period {st['period_us']:.1f} us, GPU busy {st['busy_us']:.1f}, "
          f"idle {st['idle_us']:.1f} (before the first op {st['gap_before_first_op_us']:.1f}, largest inner gap "
          f"{st['largest_inner_gap_us']:.1f}), {st['operations']:.0f} operations")
    print(f"timeline: {bd['count']} epoch boundaries: {bd['period_us']:.0f} us, GPU busy {bd['busy_us']:.0f}, "
          f"idle {bd['idle_us']:.0f}, {bd['operations']:.0f} operations")
    print(f"timeline: after {hr['count']} host reads the GPU idles {hr['gpu_idle_us']:.0f} us each "
          f"({hr['gpu_idle_us_total'] / 1e3:.1f} ms in all)")
    for r in s["step_operations"]:
        print(f"    {r['per_step']:4.1f} x {r['median_us']:7.2f} us  {r['us_per_step']:7.2f} us/step  {r['name']}")


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", nargs="?")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE, as sgmcmc train --set")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--skip", type=int, default=3, help="epochs left out of the summary (start-up, captures)")
    ap.add_argument("--trace", help="write the chrome trace here (.json.gz: compressed)")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--summarize", metavar="TRACE", help="summarise this trace instead of running")
    a = ap.parse_args(argv)
    if a.summarize:
        s = summarize(load_trace(a.summarize))
    else:
        if not a.config:
            ap.error("a config (or --summarize TRACE)")
        # CUPTI torn down at the profile's end after CUDA graphs were captured inside it crashes the
        # process (pytorch/kineto#745, pytorch/pytorch#150957; on an H200 with torch 2.11 / CUDA 13 this
        # script ended in a segmentation fault there): CUPTI stays up until the process exits.
        os.environ.setdefault("DISABLE_CUPTI_LAZY_REINIT", "1")
        os.environ.setdefault("TEARDOWN_CUPTI", "0")
        import torch
        from torch.profiler import ProfilerActivity, profile

        import sgmcmc

        overrides = list(a.set) + [f"train.epochs={a.epochs}", "train.burn_in=1"]
        steps_per_epoch = None
        with tempfile.TemporaryDirectory() as tmp:
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
            with profile(activities=acts) as prof:
                summary = sgmcmc.train(a.config, out=os.path.join(tmp, "run"), overwrite=True, set=overrides)
            steps = int(summary.get("steps", 0))
            steps_per_epoch = steps // max(a.epochs, 1) if steps else 0
            raw = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(raw)
            events = load_trace(raw)
            if a.trace:
                with open(raw, "rb") as f_in, (gzip.open(a.trace, "wb") if a.trace.endswith(".gz")
                                               else open(a.trace, "wb")) as f_out:
                    f_out.write(f_in.read())
        s = summarize(events, skip_steps=a.skip * (steps_per_epoch or 0))
        s["config"], s["overrides"] = a.config, overrides
    print_summary(s)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
