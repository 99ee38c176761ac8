#!/usr/bin/env python3
"""App. H.1 (784-100-10 sigmoid MLP, batch 500, Fashion-MNIST) as a PyTorch 2.x user writes it (issue 44).

The plain loop of bench/ref_step.py (an nn.Sequential, U~ = (N/n) * sum NLL + sum lambda |theta|^2 / 2,
backward, the update in sgmcmc's own parametrisation, so no conversion:
    SGHMC: v <- (1 - a) v - eta grad U~ + N(0, 2 a eta), theta <- theta + v   (eta = 2e-6, a = 0.01)
    SGLD:  theta <- theta - lr grad U~ + N(0, 2 lr)                            (lr = 1e-5)),
run eagerly (`--mode eager`) or under torch.compile (`--mode compile`), the way PyTorch's tutorials
compile a training loop: the model's forward + loss as one compiled function (AOTAutograd compiles its
backward too; loss.backward() runs it) and the update over all parameters as a second compiled
function (as in the "compiled optimizer" recipe). CPU: mode="default"; CUDA: mode="reduce-overhead"
(CUDA graphs). Compilation is done before the clock starts, on copies of the state.

On the CPU that plain compiled loop is SLOWER than eager: Inductor generates its own Philox normal
generator for torch.randn_like, a scalar loop costing ~60 ns per normal (~4.7 ms a step for the 79,510
parameters, against ~0.4 ms for ATen's). `--mode compile-step` is the fastest PyTorch 2.x form found
here: the whole step (minibatch gather, torch.func.grad of U~, the update) as ONE compiled function on
the state as a list of tensors, with `torch._inductor.config.fallback_random = True` (Inductor calls
ATen's randn instead of its own generator): about 1.3x eager on 2 CPU threads.
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = common.parser(__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["eager", "compile", "compile-step"], default="eager")
    ap.add_argument("--compile-mode", default=None, help="torch.compile mode (default: default on CPU, "
                    "reduce-overhead on CUDA)")
    a = ap.parse_args()
    import numpy as np
    import torch
    import torch.nn.functional as F

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
    with torch.no_grad():
        for k, v in common.init_params(a.seed).items():
            model.get_parameter(k).copy_(torch.from_numpy(v))
    params = list(model.parameters())
    lam = common.PRIOR_PRECISION
    eta, alpha, lr = common.ETA, common.ALPHA, common.SGLD_LR
    sd = math.sqrt(2 * alpha * eta) if a.sampler == "sghmc" else math.sqrt(2 * lr)
    v = [torch.zeros_like(p) for p in params]

    def loss_fn(x, y):
        nll = F.cross_entropy(model(x), y, reduction="sum")
        prior = sum(0.5 * lam * (p * p).sum() for p in params)
        return nll * (N / n) + prior

    def sghmc_update(ps, gs, vs):
        for p, g, vi in zip(ps, gs, vs):
            vi.mul_(1 - alpha).add_(g, alpha=-eta).add_(torch.randn_like(vi), alpha=sd)
            p.add_(vi)

    def sgld_update(ps, gs, vs):
        for p, g in zip(ps, gs):
            p.add_(g, alpha=-lr).add_(torch.randn_like(p), alpha=sd)

    update = sghmc_update if a.sampler == "sghmc" else sgld_update
    cmode = a.compile_mode or ("reduce-overhead" if dev.type == "cuda" else "default")
    names = [k for k, _ in model.named_parameters()]
    fstate = {}
    if a.mode == "compile-step":
        import torch._inductor.config as inductor_config
        from torch.func import functional_call, grad
        inductor_config.fallback_random = True

        def U(pd, x, y):
            nll = F.cross_entropy(functional_call(model, pd, (x,)), y, reduction="sum")
            return nll * (N / n) + sum(0.5 * lam * (p * p).sum() for p in pd.values())

        def whole_step(pl, vl, X, Y, idx):
            g = grad(U)(dict(zip(names, pl)), X[idx], Y[idx])
            if a.sampler == "sghmc":
                vl = [vi * (1 - alpha) - eta * g[k] + sd * torch.randn_like(vi) for vi, k in zip(vl, names)]
                return [p + vi for p, vi in zip(pl, vl)], vl
            return [p - lr * g[k] + sd * torch.randn_like(p) for p, k in zip(pl, names)], vl
        compiled_step = torch.compile(whole_step, mode=cmode)
        fstate["p"] = [p.detach().clone() for p in params]
        fstate["v"] = v
        settings = (f"torch.compile(mode={cmode!r}) of the whole step (gather, torch.func.grad, update) as one "
                    f"function, torch._inductor.config.fallback_random = True")
    elif a.mode == "compile":
        loss_fn = torch.compile(loss_fn, mode=cmode)
        update = torch.compile(update, mode=cmode)
        settings = f"torch.compile(mode={cmode!r}) of forward+loss (its backward via AOTAutograd) and of the update"
    else:
        settings = "eager"
    settings += (f"; sgmcmc's parametrisation: eta = {eta:g}, a = {alpha:g}" if a.sampler == "sghmc"
                 else f"; sgmcmc's parametrisation: lr = {lr:g}")

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def step(idx):
        if a.mode == "compile-step":
            if dev.type == "cuda" and cmode == "reduce-overhead":
                # A new step begins: the previous replay's outputs may be overwritten, so the state
                # fed back in is a copy of them (without it torch 2.11 raises "accessing tensor
                # output of CUDAGraphs that has been overwritten by a subsequent run"); the copies
                # are two passes over the 79,510 parameters and momenta a step.
                torch.compiler.cudagraph_mark_step_begin()
                p_new, v_new = compiled_step(fstate["p"], fstate["v"], X, Y, idx)
                fstate["p"], fstate["v"] = [t.clone() for t in p_new], [t.clone() for t in v_new]
                return
            fstate["p"], fstate["v"] = compiled_step(fstate["p"], fstate["v"], X, Y, idx)
            return
        loss = loss_fn(X[idx], Y[idx])
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            update(params, [p.grad for p in params], v)

    # Compile (and warm up) before the clock, then put the state back.
    t0 = time.perf_counter()
    saved = [p.detach().clone() for p in params], [vi.clone() for vi in v]
    order = torch.randperm(N, device=dev)
    for b in range(3):
        step(order[b * n:(b + 1) * n])
    if a.mode == "compile-step":
        fstate["p"], fstate["v"] = [t.clone() for t in saved[0]], [t.clone() for t in saved[1]]
    with torch.no_grad():
        for p, s in zip(params, saved[0]):
            p.copy_(s)
        for vi, s in zip(v, saved[1]):
            vi.copy_(s)
    sync()
    compile_seconds = time.perf_counter() - t0

    clock, pred = common.Clock(), common.Predictive(yte)

    def one_epoch():
        order = torch.randperm(N, device=dev)
        for b in range(steps_per_epoch):
            step(order[b * n:(b + 1) * n])
        sync()

    for e in range(1, a.epochs + 1):
        clock.run(one_epoch)
        if not a.no_eval and e > a.burn_in:
            t1 = time.perf_counter()
            with torch.no_grad():
                if a.mode == "compile-step":
                    for p, q in zip(params, fstate["p"]):
                        p.copy_(q)
                pred.add(torch.softmax(model(XT), 1).cpu().numpy())
            pred.seconds += time.perf_counter() - t1
    common.report(f"torch-{a.mode}", f"torch {torch.__version__}", settings, a, clock, pred,
                  a.epochs * steps_per_epoch, compile_seconds, {"torch_threads": torch.get_num_threads()})


if __name__ == "__main__":
    main()
