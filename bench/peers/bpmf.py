#!/usr/bin/env python3
"""BPMF (000 §4.3, App. H.2) on movielens-small by SGHMC, written for a peer (issue 44).

The workload of `sgmcmc train configs/movielens_small_sghmc.yaml --set data.fold=0 --set
prior.hyperprior=none`: fold 0 of 5 (the same split: sgmcmc's seeded_permutation, std::mt19937_64(0)
Fisher-Yates, reproduced below), ids densely re-indexed, d = 20, U, V ~ N(0, 0.1^2), a = b = 0,
mu = the training ratings' mean, yhat = U_u . V_i + a_u + b_i + mu, tau = 2,
U~ = (N/n) tau/2 sum_batch (r - yhat)^2 + sum |theta|^2 / 2 (lambda = 1 fixed), batch 4,000 ratings from
a permutation per epoch (remainder dropped), SGHMC eta = 6.4e-5, a = 0.05 (Euler, sgmcmc's order),
one sample every --thin steps after --burn-in steps; test RMSE of the averaged prediction, clipped to
[0.5, 5] (the file's rating range).

--peer jax:        BlackJAX's grad_estimator (a per-rating log-likelihood, vmapped: JAX gathers the rows
                   and scatter-adds their gradients), the steps as a lax.scan under jit; --order explicit
                   uses blackjax.sgmcmc.diffusions.sghmc (position first), --order sgmcmc the same step in
                   sgmcmc's order (h = sqrt(eta), alpha = a / h as in blackjax_h1.py).
--peer posteriors: posteriors.sgmcmc.sghmc (--order explicit) or baoa (--order baoa) on a params dict,
                   log posterior per datum (-tau/2 mean (r - yhat)^2 + log prior / N), temperature 1/N,
                   lr = sqrt(eta N), alpha = a / lr (as in posteriors_h1.py); torch.func computes the gradient.
--peer torch:      the eager PyTorch loop (bench/ref_bpmf.py's step) in sgmcmc's parametrisation.
Prints one JSON line like the H.1 scripts (steps/s over the stepping alone).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ETA, ALPHA, TAU, D, BATCH = 6.4e-5, 0.05, 2.0, 20, 4000


def mt19937_64(seed):
    """std::mt19937_64, one 64-bit output per call."""
    n, m, mask = 312, 156, (1 << 64) - 1
    mt = [0] * n
    mt[0] = seed & mask
    for i in range(1, n):
        mt[i] = (6364136223846793005 * (mt[i - 1] ^ (mt[i - 1] >> 62)) + i) & mask
    idx = n
    upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def gen():
        nonlocal idx
        if idx >= n:
            for i in range(n):
                x = (mt[i] & upper) | (mt[(i + 1) % n] & lower)
                xa = x >> 1
                if x & 1:
                    xa ^= 0xB5026F5AA96619E9
                mt[i] = mt[(i + m) % n] ^ xa
            idx = 0
        y = mt[idx]
        idx += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & mask
    return gen


def seeded_permutation(n, seed):
    """src/data/kfold.cpp's seeded_permutation (Fisher-Yates with Lemire's unbiased bounded draw)."""
    rng = mt19937_64(seed)
    perm = list(range(n))
    mask = (1 << 64) - 1
    for i in range(n - 1, 0, -1):
        rng_range = i + 1
        threshold = ((mask + 1) - rng_range) % rng_range
        while True:
            x = rng()
            if x >= threshold:
                j = x % rng_range
                break
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


def load(path, folds=5, fold=0, split_seed=0):
    users, items, vals = [], [], []
    with open(path) as f:
        for line in f:
            u, i, r = line.split("::")[:3]
            users.append(int(u)); items.append(int(i)); vals.append(float(r))
    _, uidx = np.unique(np.array(users), return_inverse=True)
    _, iidx = np.unique(np.array(items), return_inverse=True)
    y = np.array(vals, dtype=np.float32)
    n = len(y)
    perm = seeded_permutation(n, split_seed)
    lo, hi = fold * n // folds, (fold + 1) * n // folds
    test = np.sort(perm[lo:hi])
    train = np.sort(np.concatenate([perm[:lo], perm[hi:]]))
    return (uidx[train].astype(np.int32), iidx[train].astype(np.int32), y[train], uidx[test].astype(np.int32),
            iidx[test].astype(np.int32), y[test], int(uidx.max()) + 1, int(iidx.max()) + 1,
            float(y.min()), float(y.max()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", choices=["jax", "posteriors", "torch"], required=True)
    ap.add_argument("--order", choices=["explicit", "sgmcmc", "baoa"], default="sgmcmc")
    ap.add_argument("--ratings", default=os.environ.get("RATINGS", "../shared/data/movielens-small/ratings.dat"))
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--burn-in", type=int, default=2000)
    ap.add_argument("--thin", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    ut, it, yt, ue, ie, ye, nu, ni, lo_r, hi_r = load(a.ratings)
    N = len(yt)
    mu = float(yt.astype(np.float64).mean())
    spe = N // BATCH
    r = np.random.RandomState(a.seed)
    init = {"U": (r.randn(nu, D) * 0.1).astype(np.float32), "V": (r.randn(ni, D) * 0.1).astype(np.float32),
            "a": np.zeros(nu, np.float32), "b": np.zeros(ni, np.float32)}
    pred_sum = np.zeros(len(ye), np.float64)
    samples = 0
    step_seconds = 0.0
    compile_seconds = 0.0

    if a.peer == "jax":
        if a.device == "cpu":
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        import blackjax
        from blackjax.sgmcmc.diffusions import sghmc as sghmc_integrator
        from blackjax.sgmcmc.gradients import grad_estimator
        from blackjax.util import generate_gaussian_noise
        data = tuple(jnp.asarray(v) for v in (ut, it, yt))

        def loglik(p, datum):
            u, i, y = datum
            yhat = p["U"][u] @ p["V"][i] + p["a"][u] + p["b"][i] + mu
            return -0.5 * TAU * (y - yhat) ** 2

        def logprior(p):
            return -0.5 * sum(jnp.sum(v * v) for v in jax.tree.leaves(p))
        grad_fn = grad_estimator(logprior, loglik, N)
        h = ETA ** 0.5
        alpha = ALPHA / h
        integ = sghmc_integrator(alpha=alpha, beta=0.0)
        noise_sd = (2 * alpha * h) ** 0.5

        def one_step(state, batch, key):
            pos, mom = state
            g = grad_fn(pos, batch)
            if a.order == "explicit":
                return integ(key, pos, mom, g, h, 1.0)
            z = generate_gaussian_noise(key, pos)
            mom = jax.tree.map(lambda p, g, z: (1 - alpha * h) * p + h * g + noise_sd * z, mom, g, z)
            return jax.tree.map(lambda x, p: x + h * p, pos, mom), mom

        @jax.jit
        def chunk(state, key, data):  # `thin` steps from one epoch's permutation at offset `off`
            kperm, key = jax.random.split(key)
            idx = jax.random.permutation(kperm, N)[: spe * BATCH].reshape(spe, BATCH)
            keys = jax.random.split(key, spe)

            def body(s, inp):
                i, k = inp
                return one_step(s, tuple(d[i] for d in data), k), None
            return jax.lax.scan(body, state, (idx, keys))[0]
        predict = jax.jit(lambda p: jnp.sum(p["U"][ue] * p["V"][ie], 1) + p["a"][ue] + p["b"][ie] + mu)
        params = {k: jnp.asarray(v) for k, v in init.items()}
        state = (params, jax.tree.map(jnp.zeros_like, params))
        key = jax.random.key(a.seed)
        t0 = time.perf_counter()
        compiled = chunk.lower(state, key, data).compile()
        compile_seconds = time.perf_counter() - t0
        # one jitted call = one epoch (spe steps); samples every `thin` steps need thin | spe or the
        # sample taken at epoch ends: thin is rounded to whole epochs here (20 steps an epoch = thin 20)
        assert a.thin % spe == 0 or spe % a.thin == 0
        done = 0
        while done < a.steps:
            key, k = jax.random.split(key)
            t0 = time.perf_counter()
            state = jax.block_until_ready(compiled(state, k, data))
            step_seconds += time.perf_counter() - t0
            done += spe
            if done > a.burn_in and done % a.thin == 0:
                pred_sum += np.asarray(predict(state[0]), dtype=np.float64); samples += 1
        steps = done
        version = f"blackjax {blackjax.__version__}, jax {jax.__version__}"
        settings = (f"blackjax grad_estimator (vmapped per-rating log-likelihood), epoch = lax.scan under jit, "
                    f"{'blackjax.sgmcmc.diffusions.sghmc' if a.order == 'explicit' else 'sgmcmc step order'}, "
                    f"h = sqrt(eta) = {h:.4g}, alpha = a/h = {alpha:.4g}")
    else:
        import torch
        torch.set_num_threads(a.threads)
        torch.manual_seed(a.seed)
        dev = torch.device(a.device)
        T = lambda v, dt=None: torch.as_tensor(v, device=dev, dtype=dt)
        U_t, I_t, Y_t = T(ut, torch.int64), T(it, torch.int64), T(yt)
        UE, IE = T(ue, torch.int64), T(ie, torch.int64)
        params = {k: T(v).clone() for k, v in init.items()}

        def predict(p):
            return (p["U"][UE] * p["V"][IE]).sum(1) + p["a"][UE] + p["b"][IE] + mu
        if a.peer == "posteriors":
            import warnings
            warnings.filterwarnings("ignore", category=FutureWarning)
            import posteriors
            from importlib.metadata import version as v_

            def log_posterior(p, batch):
                u, i, y = batch
                yhat = (p["U"][u] * p["V"][i]).sum(1) + p["a"][u] + p["b"][i] + mu
                ll = -0.5 * TAU * ((y - yhat) ** 2).mean()
                return ll + posteriors.diag_normal_log_prob(p, sd_diag=1.0, normalize=False) / N, yhat
            e = (ETA * N) ** 0.5
            alpha = ALPHA / e
            if a.order == "baoa":
                tr = posteriors.sgmcmc.baoa.build(log_posterior, lr=e, alpha=alpha, temperature=1.0 / N, momenta=0.0)
            else:
                tr = posteriors.sgmcmc.sghmc.build(log_posterior, lr=e, alpha=alpha, beta=0.0, temperature=1.0 / N,
                                                   momenta=0.0)
            state = tr.init(params)

            def step(idx):
                nonlocal state
                state, _ = tr.update(state, (U_t[idx], I_t[idx], Y_t[idx]), inplace=True)
            cur = lambda: state.params
            version = f"posteriors {v_('posteriors')}, torch {torch.__version__}"
            settings = (f"posteriors.sgmcmc.{'baoa' if a.order == 'baoa' else 'sghmc'}, lr = sqrt(eta N) = {e:.4g}, "
                        f"alpha = a/lr = {alpha:.4g}, temperature = 1/N, momenta = 0")
        else:
            ps = [params[k].requires_grad_() for k in ("U", "V", "a", "b")]
            vs = [torch.zeros_like(p) for p in ps]
            sd = math.sqrt(2 * ALPHA * ETA)

            def step(idx):
                u, i, y = U_t[idx], I_t[idx], Y_t[idx]
                yhat = (ps[0][u] * ps[1][i]).sum(1) + ps[2][u] + ps[3][i] + mu
                loss = 0.5 * TAU * ((y - yhat) ** 2).sum() * (N / BATCH) + sum(0.5 * (p * p).sum() for p in ps)
                for p in ps:
                    p.grad = None
                loss.backward()
                with torch.no_grad():
                    for p, v in zip(ps, vs):
                        v.mul_(1 - ALPHA).add_(p.grad, alpha=-ETA).add_(torch.randn_like(v), alpha=sd)
                        p.add_(v)
            cur = lambda: params
            version = f"torch {torch.__version__}"
            settings = f"eager loop, sgmcmc's parametrisation eta = {ETA:g}, a = {ALPHA:g}"
        done = 0
        while done < a.steps:
            order = torch.randperm(N, device=dev)
            t0 = time.perf_counter()
            for b in range(spe):
                step(order[b * BATCH:(b + 1) * BATCH])
            if dev.type == "cuda":
                torch.cuda.synchronize()
            step_seconds += time.perf_counter() - t0
            done += spe
            if done > a.burn_in and done % a.thin == 0:
                with torch.no_grad():
                    pred_sum += predict(cur()).double().cpu().numpy(); samples += 1
        steps = done
    f = np.clip(pred_sum / max(samples, 1), lo_r, hi_r)
    rmse = float(np.sqrt(np.mean((f - ye.astype(np.float64)) ** 2)))
    print(json.dumps({"peer": f"{a.peer}-bpmf-{a.order}", "version": version, "sampler": "sghmc", "settings": settings,
                      "seed": a.seed, "threads": a.threads, "device": a.device, "steps": steps, "batch": BATCH,
                      "train_ratings": N, "step_seconds": step_seconds, "steps_per_second": steps / step_seconds,
                      "compile_seconds": compile_seconds, "samples": samples, "test_rmse": rmse}), flush=True)


if __name__ == "__main__":
    main()
