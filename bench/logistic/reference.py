"""The NUTS reference for Bayesian logistic regression on a real binary set (docs/logistic_regression.md).

Data: the Wisconsin diagnostic breast cancer set as Debian's python3-sklearn ships it
(/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv: 569 rows, 30 features,
labels 0 malignant / 1 benign). Features standardized over all rows, rows split 80/20 by a seeded
permutation (numpy default_rng(0)), written as LIBSVM text (6 significant digits), which sgmcmc reads
(data.format: libsvm): bench/logistic/data/breast_cancer_{train,test}.libsvm.

Model (002 §5.1's prior): w ~ N(0, 10) per feature, b ~ N(0, 10), y ~ Bernoulli(sigmoid(w.x + b)),
on the training rows as written. NumPyro's NUTS, 4 chains x 2,000 draws after 1,000 warm-up.
Writes bench/logistic/breast_cancer_nuts.json: the posterior mean and sd of every weight and the
bias, R-hat, and the posterior predictive's test accuracy and NLL.

  .venv-nuts/bin/python bench/logistic/reference.py [--csv PATH]
"""
import argparse
import json
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN_CSV = "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv"
PRIOR_VAR = 10.0


def write_libsvm(path, x, y):
    with open(path, "w") as f:
        for xi, yi in zip(x, y):
            f.write(str(int(yi)) + " " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(xi)) + "\n")


def read_libsvm(path, d):
    xs, ys = [], []
    for line in open(path):
        t = line.split()
        row = np.zeros(d)
        for e in t[1:]:
            j, v = e.split(":")
            row[int(j) - 1] = float(v)
        xs.append(row)
        ys.append(int(t[0]))
    return np.array(xs), np.array(ys)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default=DEBIAN_CSV)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=2000)
    a = ap.parse_args()
    raw = np.loadtxt(a.csv, delimiter=",", skiprows=1)
    x, y = raw[:, :-1], raw[:, -1].astype(int)
    x = (x - x.mean(0)) / x.std(0)
    perm = np.random.default_rng(0).permutation(len(y))
    n_test = round(0.2 * len(y))
    test, train = perm[:n_test], perm[n_test:]
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    files = {s: os.path.join(HERE, "data", f"breast_cancer_{s}.libsvm") for s in ("train", "test")}
    write_libsvm(files["train"], x[train], y[train])
    write_libsvm(files["test"], x[test], y[test])
    d = x.shape[1]
    xtr, ytr = read_libsvm(files["train"], d)
    xte, yte = read_libsvm(files["test"], d)

    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS
    numpyro.set_host_device_count(a.chains)
    jax.config.update("jax_enable_x64", True)

    def model(X, Y):
        w = numpyro.sample("w", dist.Normal(0, np.sqrt(PRIOR_VAR)).expand([X.shape[1]]))
        b = numpyro.sample("b", dist.Normal(0, np.sqrt(PRIOR_VAR)))
        numpyro.sample("y", dist.Bernoulli(logits=X @ w + b), obs=Y)

    t0 = time.time()
    mcmc = MCMC(NUTS(model, target_accept_prob=0.9), num_warmup=a.warmup, num_samples=a.draws,
                num_chains=a.chains, chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), jnp.array(xtr), jnp.array(ytr))
    seconds = time.time() - t0
    s = mcmc.get_samples(group_by_chain=True)
    from numpyro.diagnostics import split_gelman_rubin
    w, b = np.asarray(s["w"]), np.asarray(s["b"])
    rhat = max(float(np.max(split_gelman_rubin(w))), float(split_gelman_rubin(b)))
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    wf, bf = w.reshape(-1, d), b.reshape(-1)
    p = 1 / (1 + np.exp(-(xte @ wf.T + bf)))  # [n_test, S]
    pbar = p.mean(1)
    ref = {
        "command": "bench/logistic/reference.py (NumPyro NUTS, %d chains x %d draws after %d warm-up)"
                   % (a.chains, a.draws, a.warmup),
        "prior_variance": PRIOR_VAR, "train_rows": int(len(ytr)), "test_rows": int(len(yte)), "features": d,
        "weight_mean": wf.mean(0).tolist(), "weight_sd": wf.std(0).tolist(),
        "bias_mean": float(bf.mean()), "bias_sd": float(bf.std()),
        "rhat_max": rhat, "divergences": divergences, "seconds": seconds,
        "test_accuracy": float(((pbar > 0.5) == yte).mean()),
        "test_nll": float(-np.mean(np.log(np.where(yte == 1, pbar, 1 - pbar)))),
    }
    with open(os.path.join(HERE, "breast_cancer_nuts.json"), "w") as f:
        json.dump(ref, f, indent=1)
    print(json.dumps({k: v for k, v in ref.items() if not isinstance(v, list)}, indent=1))


if __name__ == "__main__":
    main()
