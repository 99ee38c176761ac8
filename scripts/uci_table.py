#!/usr/bin/env python3
"""UCI-style regression tables from a sweep's summary.csv: mean ± standard error over the splits.

  scripts/uci_table.py runs/sweeps/uci_boston [--group sampler.leapfrog_steps] [--all]

For every part (method) and, with --group, every value of that key, the step size (the grid point)
with the lowest mean validation RMSE over the splits is chosen, and its test RMSE, test
log-likelihood (= −test_nll) and 90 % interval coverage are reported as mean ± s.e. over the splits
(s.e. = sd / sqrt(splits), as PBP and the SGHMC papers report). Only points that finished on every
split are eligible (a diverged run is not 'done'). --all prints every grid point, with its split count.
"""
import argparse
import csv
import math
import statistics
from collections import OrderedDict


def mean_se(v):
    m = statistics.fmean(v)
    se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
    return m, se


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep_dir")
    ap.add_argument("--group", default="")
    ap.add_argument("--all", action="store_true")
    a = ap.parse_args()
    with open(a.sweep_dir + "/summary.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "done"]
    cells = OrderedDict()  # (part, group value) -> point -> rows
    for r in rows:
        g = r.get(a.group, "") if a.group else ""
        cells.setdefault((r["part"], g), OrderedDict()).setdefault(r["point"], []).append(r)
    val = lambda rs: statistics.fmean(float(r["val_rmse"]) for r in rs if r["val_rmse"])
    head = "| method | step size (chosen on validation) | splits | test RMSE | test LL | 90 % coverage |"
    print(head)
    print("|---|---|---|---|---|---|")
    for (part, g), points in cells.items():
        ok = {p: rs for p, rs in points.items() if all(r["val_rmse"] and r["test_rmse"] for r in rs)}
        if not ok:
            continue
        full = max(len(rs) for rs in ok.values())  # a point with diverged splits is not eligible
        eligible = {p: rs for p, rs in ok.items() if len(rs) == full}
        shown = ok.items() if a.all else [min(eligible.items(), key=lambda kv: val(kv[1]))]
        for point, rs in shown:
            rm, rse = mean_se([float(r["test_rmse"]) for r in rs])
            lm, lse = mean_se([-float(r["test_nll"]) for r in rs])
            cov = statistics.fmean(float(r["test_cover90"]) for r in rs if r.get("test_cover90"))
            name = part + (f" ({a.group.split('.')[-1]} {g})" if a.group else "")
            print(f"| {name} | {point} | {len(rs)} | {rm:.2f} ± {rse:.2f} | {lm:.2f} ± {lse:.2f} | {cov:.2f} |")


if __name__ == "__main__":
    main()
