#!/usr/bin/env python3
"""Plain PyTorch-Python reference loop for BPMF by SGHMC (000 §4.3, App. H.2).

The same work per step as `sgmcmc train configs/movielens_small_sghmc.yaml --set data.fold=0`: a
minibatch of ratings (indices shuffled each epoch), yhat = U_i.V_j + a_i + b_j + mu,
U~ = (N/n) * tau/2 * sum (y - yhat)^2 + sum_g lambda_g |theta_g|^2 / 2, backward (dense gradients:
the prior term touches every row), SGHMC Euler on U, V, a, b; a Gibbs step for the lambdas every
`gibbs` steps; every `eval` steps after burn-in the prediction on the held-out ratings is added to a
running average and its RMSE computed. Ratings file: user::item::rating::timestamp.

    ref_bpmf.py --ratings ../shared/data/movielens-small/ratings.dat --steps 2000 --threads 2
prints one JSON line: steps, wall_seconds, steps_per_second, ratings_per_second, test_rmse.
"""
import argparse, json, math, time

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ratings", default="../shared/data/movielens-small/ratings.dat")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=4000)
    ap.add_argument("--dim", type=int, default=20)
    ap.add_argument("--gibbs", type=int, default=2000)
    ap.add_argument("--eval", type=int, default=2000)
    ap.add_argument("--burn-in", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)

    users, items, vals = [], [], []
    with open(a.ratings) as f:
        for line in f:
            u, i, r = line.split("::")[:3]
            users.append(int(u)); items.append(int(i)); vals.append(float(r))
    _, uidx = np.unique(np.array(users), return_inverse=True)
    _, iidx = np.unique(np.array(items), return_inverse=True)
    y = np.array(vals, dtype=np.float32)
    perm = np.random.RandomState(0).permutation(len(y))
    nt = len(y) // 5
    test, train = perm[:nt], perm[nt:]
    T = lambda x, dt: torch.tensor(x, dtype=dt, device=dev)
    ut, it, yt = T(uidx[train], torch.int64), T(iidx[train], torch.int64), T(y[train], torch.float32)
    ue, ie, ye = T(uidx[test], torch.int64), T(iidx[test], torch.int64), T(y[test], torch.float32)
    nu, ni, N = int(uidx.max()) + 1, int(iidx.max()) + 1, len(train)
    mu = float(yt.mean())

    g = torch.Generator(device=dev); g.manual_seed(1)
    U = (torch.randn(nu, a.dim, device=dev, generator=g) * 0.1).requires_grad_()
    V = (torch.randn(ni, a.dim, device=dev, generator=g) * 0.1).requires_grad_()
    A = torch.zeros(nu, device=dev, requires_grad=True)
    B = torch.zeros(ni, device=dev, requires_grad=True)
    params = [U, V, A, B]
    lam = [torch.ones((), device=dev) for _ in params]
    mom = [torch.zeros_like(p) for p in params]
    tau, eta, alpha = 2.0, 6.4e-5, 0.05
    sd = math.sqrt(2 * alpha * eta)
    pred_sum = torch.zeros_like(ye)
    samples, rmse = 0, float("nan")
    order, pos = torch.randperm(N, device=dev), 0

    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for step in range(1, a.steps + 1):
        if pos + a.batch > N:
            order, pos = torch.randperm(N, device=dev), 0
        idx = order[pos:pos + a.batch]; pos += a.batch
        u, i, r = ut[idx], it[idx], yt[idx]
        yhat = (U[u] * V[i]).sum(1) + A[u] + B[i] + mu
        nll = 0.5 * tau * ((r - yhat) ** 2).sum()
        prior = sum(0.5 * lg * (p * p).sum() for lg, p in zip(lam, params))
        loss = nll * (N / a.batch) + prior
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p, m in zip(params, mom):
                m.mul_(1 - alpha).add_(p.grad, alpha=-eta).add_(torch.randn_like(m), alpha=sd)
                p.add_(m)
            if step % a.gibbs == 0:
                for k, p in enumerate(params):
                    lam[k] = torch.distributions.Gamma(torch.tensor(1.0 + 0.5 * p.numel(), device=dev),
                                                       1.0 + 0.5 * (p * p).sum()).sample()
            if step % a.eval == 0 and step > a.burn_in:
                pe = ((U[ue] * V[ie]).sum(1) + A[ue] + B[ie] + mu).clamp(0.5, 5.0)
                pred_sum += pe; samples += 1
                rmse = ((pred_sum / samples - ye) ** 2).mean().sqrt().item()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    print(json.dumps({"bench": "bpmf_python", "threads": a.threads, "steps": a.steps, "wall_seconds": wall,
                      "steps_per_second": a.steps / wall, "ratings_per_second": a.steps * a.batch / wall,
                      "test_rmse": rmse}))


if __name__ == "__main__":
    main()
