#!/usr/bin/env python3
"""The results table of docs/uncertainty.md from two sweeps' summary.csv (mean ± sd over seeds).

  scripts/uncertainty_table.py runs/sweeps/uncertainty [runs/sweeps/uncertainty_classes]
  scripts/uncertainty_table.py --points runs/sweeps/small_n     one row per (part, point): validation and
                                                                 test NLL, error, ECE, final λ of fc1.weight

Rows: the parts (methods) of the first sweep, in file order. Columns: test error, NLL, Brier, ECE,
mutual information, OOD AUROC by entropy (and by MI) on the first sweep's OOD set, OOD AUROC by
entropy and by MI on the second sweep's (the class split), wall seconds per run, seeds done.
"""
import csv
import math
import sys
from collections import OrderedDict


def read(path, by_point=False):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "done"]
    parts = OrderedDict()
    for r in rows:
        key = r["part"] + (" " + r["point"] if by_point and r["point"] else "")
        parts.setdefault(key, []).append(r)
    return parts


def points_table(path):
    print("| part, point | val NLL | test NLL | test error % | test ECE | λ fc1.weight (end) | seeds |")
    print("|---|---|---|---|---|---|---|")
    for key, rows in read(path + "/summary.csv", by_point=True).items():
        print(f"| {key} | {stat(rows, 'val_nll')} | {stat(rows, 'test_nll')} | {stat(rows, 'test_error', 100, 2)} "
              f"| {stat(rows, 'test_ece', 1, 4)} | {stat(rows, 'lambda.fc1.weight', 1, 1)} | {len(rows)} |")
    return 0


def stat(rows, key, scale=1.0, digits=3):
    vals = [float(r[key]) * scale for r in rows if r.get(key) not in (None, "", "nan", "null")]
    if not vals:
        return "–"
    m = sum(vals) / len(vals)
    if len(vals) == 1:
        return f"{m:.{digits}f}"
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
    return f"{m:.{digits}f} ± {sd:.{digits}f}"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "--points":
        return points_table(argv[2])
    main_parts = read(argv[1] + "/summary.csv")
    cls_parts = read(argv[2] + "/summary.csv") if len(argv) > 2 else {}
    print("| method | test error % | NLL | Brier | ECE | MI | AUROC rot. (H) | AUROC rot. (MI) | AUROC classes 5–9 (H) "
          "| AUROC classes 5–9 (MI) | wall s / run | seeds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for part, rows in main_parts.items():
        cls = cls_parts.get(part, [])
        print(f"| {part} | {stat(rows, 'test_error', 100, 2)} | {stat(rows, 'test_nll')} | {stat(rows, 'test_brier')} "
              f"| {stat(rows, 'test_ece', 1, 4)} | {stat(rows, 'test_mi')} | {stat(rows, 'ood_auroc_entropy')} "
              f"| {stat(rows, 'ood_auroc_mi')} | {stat(cls, 'ood_auroc_entropy')} | {stat(cls, 'ood_auroc_mi')} "
              f"| {stat(rows, 'wall_seconds', 1, 0)} "
              f"| {len(rows)}{' / ' + str(len(cls)) if cls else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
