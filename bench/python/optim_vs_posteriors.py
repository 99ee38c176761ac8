#!/usr/bin/env python3
"""sgmcmc.SGHMC in a Python loop against posteriors' SGHMC, on the same torch (issue 45's targets).

Two measurements, each a fresh process per (implementation, round), rounds interleaved by
bench/python/run.sh:

  step   one SGHMC iteration over P float32 parameters (default 10M, ten tensors of 1M): the
         gradient of the same log density (a standard Gaussian, ∇Ũ = θ) by autograd, then the
         update. sgmcmc: zero_grad, backward, opt.step() (one fused C++ loop over the flat buffer,
         Philox noise inside). posteriors: sghmc.build(...).update(state, batch, inplace=True),
         whose torch.func.grad_and_value computes the same gradient and whose tree maps do the update
         in ATen ops. Also reported: the update alone, sgmcmc's opt.step() (the gradient already in
         .grad) against posteriors' update less its gradient call timed on its own.
  epoch  one epoch of App. H.1 in a Python loop (784-100-10 sigmoid MLP, batch 500, Fashion-MNIST's
         first 50,000 training images resident): sgmcmc: an nn.Module, (N · cross-entropy).backward(),
         sgmcmc.SGHMC(lr 2e-6, α 0.01, prior_precision 1); posteriors: the same module through
         torch.func.functional_call with posteriors' per-datum log posterior (bench/peers/posteriors_h1.py's
         mapping: e = sqrt(ηN), alpha = a/e, T = 1/N).

Prints one JSON line: {"impl", "what", "seconds" (median of --reps), "min", "max", "torch", ...}.
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import time
import warnings

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--impl", choices=["sgmcmc", "posteriors"], required=True)
ap.add_argument("--what", choices=["step", "epoch"], required=True)
ap.add_argument("--params", type=int, default=10_000_000)
ap.add_argument("--tensors", type=int, default=10)
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
warnings.filterwarnings("ignore", category=FutureWarning)


def idx(name):
    with gzip.open(os.path.join(a.data, name), "rb") as f:
        raw = f.read()
    dims = struct.unpack(">I", raw[:4])[0] & 0xFF
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(raw[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def timed(fn, reps):
    fn()  # warm-up
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


extra = {}
if a.what == "step":
    per = a.params // a.tensors
    if a.impl == "sgmcmc":
        import sgmcmc
        params = [torch.randn(per, requires_grad=True) for _ in range(a.tensors)]
        opt = sgmcmc.SGHMC(params, lr=1e-3, alpha=0.01, seed=1)

        def iteration():
            opt.zero_grad()
            sum(0.5 * (p * p).sum() for p in params).backward()
            opt.step()
        times = timed(iteration, a.reps)
        extra["step_only_seconds"] = statistics.median(timed(opt.step, a.reps))
    else:
        import posteriors
        params = {f"p{i}": torch.randn(per) for i in range(a.tensors)}

        def log_post(p, batch):
            return -sum(0.5 * (t * t).sum() for t in p.values()), torch.tensor([])
        transform = posteriors.sgmcmc.sghmc.build(log_post, lr=0.0316, alpha=0.316, temperature=1.0)
        state = transform.init(params)
        times = timed(lambda: transform.update(state, None, inplace=True), a.reps)
        # the gradient its update computes first (the same torch.func call), to isolate the update
        from torch.func import grad_and_value

        def gradient():
            with torch.no_grad():
                grad_and_value(log_post, has_aux=True)(state.params, None)
        extra["gradient_seconds"] = statistics.median(timed(gradient, a.reps))
        extra["step_only_seconds"] = statistics.median(times) - extra["gradient_seconds"]
else:
    x = idx("train-images-idx3-ubyte.gz")[:50000].reshape(50000, -1).float().div(255)
    y = idx("train-labels-idx1-ubyte.gz")[:50000].long()
    N, n = 50000, 500
    model = torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.Sigmoid(), torch.nn.Linear(100, 10))
    F = torch.nn.functional
    if a.impl == "sgmcmc":
        import sgmcmc
        opt = sgmcmc.SGHMC(model.parameters(), lr=2e-6, alpha=0.01, prior_precision=1.0, seed=1)

        def epoch():
            for b in torch.randperm(N).split(n):
                opt.zero_grad()
                (N * F.cross_entropy(model(x[b]), y[b])).backward()
                opt.step()
    else:
        import posteriors
        from torch.func import functional_call
        params = {k: v.detach().clone() for k, v in model.named_parameters()}

        def log_post(p, batch):
            xb, yb = batch
            logits = functional_call(model, p, (xb,))
            prior = sum(-0.5 * (t * t).sum() for t in p.values())  # λ = 1
            return -F.cross_entropy(logits, yb) + prior / N, logits
        e = (2e-6 * N) ** 0.5
        transform = posteriors.sgmcmc.sghmc.build(log_post, lr=e, alpha=0.01 / e, temperature=1.0 / N, momenta=0.0)
        state = transform.init(params)

        def epoch():
            for b in torch.randperm(N).split(n):
                transform.update(state, (x[b], y[b]), inplace=True)
    times = timed(epoch, max(1, a.reps // 5))

print(json.dumps(dict(impl=a.impl, what=a.what, seconds=statistics.median(times), min=min(times), max=max(times),
                      reps=len(times), torch=torch.__version__, threads=a.threads, params=a.params, **extra)))
