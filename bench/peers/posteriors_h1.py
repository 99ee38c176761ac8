#!/usr/bin/env python3
"""App. H.1 (784-100-10 sigmoid MLP, batch 500, Fashion-MNIST) by posteriors' SG-MCMC (issue 44).

As posteriors' documentation writes it: an nn.Module called through torch.func.functional_call, a
log posterior on the per-datum scale with temperature 1/N (posteriors' "log_posteriors" guide:
mean batch log-likelihood + log prior / N), and the transform's build / init / update API, updating
in place, one minibatch per update:

    log_post(theta, batch) = -mean_batch nll + log N(theta; 0, 1/lambda) / N  = -U~(theta) / N,   T = 1/N.

SGLD (posteriors.sgmcmc.sgld): theta <- theta + e grad log_post + N(0, e (2 - e beta) T)
    = theta - (e/N) grad U~ + N(0, 2 e / N); sgmcmc's lr = e / N, so e = lr N = 1e-5 * 50,000 = 0.5, beta = 0.
SGHMC (posteriors.sgmcmc.sghmc, sigma = 1):
    theta <- theta + e m;  m <- m + e grad log_post - e alpha m + N(0, e T (2 alpha - e T beta)).
    With v = e m: v <- (1 - e alpha) v - (e^2/N) grad U~ + N(0, 2 e^3 alpha / N), i.e. sgmcmc's
    v <- (1 - a) v - eta grad U~ + N(0, 2 a eta) with eta = e^2 / N and a = e alpha:
    e = sqrt(eta N) = sqrt(0.1) = 0.31623, alpha = a / e = 0.031623, beta = 0, momenta = 0 (sgmcmc's v0).
    Like BlackJAX's, posteriors' SGHMC moves theta with the momentum from before the step's gradient
    (explicit Euler), sgmcmc with the updated one (see bench/peers/blackjax_h1.py: at these settings the
    explicit order is unstable along directions with eta k > a and samples a worse predictive).
BAOA (posteriors.sgmcmc.baoa, `--sampler baoa`): posteriors' other momentum sampler, a splitting
    integrator with one gradient a step (B: m += e grad; A: theta += e/2 m; O: m <- e^{-gamma e} m +
    N(0, T (1 - e^{-2 gamma e})); A: theta += e/2 m). Same e and gamma = alpha as above, so that the
    friction per step e^{-a} and the step eta = e^2/N match sgmcmc's; a different (second-order)
    integrator with the same cost a step. Reported in the SGHMC rows.
"""
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = common.parser(__doc__.splitlines()[0])
    ap.set_defaults(sampler="sghmc")
    for act in ap._actions:
        if act.dest == "sampler":
            act.choices = ["sghmc", "sgld", "baoa"]
    a = ap.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.func import functional_call
    import posteriors
    from importlib.metadata import version

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    xtr, ytr, xte, yte = common.load(a.data)
    X, Y = torch.from_numpy(xtr).to(dev), torch.from_numpy(ytr).to(dev)
    XT = torch.from_numpy(xte).to(dev)
    N = X.shape[0]
    n = common.BATCH
    steps_per_epoch = N // n

    model = torch.nn.Sequential(torch.nn.Linear(784, common.HIDDEN), torch.nn.Sigmoid(),
                                torch.nn.Linear(common.HIDDEN, 10)).to(dev)
    params = {k: torch.from_numpy(v).to(dev) for k, v in common.init_params(a.seed).items()}
    prior_sd = common.PRIOR_PRECISION ** -0.5

    def log_posterior(p, batch):
        x, y = batch
        logits = functional_call(model, p, (x,))
        log_lik = -F.cross_entropy(logits, y)   # mean over the batch
        log_prior = posteriors.diag_normal_log_prob(p, sd_diag=prior_sd, normalize=False)
        return log_lik + log_prior / N, logits

    if a.sampler == "sgld":
        e = common.SGLD_LR * N
        transform = posteriors.sgmcmc.sgld.build(log_posterior, lr=e, beta=0.0, temperature=1.0 / N)
        settings = f"posteriors.sgmcmc.sgld, lr = sgmcmc lr * N = {e:g}, beta = 0, temperature = 1/N, per-datum log posterior"
        position = lambda s: s.params
    else:
        e = (common.ETA * N) ** 0.5
        alpha = common.ALPHA / e
        if a.sampler == "sghmc":
            transform = posteriors.sgmcmc.sghmc.build(log_posterior, lr=e, alpha=alpha, beta=0.0, sigma=1.0,
                                                      temperature=1.0 / N, momenta=0.0)
        else:
            transform = posteriors.sgmcmc.baoa.build(log_posterior, lr=e, alpha=alpha, sigma=1.0,
                                                     temperature=1.0 / N, momenta=0.0)
        settings = (f"posteriors.sgmcmc.{a.sampler}, lr = sqrt(eta N) = {e:.5g}, alpha = a / lr = {alpha:.5g}"
                    f"{', beta = 0' if a.sampler == 'sghmc' else ''}, sigma = 1, temperature = 1/N, momenta = 0, "
                    f"per-datum log posterior")
        position = lambda s: s.params

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    state = transform.init(params)
    sync()
    compile_seconds = time.perf_counter() - t0

    clock, pred = common.Clock(), common.Predictive(yte)

    def one_epoch():
        nonlocal state
        order = torch.randperm(N, device=dev)
        for b in range(steps_per_epoch):
            idx = order[b * n:(b + 1) * n]
            state, _ = transform.update(state, (X[idx], Y[idx]), inplace=True)
        sync()

    for ep in range(1, a.epochs + 1):
        clock.run(one_epoch)
        if not a.no_eval and ep > a.burn_in:
            t1 = time.perf_counter()
            with torch.no_grad():
                pred.add(torch.softmax(functional_call(model, position(state), (XT,)), 1).cpu().numpy())
            pred.seconds += time.perf_counter() - t1
    peer = "posteriors" if a.sampler != "baoa" else "posteriors-baoa"
    a.sampler = "sghmc" if a.sampler == "baoa" else a.sampler
    common.report(peer, f"posteriors {version('posteriors')}, torch {torch.__version__}, "
                  f"tensordict {version('tensordict')}", settings, a, clock, pred, a.epochs * steps_per_epoch,
                  compile_seconds, {"torch_threads": torch.get_num_threads()})


if __name__ == "__main__":
    main()
