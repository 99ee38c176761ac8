#!/usr/bin/env python3
"""Compares two bench/golden/run.sh outputs: metrics.csv field for field and summary.json's numbers to
1e-7 (relative), timing columns excluded.   usage: bench/golden/compare.py BASE_DIR NEW_DIR"""
import csv
import json
import sys

base, new = sys.argv[1], sys.argv[2]


def skip(k):
    return any(s in k for s in ("wall", "seconds", "per_second", "time.", "runtime"))


ok = True
for run in ["h1", "boston", "ml", "cnn", "sgd"]:
    a = list(csv.DictReader(open(f"{base}/{run}/metrics.csv")))
    b = list(csv.DictReader(open(f"{new}/{run}/metrics.csv")))
    diffs = sum(1 for ra, rb in zip(a, b) for k in ra if not skip(k) and ra[k] != rb.get(k)) + abs(len(a) - len(b))
    sa = json.load(open(f"{base}/{run}/summary.json"))
    sb = json.load(open(f"{new}/{run}/summary.json"))
    sd = [k for k, v in sa.items() if not skip(k) and isinstance(v, (int, float)) and not isinstance(v, bool)
          and not (isinstance(sb.get(k), (int, float)) and abs(v - sb[k]) <= 1e-7 * max(1, abs(v)))]
    print(f"{run}: metrics.csv {len(a)} rows, {diffs} differing fields; summary.json differing: {sd}; "
          f"new keys {sorted(set(sb) - set(sa))}")
    ok = ok and diffs == 0 and not sd
print("GOLDEN", "EQUAL" if ok else "DIFFER")
sys.exit(0 if ok else 1)
