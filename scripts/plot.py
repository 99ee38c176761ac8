#!/usr/bin/env python3
"""Plots for sgmcmc outputs (matplotlib from Debian's python3-matplotlib).

  scripts/plot.py simulate DIR [--out FIGDIR]   figures of `sgmcmc simulate all --out DIR`
  scripts/plot.py runs RUN_DIR... --out FILE.png [--metric test_error]
                                                learning curves from the runs' metrics.csv
  scripts/plot.py curves --group LABEL=GLOB... --out FILE.png [--metric test_error] [--x epoch]
                 [--dotted METRIC] [--ylim LO,HI] [--logx]
                                                one curve per group: the mean over its runs (seeds,
                                                folds) with a min–max band; --dotted adds a second
                                                metric (e.g. sample_test_error) dotted
  scripts/plot.py traces --group LABEL=GLOB... --out FILE.png [--metrics lambda.fc1.weight,train_loss,...]
                                                one panel per metric (λ on a log scale), one line per
                                                group (mean over its runs, min–max band)
  scripts/plot.py sweep SWEEP_DIR --out FIGDIR [--param sampler.lr] [--metric val_error] [--test test_error]
                                                from `sgmcmc sweep`'s summary.csv: per part, the
                                                validation and test metric (mean ± std over seeds)
                                                against the parameter, one line per value of the
                                                other varying keys (<name>_vs_param.png), and the
                                                learning curves of every run's first seed
                                                (<name>_curves.png)
  scripts/plot.py uncertainty PREDICTIVE.pt... --out FIGDIR [--label NAME...]
                                                from `sgmcmc predict RUN --predictive P.pt` (needs
                                                python3-torch): reliability diagram (15 equal-width
                                                bins, top label, ECE in the legend), confidence
                                                histogram, and, with data.ood in the run's config,
                                                predictive-entropy histograms in- vs out-of-distribution
"""
import math
import argparse
import csv
import glob
import os
import sys
from collections import defaultdict

try:
    import matplotlib
except ImportError:
    sys.exit("plot.py: error: matplotlib is missing (Debian: apt-get install python3-matplotlib, "
             "or bash scripts/setup.sh --with-plots)")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_simulate(d, out):
    os.makedirs(out, exist_ok=True)
    made = []
    p = os.path.join(d, "fig1_density.csv")
    if os.path.exists(p):
        rows = read_csv(p)
        x = [float(r["theta"]) for r in rows]
        fig, ax = plt.subplots(figsize=(5, 3.6))
        ax.plot(x, [float(r["true"]) for r in rows], "k-", lw=2, label="true exp(-U)")
        for k, style in [("hmc", "b--"), ("sghmc", "r-"), ("naive_sghmc", "g:"), ("sgld", "m-.")]:
            ax.plot(x, [float(r[k]) for r in rows], style, label=k.replace("_", " "))
        ax.set_xlabel("θ"); ax.set_ylabel("density"); ax.set_title("U(θ) = −2θ² + θ⁴, ∇Ũ = ∇U + N(0,4)")
        ax.legend(fontsize=8); fig.tight_layout()
        f = os.path.join(out, "fig1_density.png"); fig.savefig(f, dpi=120); plt.close(fig); made.append(f)
    p = os.path.join(d, "gaussian2d_stepsizes.csv")
    if os.path.exists(p):
        rows = read_csv(p)
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
        for s, m in [("sgld", "o-"), ("sghmc", "s-")]:
            rs = [r for r in rows if r["sampler"] == s]
            axes[0].plot([float(r["autocorr_time"]) for r in rs], [float(r["cov_abs_error"]) for r in rs], m, label=s.upper())
        axes[0].set_xlabel("autocorrelation time"); axes[0].set_ylabel("mean |cov error|"); axes[0].legend()
        axes[0].set_title("5 step sizes ε")
        p2 = os.path.join(d, "gaussian2d_first50.csv")
        if os.path.exists(p2):
            rows2 = read_csv(p2)
            for s, m in [("sgld", "o-"), ("sghmc", "s-")]:
                rs = [r for r in rows2 if r["sampler"] == s]
                axes[1].plot([float(r["theta0"]) for r in rs], [float(r["theta1"]) for r in rs], m, ms=3, lw=0.7, label=s.upper())
            axes[1].set_title("first 50 samples (ε = 0.1)"); axes[1].legend(); axes[1].set_aspect("equal")
        fig.tight_layout()
        f = os.path.join(out, "gaussian2d.png"); fig.savefig(f, dpi=120); plt.close(fig); made.append(f)
    p = os.path.join(d, "double_well_kl.csv")
    if os.path.exists(p):
        rows = read_csv(p)
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        for integ, m in [("euler", "o-"), ("ssi", "s-")]:
            rs = [r for r in rows if r["integrator"] == integ]
            axes[0].loglog([float(r["h"]) for r in rs], [float(r["kl"]) for r in rs], m, label="mSGNHT-" + ("E" if integ == "euler" else "S"))
        axes[0].set_xlabel("step size h"); axes[0].set_ylabel("KL(p̂ ‖ p)"); axes[0].legend(); axes[0].set_title("double well, B = 1")
        p2 = os.path.join(d, "double_well_thermostat.csv")
        if os.path.exists(p2):
            tr = read_csv(p2)
            groups = defaultdict(list)
            for r in tr:
                groups[(r["integrator"], r["h"])].append((int(r["step"]), float(r["thermostat_mean"])))
            for (integ, h), pts in sorted(groups.items()):
                axes[1].plot([a for a, _ in pts], [b for _, b in pts], label=f"{'E' if integ == 'euler' else 'S'}, h={h}")
            axes[1].axhline(1.0, color="k", lw=0.8); axes[1].set_xlabel("step"); axes[1].set_ylabel("mean ξ"); axes[1].legend(fontsize=8)
        fig.tight_layout()
        f = os.path.join(out, "double_well.png"); fig.savefig(f, dpi=120); plt.close(fig); made.append(f)
    p = os.path.join(d, "santa_trajectories.csv")
    if os.path.exists(p):
        rows = read_csv(p)
        fig, ax = plt.subplots(figsize=(6, 3.6))
        groups = defaultdict(list)
        for r in rows:
            groups[(r["optimizer"], r["run"])].append((int(r["step"]), float(r["theta"])))
        for (opt, run), pts in sorted(groups.items()):
            ax.plot([a for a, _ in pts], [b for _, b in pts], color="r" if opt == "santa" else "b", lw=0.8,
                    label=opt if run == "0" else None)
        ax.axhline(-2.9354, color="k", ls=":", lw=0.8); ax.axhline(2.2237, color="k", ls=":", lw=0.8)
        ax.set_xlabel("step"); ax.set_ylabel("θ"); ax.legend(); ax.set_title("double well: Santa vs RMSprop")
        fig.tight_layout()
        f = os.path.join(out, "santa_double_well.png"); fig.savefig(f, dpi=120); plt.close(fig); made.append(f)
    return made


def plot_runs(run_dirs, out, metric, xkey):
    fig, ax = plt.subplots(figsize=(6, 4))
    for d in run_dirs:
        p = os.path.join(d, "metrics.csv")
        if not os.path.exists(p):
            print(f"plot.py: {p}: missing, skipped", file=sys.stderr)
            continue
        rows = [r for r in read_csv(p) if r.get(metric) not in (None, "", "nan")]
        ax.plot([float(r[xkey]) for r in rows], [float(r[metric]) for r in rows], label=os.path.basename(os.path.normpath(d)))
    ax.set_xlabel(xkey); ax.set_ylabel(metric); ax.legend(fontsize=7); fig.tight_layout()
    fig.savefig(out, dpi=120); plt.close(fig)
    return [out]


def group_curve(dirs, metric, xkey):
    """x values present in every run, with the mean, min and max of `metric` over the runs."""
    per_run = []
    for d in dirs:
        rows = read_csv(os.path.join(d, "metrics.csv"))
        per_run.append({float(r[xkey]): float(r[metric]) for r in rows if r.get(metric) not in (None, "", "nan")})
    xs = sorted(set.intersection(*(set(c) for c in per_run))) if per_run else []
    ys = [[c[x] for c in per_run] for x in xs]
    return xs, [sum(v) / len(v) for v in ys], [min(v) for v in ys], [max(v) for v in ys]


def _draw_groups(ax, groups, metric, xkey, dotted=None, band=True):
    """One line per LABEL=GLOB group on `ax`: the mean of `metric` over its runs, min–max band."""
    for i, spec in enumerate(groups):
        label, _, pattern = spec.partition("=")
        dirs = sorted(d for d in glob.glob(pattern) if os.path.exists(os.path.join(d, "metrics.csv")))
        if not dirs:
            print(f"plot.py: {pattern}: no run directories with metrics.csv", file=sys.stderr)
            continue
        color = f"C{i}"
        xs, mean, lo, hi = group_curve(dirs, metric, xkey)
        ax.plot(xs, mean, color=color, label=f"{label} (n={len(dirs)})")
        if band and len(dirs) > 1:
            ax.fill_between(xs, lo, hi, color=color, alpha=0.2, linewidth=0)
        if dotted:
            xs2, mean2, _, _ = group_curve(dirs, dotted, xkey)
            if xs2 and mean2 != mean:
                ax.plot(xs2, mean2, color=color, linestyle=":", linewidth=1)


def plot_curves(groups, out, metric, xkey, dotted=None, ylim=None, logx=False, band=True):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    _draw_groups(ax, groups, metric, xkey, dotted, band)
    ax.set_xlabel(xkey); ax.set_ylabel(metric + (f" (dotted: {dotted})" if dotted else ""))
    if ylim:
        ax.set_ylim(*ylim)
    if logx:
        ax.set_xscale("log")
    ax.grid(alpha=0.3); ax.legend(fontsize=8); fig.tight_layout()
    fig.savefig(out, dpi=120); plt.close(fig)
    return [out]


def plot_traces(groups, out, metrics, xkey):
    """One panel per metric (a λ column, train_loss, sample_test_error, val_nll, ...), log scale for λ."""
    cols = 2 if len(metrics) > 1 else 1
    rows = (len(metrics) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        _draw_groups(ax, groups, metric, xkey)
        if metric.startswith("lambda."):
            ax.set_yscale("log")
        ax.set_xlabel(xkey); ax.set_title(metric, fontsize=10); ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout(); fig.savefig(out, dpi=110); plt.close(fig)
    return [out]


def _float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _sweep_keys(rows, fields):
    """Varying-key columns of a sweep's summary.csv, from the short names in its `point` labels."""
    shorts = []
    for r in rows:
        for item in r["point"].split(" "):
            if "=" in item and item.split("=", 1)[0] not in shorts:
                shorts.append(item.split("=", 1)[0])
    cols = fields[fields.index("status") + 1:]
    keys = []
    for sh in shorts:
        for c in cols:
            if (c == sh or c.endswith("." + sh)) and c not in keys:
                keys.append(c)
                break
    return keys


def plot_sweep(d, out, param, metric, test, curve_x):
    path = os.path.join(d, "summary.csv")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = list(reader)
    name = os.path.basename(os.path.normpath(d))
    parts = []
    for r in rows:
        if r["part"] not in parts:
            parts.append(r["part"])
    os.makedirs(out, exist_ok=True)

    def metrics_for(prows):
        m, t = metric, test
        if m is None:
            m = next((c for c in ("val_error", "val_rmse") if any(_float(r.get(c)) == _float(r.get(c)) for r in prows)), "val_error")
        if t is None:
            t = "test_" + m[4:] if m.startswith("val_") else "test_error"
        return m, t

    ncol = min(len(parts), 3)
    nrow = (len(parts) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.4 * nrow), squeeze=False)
    for i, part in enumerate(parts):
        ax = axes[i // ncol][i % ncol]
        prows = [r for r in rows if r["part"] == part]
        keys = _sweep_keys(prows, fields)
        x_key = param if param in keys else next((k for k in keys if k.endswith("lr")), keys[0] if keys else None)
        m, t = metrics_for(prows)
        others = [k for k in keys if k != x_key and not all(r[k] == prows[0][k] for r in prows)]
        # Seed keys (data.split etc.) vary per seed: not series.
        others = [k for k in others if len({(r["point"], r[k]) for r in prows}) == len({r["point"] for r in prows})]
        series = defaultdict(lambda: defaultdict(list))
        for r in prows:
            lab = " ".join(f"{k.split('.')[-1]}={r[k]}" for k in others) or part or name
            series[lab][_float(r[x_key]) if x_key else 0.0].append(r)
        for j, (lab, pts) in enumerate(sorted(series.items())):
            xs = sorted(pts)
            color = f"C{j}"
            for key, style in ((m, "-o"), (t, "--s")):
                ys, es = [], []
                for x in xs:
                    vals = [_float(r.get(key)) for r in pts[x] if r["status"] == "done"]
                    vals = [v for v in vals if v == v]
                    mu = sum(vals) / len(vals) if vals else float("nan")
                    sd = math.sqrt(sum((v - mu) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
                    ys.append(mu); es.append(sd)
                ax.errorbar(xs, ys, yerr=es, fmt=style, color=color, ms=4, capsize=2,
                            label=f"{lab}: {key}" if len(series) > 1 else key)
        if x_key and all(_float(r[x_key]) > 0 for r in prows):
            ax.set_xscale("log")
        ax.set_xlabel(x_key or ""); ax.set_ylabel(f"{m} / {t}")
        ax.set_title(part or name, fontsize=10); ax.legend(fontsize=6); ax.grid(alpha=0.3)
    for k in range(len(parts), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    fig.suptitle(f"{name}: mean ± std over seeds (solid: validation, dashed: test)", fontsize=10)
    fig.tight_layout()
    f1 = os.path.join(out, f"{name}_vs_param.png"); fig.savefig(f1, dpi=110); plt.close(fig)

    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.4 * nrow), squeeze=False)
    for i, part in enumerate(parts):
        ax = axes[i // ncol][i % ncol]
        prows = [r for r in rows if r["part"] == part]
        m, t = metrics_for(prows)
        seen = set()
        for r in prows:
            if r["point"] in seen:
                continue  # first seed of each point
            seen.add(r["point"])
            p = os.path.join(d, r["run"], "metrics.csv")
            if not os.path.exists(p):
                continue
            mrows = [x for x in read_csv(p) if _float(x.get(t)) == _float(x.get(t))]
            if mrows:
                ax.plot([_float(x[curve_x]) for x in mrows], [_float(x[t]) for x in mrows], lw=1, label=r["point"])
        ax.set_xlabel(curve_x); ax.set_ylabel(t); ax.set_title(part or name, fontsize=10)
        ax.legend(fontsize=5); ax.grid(alpha=0.3)
    for k in range(len(parts), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    fig.suptitle(f"{name}: learning curves (averaged predictive after burn-in; first seed of each point)", fontsize=10)
    fig.tight_layout()
    f2 = os.path.join(out, f"{name}_curves.png"); fig.savefig(f2, dpi=110); plt.close(fig)
    return [f1, f2]


def _reliability(probs, targets, bins=15):
    conf, pred = probs.max(1)
    correct = (pred == targets).double()
    edges = [i / bins for i in range(bins + 1)]
    xs, accs, counts, ece = [], [], [], 0.0
    for b in range(bins):
        lo, hi = edges[b], edges[b + 1]
        m = (conf > lo) & (conf <= hi) if b else (conf >= lo) & (conf <= hi)
        n = int(m.sum())
        if n:
            acc, c = float(correct[m].mean()), float(conf[m].double().mean())
            ece += n / len(conf) * abs(acc - c)
            xs.append(c); accs.append(acc); counts.append(n)
    return xs, accs, counts, ece, conf


def _entropy(p):
    import torch
    p = p.double()
    return -(p * torch.where(p > 0, p.log(), torch.zeros_like(p))).sum(1)


def plot_uncertainty(files, out, labels):
    import torch
    os.makedirs(out, exist_ok=True)
    labels = labels or [os.path.basename(os.path.dirname(os.path.abspath(f))) or f for f in files]
    preds = [torch.load(f) for f in files]
    made = []
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.2))
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    for p, label in zip(preds, labels):
        if "probs" not in p or "targets" not in p:
            print(f"plot.py: {label}: no probs/targets (a classification run's predictive.pt)", file=sys.stderr)
            continue
        xs, accs, counts, ece, conf = _reliability(p["probs"], p["targets"])
        ax.plot(xs, accs, "o-", ms=3, label=f"{label} (ECE {ece:.3f})")
        bx.hist(conf.numpy(), bins=30, range=(0, 1), histtype="step", label=label)
    ax.set(xlabel="confidence (top label)", ylabel="accuracy", title="reliability", xlim=(0, 1), ylim=(0, 1))
    bx.set(xlabel="confidence", ylabel="test points", title="confidence histogram", yscale="log")
    ax.legend(fontsize=7); bx.legend(fontsize=7)
    fig.tight_layout()
    f = os.path.join(out, "reliability.png"); fig.savefig(f, dpi=120); plt.close(fig); made.append(f)
    with_ood = [(p, l) for p, l in zip(preds, labels) if "ood_probs" in p]
    if with_ood:
        fig, axs = plt.subplots(1, len(with_ood), figsize=(4.5 * len(with_ood), 3.8), squeeze=False)
        for a, (p, label) in zip(axs[0], with_ood):
            a.hist(_entropy(p["probs"]).numpy(), bins=40, alpha=0.6, density=True, label="test (in)")
            a.hist(_entropy(p["ood_probs"]).numpy(), bins=40, alpha=0.6, density=True, label="OOD")
            a.set(xlabel="predictive entropy (nats)", title=label); a.legend(fontsize=7)
        fig.tight_layout()
        f = os.path.join(out, "entropy_ood.png"); fig.savefig(f, dpi=120); plt.close(fig); made.append(f)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("simulate"); s.add_argument("dir"); s.add_argument("--out")
    r = sub.add_parser("runs"); r.add_argument("dirs", nargs="+"); r.add_argument("--out", required=True)
    r.add_argument("--metric", default="test_error"); r.add_argument("--x", default="epoch")
    c = sub.add_parser("curves"); c.add_argument("--group", action="append", required=True, help="LABEL=GLOB")
    c.add_argument("--out", required=True); c.add_argument("--metric", default="test_error")
    c.add_argument("--x", default="epoch"); c.add_argument("--dotted"); c.add_argument("--ylim")
    c.add_argument("--logx", action="store_true")
    c.add_argument("--no-band", action="store_true", help="means only (no min-max band over the runs)")
    t = sub.add_parser("traces"); t.add_argument("--group", action="append", required=True, help="LABEL=GLOB")
    t.add_argument("--out", required=True); t.add_argument("--x", default="epoch")
    t.add_argument("--metrics", default="lambda.fc1.weight,train_loss,sample_test_error,val_nll")
    w = sub.add_parser("sweep"); w.add_argument("dir"); w.add_argument("--out")
    w.add_argument("--param", default="sampler.lr"); w.add_argument("--metric"); w.add_argument("--test")
    w.add_argument("--x", default="step")
    u = sub.add_parser("uncertainty"); u.add_argument("files", nargs="+"); u.add_argument("--out", required=True)
    u.add_argument("--label", action="append")
    a = ap.parse_args()
    if a.cmd == "simulate":
        made = plot_simulate(a.dir, a.out or a.dir)
    elif a.cmd == "curves":
        ylim = tuple(float(v) for v in a.ylim.split(",")) if a.ylim else None
        made = plot_curves(a.group, a.out, a.metric, a.x, a.dotted, ylim, a.logx, not a.no_band)
    elif a.cmd == "traces":
        made = plot_traces(a.group, a.out, a.metrics.split(","), a.x)
    elif a.cmd == "uncertainty":
        made = plot_uncertainty(a.files, a.out, a.label)
    elif a.cmd == "sweep":
        made = plot_sweep(a.dir, a.out or a.dir, a.param, a.metric, a.test, a.x)
    else:
        made = plot_runs(a.dirs, a.out, a.metric, a.x)
    for f in made:
        print("wrote", f)
    if not made:
        print("plot.py: nothing to plot", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
