"""NUTS references for the known-noise regressions of docs/calibration.md (the gold standard).

For each data set: the data drawn from a known function plus Gaussian noise (seeded numpy), the
same model and prior sgmcmc samples (a tanh MLP with one hidden layer, every weight and bias
N(0, 1), y ~ N(f(x), 1/tau), tau ~ Gamma(alpha, beta) by rate), sampled by NumPyro's NUTS, and
the posterior predictive scored as sgmcmc scores it (src/metrics/predictive_metrics.cpp): the
mixture NLL log mean_s N(y; f_s, 1/tau_s), and central intervals mean +- z*sd with
sd^2 = Var_s f_s + E_s 1/tau_s.

Writes bench/nuts/data/NAME.npz (train / val / test) and bench/nuts/NAME.json (the reference).
Run in a virtual environment with numpyro (scripts/nuts_venv.sh makes one):
  .venv-nuts/bin/python bench/nuts/reference.py [--only NAME] [--chains 4 --warmup 1000 --draws 1000]
bench/nuts/to_pt.py then writes the .pt files sgmcmc reads (Debian's torch).
"""
import argparse
import json
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name: inputs, train rows, noise sd, the function, how x is drawn
DATASETS = {
    "sine3": dict(d=3, n=800, sd=0.3, seed=11,
                  f=lambda x: np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] - 0.3 * x[:, 2] ** 2,
                  x=lambda r, n: r.normal(size=(n, 3))),
    "wave1": dict(d=1, n=200, sd=0.1, seed=12,
                  f=lambda x: x[:, 0] * np.sin(2 * x[:, 0]),
                  x=lambda r, n: r.uniform(-2, 2, size=(n, 1))),
    "friedman5": dict(d=5, n=2000, sd=0.5, seed=13,
                      f=lambda x: np.sin(np.pi * x[:, 0] * x[:, 1]) + 2 * (x[:, 2] - 0.5) ** 2 + x[:, 3] + 0.5 * x[:, 4],
                      x=lambda r, n: r.uniform(0, 1, size=(n, 5))),
}
HIDDEN = 16
NOISE_ALPHA, NOISE_BETA = 1.0, 1.0
N_VAL, N_TEST = 200, 1000
Z50, Z90 = 0.6744897501960817, 1.6448536269514722


def make_data(name):
    s = DATASETS[name]
    r = np.random.default_rng(s["seed"])
    out = {}
    for split, n in (("train", s["n"]), ("val", N_VAL), ("test", N_TEST)):
        x = s["x"](r, n)
        y = s["f"](x) + s["sd"] * r.normal(size=n)
        out["x_" + split], out["y_" + split] = x.astype(np.float32), y.astype(np.float32)
    return out


def score(f, tau, y):
    """f: [S, n] predictive means per draw, tau: [S]; y: [n]. sgmcmc's metrics of the averaged predictive."""
    f = f.astype(np.float64)
    tau = tau.astype(np.float64)
    y = y.astype(np.float64)
    mean = f.mean(0)
    sd = np.sqrt(np.maximum(f.var(0) + (1 / tau).mean(), 0))
    ld = -0.5 * tau[:, None] * (f - y) ** 2 + 0.5 * np.log(tau[:, None] / (2 * np.pi))
    m = ld.max(0)
    nll = -(m + np.log(np.exp(ld - m).mean(0)))
    res = np.abs(mean - y)
    return {"rmse": float(np.sqrt((res ** 2).mean())), "nll": float(nll.mean()),
            "cover50": float((res <= Z50 * sd).mean()), "cover90": float((res <= Z90 * sd).mean()),
            "width50": float(2 * Z50 * sd.mean()), "width90": float(2 * Z90 * sd.mean())}


def run_nuts(name, data, chains, warmup, draws, seed):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.diagnostics import split_gelman_rubin
    from numpyro.infer import MCMC, NUTS

    d = data["x_train"].shape[1]

    def model(x, y=None):
        w1 = numpyro.sample("w1", dist.Normal(0, 1).expand([d, HIDDEN]).to_event(2))
        b1 = numpyro.sample("b1", dist.Normal(0, 1).expand([HIDDEN]).to_event(1))
        w2 = numpyro.sample("w2", dist.Normal(0, 1).expand([HIDDEN]).to_event(1))
        b2 = numpyro.sample("b2", dist.Normal(0, 1))
        tau = numpyro.sample("tau", dist.Gamma(NOISE_ALPHA, NOISE_BETA))
        f = jnp.tanh(x @ w1 + b1) @ w2 + b2
        numpyro.sample("y", dist.Normal(f, 1 / jnp.sqrt(tau)), obs=y)

    t0 = time.time()
    mcmc = MCMC(NUTS(model, target_accept_prob=0.9), num_warmup=warmup, num_samples=draws, num_chains=chains,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), jnp.asarray(data["x_train"]), jnp.asarray(data["y_train"]))
    seconds = time.time() - t0
    p = mcmc.get_samples(group_by_chain=True)

    def predict(x):
        h = np.tanh(np.einsum("nd,csdh->csnh", x, np.asarray(p["w1"])) + np.asarray(p["b1"])[:, :, None, :])
        return np.einsum("csnh,csh->csn", h, np.asarray(p["w2"])) + np.asarray(p["b2"])[:, :, None]

    ref = {"name": name, "chains": chains, "warmup": warmup, "draws": draws, "seconds": round(seconds, 1),
           "hidden": HIDDEN, "activation": "tanh", "prior_precision": 1.0, "noise_alpha": NOISE_ALPHA,
           "noise_beta": NOISE_BETA, "true_noise_sd": DATASETS[name]["sd"], "n_train": int(data["x_train"].shape[0])}
    tau = np.asarray(p["tau"])  # [C, S]
    ref["noise_sd_mean"] = float((1 / np.sqrt(tau)).mean())
    ref["tau_mean"], ref["tau_sd"] = float(tau.mean()), float(tau.std())
    ref["rhat_tau"] = float(split_gelman_rubin(tau))
    extra = mcmc.get_extra_fields()
    ref["divergences"] = int(np.asarray(extra["diverging"]).sum())
    for split in ("val", "test"):
        f = predict(data["x_" + split])  # [C, S, n]
        ref[split] = score(f.reshape(-1, f.shape[-1]), tau.reshape(-1), data["y_" + split])
        ref[split]["rhat_mean_max"] = float(np.max(split_gelman_rubin(f)))
        per_chain = [score(f[c], tau[c], data["y_" + split]) for c in range(chains)]
        ref[split]["per_chain_nll"] = [round(q["nll"], 4) for q in per_chain]
        ref[split]["per_chain_cover90"] = [round(q["cover90"], 4) for q in per_chain]
    # the test points' predictive mean and sd, for pointwise comparisons
    f = predict(data["x_test"]).reshape(-1, data["x_test"].shape[0])
    ref["test_mean"] = [round(float(v), 5) for v in f.mean(0)]
    ref["test_sd"] = [round(float(v), 5) for v in np.sqrt(f.var(0) + (1 / tau.reshape(-1)).mean())]
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=list(DATASETS))
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-only", action="store_true", help="write the data sets, run no NUTS")
    a = ap.parse_args()
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    for name in a.only:
        data = make_data(name)
        np.savez(os.path.join(HERE, "data", name + ".npz"), **data)
        if a.data_only:
            continue
        ref = run_nuts(name, data, a.chains, a.warmup, a.draws, a.seed)
        ref["command"] = "bench/nuts/reference.py --only %s --chains %d --warmup %d --draws %d --seed %d" % (
            name, a.chains, a.warmup, a.draws, a.seed)
        with open(os.path.join(HERE, name + ".json"), "w") as fh:
            json.dump(ref, fh, indent=1)
        print(name, {k: ref[k] for k in ("seconds", "noise_sd_mean", "divergences")}, "test", {
            k: round(v, 4) for k, v in ref["test"].items() if not isinstance(v, list)}, flush=True)


if __name__ == "__main__":
    main()
