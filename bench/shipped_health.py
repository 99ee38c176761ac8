#!/usr/bin/env python3
"""Every shipped config (configs/*.yaml) at its full budget, as it is: exit code, wall time and the
health verdict of summary.json (every fold's, for k-fold configs), with the largest gradient-noise ratio
of the probes. The CI test (tests/test_shipped_configs.cpp) runs each config for a few steps only; this
is the check that the health checks stay quiet over whole runs. Configs whose data is not on this
machine (MovieLens-1M) are reported as skipped.

usage: /usr/bin/python3 bench/shipped_health.py [--sgmcmc build/sgmcmc] [--work /tmp/shipped_health]
                                                [--timeout 1800] [--only NAME,NAME] [--out FILE.md]
Runs one config at a time with OMP_NUM_THREADS=1 (the configs' own train.threads apply).
"""
import argparse
import glob
import json
import os
import subprocess
import time

FMNIST = "/usr/share/datasets/fashion-mnist"


def summaries(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "summary.json")) +
                   glob.glob(os.path.join(run_dir, "fold*", "summary.json")))
    return [json.load(open(f)) for f in files]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sgmcmc", default="build/sgmcmc")
    ap.add_argument("--work", default="/tmp/shipped_health")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob("configs/*.yaml"))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    os.makedirs(a.work, exist_ok=True)
    rows = ["| config | exit | wall | health | warnings | max noise ratio |", "| --- | --- | --- | --- | --- | --- |"]
    for name in names:
        text = open(f"configs/{name}.yaml").read()
        if "ml-1m" in text and not os.path.exists("data/ml-1m/ratings.dat"):
            rows.append(f"| {name} | skipped: MovieLens-1M is not on this machine | | | | |")
            print(rows[-1], flush=True)
            continue
        out = os.path.join(a.work, name)
        start = time.time()
        env = dict(os.environ, OMP_NUM_THREADS="1")
        try:
            rc = subprocess.run([a.sgmcmc, "train", f"configs/{name}.yaml", "--set", f"data.dir={FMNIST}",
                                 "--out", out, "--overwrite", "--quiet"], env=env, timeout=a.timeout,
                                stdout=subprocess.DEVNULL, stderr=open(out + ".err", "w")).returncode
        except subprocess.TimeoutExpired:
            rows.append(f"| {name} | not finished in {a.timeout:.0f} s | | | | |")
            print(rows[-1], flush=True)
            continue
        wall = time.time() - start
        ss = [s for s in summaries(out) if "health" in s]  # a k-fold run's own summary aggregates its folds'
        ok = all(s.get("health", {}).get("ok", False) for s in ss) and bool(ss)
        warnings = sorted({w["check"] for s in ss for w in s.get("health", {}).get("warnings", [])})
        ratios = [s["health"]["gradient_noise"]["max_ratio"] for s in ss if "gradient_noise" in s.get("health", {})]
        ratio = f"{max(ratios):.3g}" if ratios else "n/a"
        rows.append(f"| {name} | {rc} | {wall:.0f} s | {'ok' if ok else 'NOT ok'} | {', '.join(warnings) or '-'} | {ratio} |")
        print(rows[-1], flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
