#!/usr/bin/env python3
"""The results table of docs/uncertainty.md from two sweeps' summary.csv (mean ± sd over seeds).

  scripts/uncertainty_table.py runs/sweeps/uncertainty [runs/sweeps/uncertainty_classes]
  scripts/uncertainty_table.py --points runs/sweeps/small_n     one row per (part, point): validation and
                                                                 test NLL, error, ECE, final λ of fc1.weight
  scripts/uncertainty_table.py --rows [--ood LABEL] DIR [DIR ...]
                                                                 the parts of every sweep in turn, one OOD
                                                                 set (the 800-epoch table; LABEL names it
                                                                 in the header, default "rot."), plus each
                                                                 optimizer early-stopped: its evaluation
                                                                 with the lowest validation NLL

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


OPTIMIZERS = ("sgd", "sgd-momentum", "rmsprop", "adam")


def early_stopped(path, rows):
    """Each run's metrics.csv row with the lowest val_nll (an optimizer stopped early on validation)."""
    out = []
    for r in rows:
        with open(f"{path}/{r['run']}/metrics.csv", newline="") as f:
            evals = [e for e in csv.DictReader(f) if e.get("val_nll") not in (None, "", "nan")]
        best = min(evals, key=lambda e: float(e["val_nll"]))
        best = dict(best)
        best["wall_seconds"] = r["wall_seconds"]
        out.append(best)
    return out


def rows_table(paths, ood="rot."):
    print(f"| method | test error % | NLL | Brier | ECE | MCE | MI | AUROC {ood} (H) | AUROC {ood} (MI) | wall s / run | seeds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        for part, rows in read(path + "/summary.csv").items():
            print(f"| {part} | {stat(rows, 'test_error', 100, 2)} | {stat(rows, 'test_nll')} | {stat(rows, 'test_brier')} "
                  f"| {stat(rows, 'test_ece', 1, 4)} | {stat(rows, 'test_mce', 1, 3)} | {stat(rows, 'test_mi')} "
                  f"| {stat(rows, 'ood_auroc_entropy')} | {stat(rows, 'ood_auroc_mi')} | {stat(rows, 'wall_seconds', 1, 0)} "
                  f"| {len(rows)} |")
            if part in OPTIMIZERS:
                es = early_stopped(path, rows)
                epochs = "/".join(str(int(float(e["epoch"]))) for e in es)
                print(f"| {part}, early-stopped (epoch {epochs}) | {stat(es, 'test_error', 100, 2)} | {stat(es, 'test_nll')} "
                      f"| {stat(es, 'test_brier')} | {stat(es, 'test_ece', 1, 4)} | {stat(es, 'test_mce', 1, 3)} | – "
                      f"| {stat(es, 'ood_auroc_entropy')} | – | {stat(es, 'wall_seconds', 1, 0)} | {len(es)} |")
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "--points":
        return points_table(argv[2])
    if argv[1] == "--rows":
        if len(argv) > 3 and argv[2] == "--ood":
            return rows_table(argv[4:], argv[3])
        return rows_table(argv[2:])
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
