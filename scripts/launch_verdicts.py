#!/usr/bin/env python3
"""The decisions that scripts/gpu_session.sh's launch and launch_more stages were run for, read off their logs.

    python3 scripts/launch_verdicts.py LOGDIR      (LOGDIR: logs.tgz unpacked, i.e. its gpu-logs/ folder)

Each opt-in kernel is set against what `auto` runs now, in every row it was timed in (bench_step's replayed
steps in launch_steps.jsonl: H.1 one launch a step and blocks of 100, FNN-800; 100 and 1,000 chains sharing a
minibatch), with every round's samples pooled. A candidate is faster in a row only where its median is below
the baseline's fastest sample and its slowest sample below the baseline's median: a difference inside the
rounds' spread is no evidence. Its verdict:
  flip         faster in every row it was timed in, and each of its GPU tests ran and passed;
  keep         timed, tests passed, but not faster in every row;
  broken       one of its GPU tests failed (whatever the times say);
  no evidence  a row or a test missing, or a test skipped (no GPU, or no cuBLASLt in the build).
H.1 in full (h1_<variant><round>_true_summary.json) is printed beside: wall clock, steps, eval, test error.
Exit status 0; the verdicts are for a person to act on (kernel_settings.h's defaults, README, the tests).
"""
import glob
import json
import os
import re
import statistics
import sys

# (name, candidate, baseline, row kinds, GPU tests, what a flip changes)
STEP_ROWS = ("h1_steps1", "h1_steps100", "fnn800")
CHOICES = [
    ("own launches", "gemm_own", "gemm", STEP_ROWS,
     ["MlpForwardHead.CudaEqualsReference", "WeightGrad.CudaEqualsReferenceBitForBit",
      "Graph.CudaOwnProductsRunNearCublasRun"],
     "kernels.cuda_mlp_forward and cuda_mlp_wgrad: auto takes fused"),
    ("own forward alone", "gemm_forward", "gemm", STEP_ROWS, ["MlpForwardHead.CudaEqualsReference"],
     "kernels.cuda_mlp_forward: auto takes fused"),
    ("own wgrad alone", "gemm_wgrad", "gemm", STEP_ROWS, ["WeightGrad.CudaEqualsReferenceBitForBit"],
     "kernels.cuda_mlp_wgrad: auto takes fused"),
    ("column blocks", "columns", "gemm", STEP_ROWS, ["MlpTail.CudaEqualsReferenceBitForBit"],
     "kernels.cuda_mlp_tail: auto takes columns"),
    ("programmatic launches", "gemm_own_pdl", "gemm_own", STEP_ROWS, ["Graph.CudaPdlRunEqualsPlainRun"],
     "kernels.cuda_pdl: auto takes on"),
    ("update in the pass", "gemm_own_update", "gemm_own", STEP_ROWS,
     ["MlpFused.CudaUpdateInLastLaunchEqualsSeparateUpdate", "Graph.CudaUpdateInMlpPassEqualsSeparateLaunch"],
     "kernels.cuda_mlp_update: auto takes fused"),
    ("k in 4 parts", "columns_kparts4", "columns", STEP_ROWS, ["MlpTail.CudaEqualsReferenceBitForBit"],
     "kernels.cuda_mlp_kparts: auto takes 4 (with the column blocks)"),
    ("shared chains through the pass", "fused", "aten", ("chains100", "chains1000"),
     ["MlpFused.CudaSharedChainsEqualsReference"],
     "kernels.cuda_mlp: auto takes chains sharing a minibatch (mlp_backward_fused_cuda's chains > 1 return)"),
    ("shared chains through the pass, TF32", "fused_tf32", "aten_tf32", ("chains100",),
     ["MlpFused.CudaSharedChainsEqualsReference"], "as above, with train.tf32"),
]


def row_label(kind, variant):
    if kind.startswith("h1_"):
        return f"mlp_h1_{variant}_{kind[3:]}_graph"
    if kind == "fnn800":
        return f"fnn800_{variant}_graph"
    return f"{kind}_shared_{variant}_graph"  # chains100 / chains1000


def step_samples(logdir):
    """µs per step of every round of every label, pooled over the file's repeated rows."""
    out = {}
    path = os.path.join(logdir, "launch_steps.jsonl")
    if not os.path.exists(path):
        return out
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        out.setdefault(d["label"], []).extend(1e6 / r for r in d["step_steps_per_s"] if r > 0)
    return out


def test_status(logdir):
    """'ok' | 'failed' | 'skipped' per test name, from every gtest log in the folder (a failure wins)."""
    status = {}
    rank = {"skipped": 0, "ok": 1, "failed": 2}
    for path in glob.glob(os.path.join(logdir, "test_*.log")):
        for line in open(path, errors="replace"):
            m = re.match(r"^\[\s+(OK|FAILED|SKIPPED)\s+\] (\w+\.\w+)(?: \(\d+ ms\))?\s*$", line)
            if m:
                s = {"OK": "ok", "FAILED": "failed", "SKIPPED": "skipped"}[m.group(1)]
                if rank[s] >= rank.get(status.get(m.group(2)), -1):
                    status[m.group(2)] = s
    return status


def faster(cand, base):
    return statistics.median(cand) < min(base) and max(cand) < statistics.median(base)


def spread(xs):
    return f"{min(xs):.1f} / {statistics.median(xs):.1f} / {max(xs):.1f}"


def verdict(choice, samples, tests):
    """(verdict, lines to print) for one entry of CHOICES."""
    name, cand, base, kinds, needed, _ = choice
    lines, missing, all_faster = [], [], True
    for kind in kinds:
        c, b = samples.get(row_label(kind, cand)), samples.get(row_label(kind, base))
        if not c or not b:
            missing.append(kind)
            continue
        f = faster(c, b)
        all_faster &= f
        lines.append(f"    {kind:12s} {base}: {spread(b)} µs   {cand}: {spread(c)} µs   "
                     f"{statistics.median(c) / statistics.median(b):.3f}×  {'faster' if f else 'not faster'}")
    states = {t: tests.get(t, "missing") for t in needed}
    lines.append("    tests: " + ", ".join(f"{t} {s}" for t, s in states.items()))
    if any(s == "failed" for s in states.values()):
        return "broken", lines
    if missing or any(s != "ok" for s in states.values()):
        if missing:
            lines.append("    rows not timed: " + ", ".join(missing))
        return "no evidence", lines
    return ("flip" if all_faster else "keep"), lines


def h1_in_full(logdir):
    rows = []
    for path in sorted(glob.glob(os.path.join(logdir, "h1_*_true_summary.json"))):
        d = json.load(open(path))
        tag = os.path.basename(path)[len("h1_"):-len("_true_summary.json")]
        rows.append(f"    {tag:14s} wall {d.get('wall_seconds', float('nan')):6.2f} s   steps "
                    f"{d.get('time.steps', float('nan')):6.2f} s   eval {d.get('time.eval', float('nan')):5.2f} s   "
                    f"test_error {d.get('test_error')}  test_nll {d.get('test_nll')}")
    return rows


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.exit("usage: launch_verdicts.py LOGDIR (the launch stage's gpu-logs folder)")
    logdir = argv[1]
    samples, tests = step_samples(logdir), test_status(logdir)
    for choice in CHOICES:
        v, lines = verdict(choice, samples, tests)
        print(f"{choice[0]}: {v}" + (f"  ({choice[5]})" if v == "flip" else ""))
        print("\n".join(lines))
    rows = h1_in_full(logdir)
    if rows:
        print("H.1 in full (graph-replayed):")
        print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv)
