#!/usr/bin/env python3
"""sgmcmc's posterior predictive against the NUTS references (bench/nuts/NAME.json), docs/calibration.md.

For each known-noise regression of bench/nuts/ and each sampler: `sgmcmc train` on the same data, model
and prior as the reference (a tanh MLP with 16 hidden units, N(0, 1) on every weight and bias,
tau ~ Gamma(1, 1) Gibbs-sampled), every other key at its default (`sampler.lr: auto`, the auto batch,
budget and burn-in), over seeds; then test coverage of the 90 % interval, its width, test NLL and the
noise sd against NUTS's. One line per run and a table of mean +- sd over seeds.

usage: /usr/bin/python3 bench/calibration.py [--sgmcmc build/sgmcmc] [--only wave1 sine3]
           [--samplers sghmc sgld] [--seeds 1 2 3] [--set KEY=VALUE ...] [--out /tmp/calibration] [--json F]
"""
import argparse
import json
import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CONFIG = """name: gold_{name}_{sampler}
seed: {seed}
data: {{format: tensors, path: {data}, task: regression}}
model: {{name: mlp, hidden: [{hidden}], activation: tanh, likelihood: gaussian, noise_prior: gamma,
        noise_alpha: {noise_alpha}, noise_beta: {noise_beta}}}
prior: {{precision: 1, hyperprior: none}}
sampler: {{name: {sampler}}}
output: {{progress: false, checkpoint: false}}
"""


def run(sgmcmc, name, sampler, seed, sets, out, threads):
    ref = json.load(open(os.path.join(HERE, "nuts", name + ".json")))
    os.makedirs(out, exist_ok=True)
    cfg = os.path.join(out, "%s_%s_%d.yaml" % (name, sampler, seed))
    with open(cfg, "w") as fh:
        fh.write(CONFIG.format(name=name, sampler=sampler, seed=seed, hidden=ref["hidden"],
                               data=os.path.join(HERE, "nuts", "data", name + ".pt"),
                               noise_alpha=ref["noise_alpha"], noise_beta=ref["noise_beta"]))
    rundir = cfg[:-5]
    cmd = [sgmcmc, "train", cfg, "--out", rundir, "--overwrite", "--set", "train.threads=%d" % threads]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    row = {"name": name, "sampler": sampler, "seed": seed, "exit": p.returncode, "wall": round(wall, 1)}
    try:
        s = json.load(open(os.path.join(rundir, "summary.json")))
    except OSError:
        row["error"] = (p.stderr or p.stdout).strip().splitlines()[-1:]
        return row, ref
    row.update({k: s.get(k) for k in ("test_cover90", "test_width90", "test_nll", "test_rmse", "tau", "steps",
                                      "samples", "rhat_predictions_max", "ess_predictions_min")})
    # the noise sd's posterior mean: 1/sqrt(tau) over the metrics rows after burn-in (tau's Gibbs draws)
    import csv
    burn = (s.get("auto") or {}).get("train.burn_in_steps", 0)
    taus = [float(r["tau"]) for r in csv.DictReader(open(os.path.join(rundir, "metrics.csv")))
            if r.get("tau") and int(r["step"]) > burn]
    row["noise_sd"] = sum(t ** -0.5 for t in taus) / len(taus) if taus else None
    row["lr"] = (s.get("lr_auto") or {}).get("lr")
    row["pilot_s"] = (s.get("lr_auto") or {}).get("seconds")
    g = (s.get("health") or {}).get("gradient_noise") or {}
    row["t_eff"] = g.get("max_effective_temperature")
    row["convergence"] = (s.get("convergence") or {}).get("verdict")
    row["d_cover90"] = row["test_cover90"] - ref["test"]["cover90"]
    row["d_nll"] = row["test_nll"] - ref["test"]["nll"]
    return row, ref


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sgmcmc", default=os.path.join(ROOT, "build", "sgmcmc"))
    ap.add_argument("--only", nargs="*", default=["wave1", "sine3", "friedman5"])
    ap.add_argument("--samplers", nargs="*", default=["sghmc", "sgld"])
    ap.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    ap.add_argument("--set", nargs="*", default=[])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="/tmp/calibration")
    ap.add_argument("--json", help="write every row here (JSON lines)")
    a = ap.parse_args()
    rows = []
    for name in a.only:
        for sampler in a.samplers:
            for seed in a.seeds:
                row, ref = run(a.sgmcmc, name, sampler, seed, a.set, a.out, a.threads)
                rows.append((row, ref))
                print(json.dumps(row), flush=True)
                if a.json:
                    with open(a.json, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    # the table: mean +- sd over seeds
    import statistics as st

    def ms(xs, f="%.3f"):
        xs = [x for x in xs if x is not None]
        if not xs:
            return "–"
        return (f % st.mean(xs)) + (" ± " + f % st.stdev(xs) if len(xs) > 1 else "")

    print("\n| data | N | method | cover90 | width90 | test NLL | noise sd | ΔNLL | wall s (pilot s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    done = set()
    for row, ref in rows:
        if row["name"] not in done:
            done.add(row["name"])
            t = ref["test"]
            print("| %s | %d | NUTS (%d×%d) | %.3f | %.3f | %.3f | %.3f | – | %.0f |" % (
                ref["name"], ref["n_train"], ref["chains"], ref["draws"], t["cover90"], t["width90"], t["nll"],
                ref["noise_sd_mean"], ref["seconds"]))
        key = (row["name"], row["sampler"])
        if key in done:
            continue
        done.add(key)
        rs = [r for r, _ in rows if (r["name"], r["sampler"]) == key and "error" not in r]
        print("| %s | %d | %s auto | %s | %s | %s | %s | %s | %s (%s) |" % (
            row["name"], ref["n_train"], row["sampler"], ms([r["test_cover90"] for r in rs]),
            ms([r["test_width90"] for r in rs]), ms([r["test_nll"] for r in rs]), ms([r["noise_sd"] for r in rs]),
            ms([r["d_nll"] for r in rs], "%+.3f"), ms([r["wall"] for r in rs], "%.0f"),
            ms([r["pilot_s"] for r in rs], "%.0f")))


if __name__ == "__main__":
    main()
