#!/usr/bin/env python3
"""One sgmcmc row of bench/peers.sh (issue 44): runs `sgmcmc train` on the App. H.1 config and prints
its summary.json in the peers' JSON-line form (common.report's keys).

    sgmcmc_row.py --bin build/sgmcmc --sampler sghmc|sgld [--gibbs] --epochs 20 --burn-in 10 --seed 1
                  --threads 2 --device cpu --data DIR --out TMPDIR

steps/s is summary.json's steps over `time.steps` (the training steps alone, no evaluation, Gibbs step,
sample or checkpoint), the same clock as the peers' (their epochs only).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def find(d, *keys):
    for k in keys:
        if k in d:                 # summary.json's keys are flat ("time.steps")
            return d[k]
        cur = d
        ok = True
        for part in k.split("."):
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            else:
                ok = False
                break
        if ok:
            return cur
    return None


def after_first_epoch(metrics_csv, clock="time.steps"):
    """Steps per second after the first epoch (the peers' rows drop their first, compiled, epoch), from
    metrics.csv's first and last rows (one per epoch). clock "time.steps": the seconds spent stepping,
    without the per-epoch work and the first epoch's graph capture (what the peers' epoch clocks
    count); "wall_seconds": whole epochs with sgmcmc's per-epoch work (Gibbs step, sample, evaluation).
    None with fewer than two rows or without the column."""
    import csv
    try:
        rows = list(csv.DictReader(open(metrics_csv)))
    except OSError:
        return None
    if len(rows) < 2 or not rows[0].get(clock):
        return None
    first, last = rows[0], rows[-1]
    dt = float(last[clock]) - float(first[clock])
    return (float(last["step"]) - float(first["step"])) / dt if dt > 0 else None


def work_after_first_epoch(metrics_csv):
    """Seconds of the per-epoch work (Gibbs steps, samples, evaluations: metrics.csv's time.gibbs, time.samples,
    time.eval) between the first and last rows, the counterpart of the peers' eval_seconds (their
    predictions); None without those columns."""
    import csv
    keys = ("time.gibbs", "time.samples", "time.eval")
    try:
        rows = list(csv.DictReader(open(metrics_csv)))
    except OSError:
        return None
    if len(rows) < 2 or any(not rows[0].get(k) for k in keys):
        return None
    return sum(float(rows[-1][k]) - float(rows[0][k]) for k in keys)


def main():
    ap = common.parser(__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/sgmcmc")
    ap.add_argument("--gibbs", action="store_true", help="the shipped config's Gibbs steps for lambda")
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", action="append", default=[], help="extra key=value for sgmcmc")
    ap.add_argument("--bpmf", action="store_true", help="BPMF on movielens-small fold 0 (bench/peers/bpmf.py's workload)")
    ap.add_argument("--ratings", default=os.environ.get("RATINGS", "../shared/data/movielens-small/ratings.dat"))
    ap.add_argument("--steps", type=int, default=4000, help="--bpmf: steps (burn-in: --burn-in steps)")
    ap.add_argument("--thin", type=int, default=20)
    a = ap.parse_args()
    if a.bpmf:
        return bpmf(a)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cfg = os.path.join(root, "configs", f"mnist_bnn_{a.sampler}.yaml")
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    sets = [f"data.dir={a.data}", f"train.epochs={a.epochs}", f"train.burn_in={a.burn_in}", f"seed={a.seed}",
            f"train.threads={a.threads}", f"device={a.device}"]
    if not a.gibbs:
        sets.append("prior.hyperprior=none")
    sets += a.set
    cmd = [a.bin, "train", cfg, "--out", a.out] + sum((["--set", s] for s in sets), [])
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:])
        raise SystemExit(f"sgmcmc exited {r.returncode}: {' '.join(cmd)}")
    s = json.load(open(os.path.join(a.out, "summary.json")))
    steps = find(s, "steps", "total_steps", "step")
    t_steps = find(s, "time.steps")
    err = find(s, "test.error", "final.test.error", "metrics.test.error", "test_error")
    nll = find(s, "test.nll", "final.test.nll", "metrics.test.nll", "test_nll")
    version = "sgmcmc " + subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                         text=True).stdout.strip()
    import datetime
    built = datetime.datetime.fromtimestamp(os.path.getmtime(a.bin)).strftime("%Y-%m-%d %H:%M")
    version += f" (binary {a.bin}, built {built}; {s.get('runtime', '')})"
    prior = "a Gibbs step for λ every epoch after 1,000 steps (shipped config)" if a.gibbs else \
        "prior.hyperprior=none (λ = 1 fixed)"
    settings = (f"configs/mnist_bnn_{a.sampler}.yaml, " +
                ("lr = η = 2e-6, alpha = 0.01, noise_estimate none, Euler" if a.sampler == "sghmc" else "lr = 1e-5") +
                f", {prior}, train.threads={a.threads}")
    d = {"peer": "sgmcmc", "version": version, "sampler": a.sampler, "settings": settings, "seed": a.seed,
         "threads": find(s, "threads", "train.threads") or a.threads, "device": a.device, "epochs": a.epochs,
         "burn_in": a.burn_in, "batch": common.BATCH, "steps": steps, "step_seconds": t_steps,
         "steps_per_second": steps / t_steps, "steps_per_second_summary": find(s, "steps_per_second"),
         "wall_seconds": find(s, "wall_seconds"),
         # the one-off tuning inside the run (cuBLASLt's measured choice per new shape, on the GPU), the
         # counterpart of XLA's autotuning inside the peers' compile_seconds; nothing is compiled at run time
         "compile_seconds": s.get("gemm_lt_measure_seconds") or 0.0,
         "samples": find(s, "samples", "num_samples"), "test_error": err, "test_nll": nll,
         "steps_per_second_after_first_epoch": after_first_epoch(os.path.join(a.out, "metrics.csv")),
         "steps_per_second_after_first_epoch_wall": after_first_epoch(os.path.join(a.out, "metrics.csv"),
                                                                       "wall_seconds"),
         "epoch_work_seconds_after_first_epoch": work_after_first_epoch(os.path.join(a.out, "metrics.csv")),
         "time": {k: v for k, v in s.items() if k.startswith("time.")}}
    print(json.dumps(d), flush=True)


def bpmf(a):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cfg = os.path.join(root, "configs", "movielens_small_sghmc.yaml")
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    sets = [f"data.path={a.ratings}", "data.fold=0", "prior.hyperprior=none", f"train.steps={a.steps}",
            f"train.burn_in_steps={a.burn_in}", f"train.thin={a.thin}", f"train.eval_every_steps={a.steps}",
            f"seed={a.seed}", f"train.threads={a.threads}", f"device={a.device}"] + a.set
    cmd = [a.bin, "train", cfg, "--out", a.out] + sum((["--set", x] for x in sets), [])
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:])
        raise SystemExit(f"sgmcmc exited {r.returncode}: {' '.join(cmd)}")
    s = json.load(open(os.path.join(a.out, "summary.json")))
    steps, t = s["steps"], s["time.steps"]
    print(json.dumps({"peer": "sgmcmc-bpmf", "version": "sgmcmc " + subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE, text=True).stdout.strip(), "sampler": "sghmc",
                      "settings": "configs/movielens_small_sghmc.yaml, data.fold=0, prior.hyperprior=none, eta = 6.4e-5, a = 0.05",
                      "seed": a.seed, "threads": a.threads, "device": a.device, "steps": steps, "batch": 4000,
                      "step_seconds": t, "steps_per_second": steps / t, "samples": s.get("samples"),
                      "test_rmse": s.get("test_rmse"), "dataset": s.get("dataset")}), flush=True)


if __name__ == "__main__":
    main()
