#!/usr/bin/env python3
"""Summarises Nsight Compute CSVs written by scripts/gpu_session.sh's profile stage.

usage: ncu_summary.py EAGER_CSV [GRAPH_CSV]
       ncu_summary.py --kernels CSV STEPS
Eager: the kernels per training step (a step ends with the fused sampler update) and their GPU time;
graph: the GPU time of whole graph replays. --kernels: every kernel of a profiled window by name (count,
mean and total GPU time) and the total over STEPS steps, for a program whose step has no marker kernel
(a peer's XLA or Inductor step: profile a window of whole steps)."""
import csv, io, statistics, sys


def rows(path):
    text = open(path, errors="replace").read()
    i = text.find('"ID"')
    if i < 0:
        return []
    return [r for r in csv.DictReader(io.StringIO(text[i:])) if r.get("Metric Name") == "gpu__time_duration.sum"]


def value(r):
    return float(r["Metric Value"].replace(",", ""))


if sys.argv[1] == "--kernels":
    ks, steps = rows(sys.argv[2]), int(sys.argv[3])
    per = {}
    for r in ks:
        k = r["Kernel Name"][:100]
        c, t = per.get(k, (0, 0.0))
        per[k] = (c + 1, t + value(r))
    total = sum(t for _, t in per.values())
    print(f"{len(ks)} kernels profiled, {total / 1000:.1f} us of GPU time: {total / 1000 / max(steps, 1):.1f} us "
          f"and {len(ks) / max(steps, 1):.1f} kernels a step over {steps} steps")
    for k, (c, t) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"  {c:4d} x {t / c / 1000:7.2f} us = {t / 1000:8.1f} us  {k}")
    sys.exit(0)
eager = rows(sys.argv[1])
if eager:
    names = [r["Kernel Name"] for r in eager]
    ends = [i for i, n in enumerate(names) if "fused_kernel" in n]
    print(f"eager: {len(eager)} kernels profiled; fused update at {len(ends)} of them")
    if len(ends) >= 2:
        a, b = ends[-2], ends[-1]
        step = eager[a + 1:b + 1]
        ns = sum(value(r) for r in step)
        print(f"one step: {len(step)} kernels, {ns / 1000:.1f} us of GPU time (sum of kernel durations)")
        per = {}
        for r in step:
            k = r["Kernel Name"][:90]
            c, t = per.get(k, (0, 0.0))
            per[k] = (c + 1, t + value(r))
        for k, (c, t) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            print(f"  {c:3d} x {t / 1000:7.2f} us  {k}")
if len(sys.argv) > 2:
    graph = rows(sys.argv[2])
    g = [value(r) / 1000 for r in graph]
    if g:
        print(f"graph: {len(g)} workloads profiled; GPU time median {statistics.median(g):.1f} us, "
              f"min {min(g):.1f}, max {max(g):.1f}; names: {sorted(set(r['Kernel Name'][:40] for r in graph))[:4]}")
