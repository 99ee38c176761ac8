#!/usr/bin/env python3
"""App. H.1 (784-100-10 sigmoid MLP, batch 500, Fashion-MNIST) by BlackJAX's SGHMC / SGLD (issue 44).

Written as BlackJAX's documentation writes SG-MCMC: a per-datum log-likelihood and a log-prior, turned
into a gradient by `blackjax.sgmcmc.gradients.grad_estimator(logprior, loglik, data_size)` (which
vmaps the log-likelihood over the minibatch and scales it by N / n), and one epoch of steps as a
`jax.lax.scan` under `jax.jit`, the training set on the device and the minibatch gathered inside the
scan from a permutation drawn inside the jitted epoch.

SGLD is `blackjax.sgld(grad_estimator).step(key, position, minibatch, step_size)`:
    theta <- theta + h grad log p~ + N(0, 2 h T)    (blackjax.sgmcmc.diffusions.overdamped_langevin),
and grad log p~ = -grad U~, so h = sgmcmc's lr (1e-5), T = 1.

SGHMC: `blackjax.sghmc(grad_estimator, num_integration_steps, alpha, beta).step(...)` redraws the
momentum p ~ N(0, I) at every call and runs `num_integration_steps` steps on ONE minibatch (an HMC-like
trajectory); that is not the SGHMC of Chen et al. / sgmcmc, whose momentum persists across minibatches.
The same dynamics come from BlackJAX's own SGHMC integrator, the one that kernel calls,
`blackjax.sgmcmc.diffusions.sghmc(alpha, beta)`, with the momentum carried across minibatches:
    x <- x + h p;    p <- (1 - alpha h) p + h grad log p~ + N(0, h T (2 alpha - h T beta)).
With v = h p this is v <- (1 - alpha h) v - h^2 grad U~ + N(0, 2 alpha h^3) after the position step,
i.e. sgmcmc's v <- (1 - a) v - eta grad U~ + N(0, 2 a eta) with eta = h^2, a = alpha h:
    h = sqrt(eta) = sqrt(2e-6) = 1.4142e-3,  alpha = a / h = 7.0711,  beta = 0,  T = 1,  p0 = 0.
(The order of the two updates differs from sgmcmc's: see below.) `--api kernel` runs the top-level
`blackjax.sghmc` kernel instead (momentum redrawn every step, one integration step per minibatch), to
show what the documented call does at equal work.

BlackJAX's integrator is explicit Euler: the position moves with the momentum from BEFORE this step's
gradient, and the gradient is taken where the position was, so the momentum update lags the position by
one step (posteriors' sghmc has the same order). sgmcmc moves the position with the updated momentum
(semi-implicit / symplectic Euler). At App. H.1's eta = 2e-6, a = 0.01 the explicit
scheme is unstable for every direction of curvature k with eta k > a (|eigenvalue|^2 ~ 1 + eta k - a),
and it samples a visibly worse predictive (20 epochs: test error ~0.27 against ~0.13). `--api ordered`
is the same computation in sgmcmc's order: BlackJAX's grad_estimator and BlackJAX's noise helper
(blackjax.util.generate_gaussian_noise), then
    p <- (1 - alpha h) p + h grad log p~ + N(0, 2 alpha h T);  x <- x + h p
in three lines of jax.tree.map, the same arithmetic per step as the integrator.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = common.parser(__doc__.splitlines()[0])
    ap.add_argument("--api", choices=["integrator", "ordered", "kernel"], default="integrator")
    ap.add_argument("--matmul-precision", choices=["highest", "default"], default="highest",
                    help="jax_default_matmul_precision: 'highest' is full float32, as sgmcmc's products (on "
                         "a GPU JAX's default may round the products' inputs to TF32)")
    a = ap.parse_args()
    if a.device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    import numpy as np
    import blackjax
    if a.matmul_precision == "highest":
        jax.config.update("jax_default_matmul_precision", "highest")
    from blackjax.sgmcmc.diffusions import sghmc as sghmc_integrator
    from blackjax.sgmcmc.gradients import grad_estimator
    from blackjax.util import generate_gaussian_noise

    dev = jax.devices("gpu" if a.device == "cuda" else "cpu")[0]
    xtr, ytr, xte, yte = common.load(a.data)
    N = xtr.shape[0]
    steps_per_epoch = N // common.BATCH
    X = jax.device_put(jnp.asarray(xtr), dev)
    Y = jax.device_put(jnp.asarray(ytr.astype(np.int32)), dev)
    XT = jax.device_put(jnp.asarray(xte), dev)
    # PyTorch's layout and initialisation (weight [out, in]), the same draws as the other peers
    params = {k: jax.device_put(jnp.asarray(v), dev) for k, v in common.init_params(a.seed).items()}

    def logits_fn(p, x):
        h = jax.nn.sigmoid(x @ p["0.weight"].T + p["0.bias"])
        return h @ p["2.weight"].T + p["2.bias"]

    def loglikelihood_fn(p, datum):          # one example, as blackjax's grad_estimator expects
        x, y = datum
        return jax.nn.log_softmax(logits_fn(p, x))[y]

    def logprior_fn(p):
        return -0.5 * common.PRIOR_PRECISION * sum(jnp.sum(v * v) for v in jax.tree.leaves(p))

    grad_fn = grad_estimator(logprior_fn, loglikelihood_fn, N)

    if a.sampler == "sgld":
        algo = blackjax.sgld(grad_fn)
        step_size = common.SGLD_LR
        settings = f"blackjax.sgld(grad_estimator), step_size h = {step_size:g}, T = 1"

        def one_step(state, batch, key):
            return algo.step(key, state, batch, step_size)
        state0 = algo.init(params)
    elif a.api == "integrator":
        h = common.ETA ** 0.5
        alpha = common.ALPHA / h
        integ = sghmc_integrator(alpha=alpha, beta=0.0)
        settings = (f"blackjax.sgmcmc.diffusions.sghmc (the blackjax.sghmc kernel's integrator), momentum "
                    f"carried across minibatches, step_size h = sqrt(eta) = {h:.5g}, alpha = a/h = {alpha:.5g}, beta = 0, p0 = 0")

        def one_step(state, batch, key):
            pos, mom = state
            return integ(key, pos, mom, grad_fn(pos, batch), h, 1.0)
        state0 = (params, jax.tree.map(jnp.zeros_like, params))
    elif a.api == "ordered":
        h = common.ETA ** 0.5
        alpha = common.ALPHA / h
        noise_sd = (2.0 * alpha * h) ** 0.5
        settings = (f"blackjax grad_estimator + generate_gaussian_noise, sgmcmc's step order (momentum, then position), "
                    f"h = sqrt(eta) = {h:.5g}, alpha = a/h = {alpha:.5g}, beta = 0, p0 = 0")

        def one_step(state, batch, key):
            pos, mom = state
            g = grad_fn(pos, batch)
            noise = generate_gaussian_noise(key, pos)
            mom = jax.tree.map(lambda p, g, z: (1.0 - alpha * h) * p + h * g + noise_sd * z, mom, g, noise)
            return jax.tree.map(lambda x, p: x + h * p, pos, mom), mom
        state0 = (params, jax.tree.map(jnp.zeros_like, params))
    else:
        h = common.ETA ** 0.5
        alpha = common.ALPHA / h
        algo = blackjax.sghmc(grad_fn, num_integration_steps=1, alpha=alpha, beta=0.0)
        settings = (f"blackjax.sghmc(grad_estimator, num_integration_steps=1, alpha={alpha:.5g}, beta=0) "
                    f"(momentum redrawn every step), step_size h = {h:.5g}")

        def one_step(state, batch, key):
            return algo.step(key, state, batch, h)
        state0 = algo.init(params)

    @jax.jit
    def epoch(state, key, X, Y):
        kperm, kscan = jax.random.split(key)
        idx = jax.random.permutation(kperm, N)[: steps_per_epoch * common.BATCH].reshape(steps_per_epoch, common.BATCH)
        keys = jax.random.split(kscan, steps_per_epoch)

        def body(state, inp):
            i, k = inp
            return one_step(state, (X[i], Y[i]), k), None
        state, _ = jax.lax.scan(body, state, (idx, keys))
        return state

    position = (lambda s: s[0]) if (a.sampler == "sghmc" and a.api != "kernel") else (lambda s: s)
    predict = jax.jit(lambda p, x: jax.nn.softmax(logits_fn(p, x)))

    key = jax.random.key(a.seed)
    t0 = time.perf_counter()
    compiled = epoch.lower(state0, key, X, Y).compile()
    jax.block_until_ready(predict(params, XT))
    compile_seconds = time.perf_counter() - t0

    clock, pred = common.Clock(), common.Predictive(yte)
    state = state0
    for e in range(1, a.epochs + 1):
        key, k = jax.random.split(key)
        state = clock.run(lambda: jax.block_until_ready(compiled(state, k, X, Y)))
        if not a.no_eval and e > a.burn_in:
            t1 = time.perf_counter()
            pred.add(np.asarray(predict(position(state), XT)))
            pred.seconds += time.perf_counter() - t1
    common.report(f"blackjax-{a.api}" if a.sampler == "sghmc" else "blackjax", f"blackjax {blackjax.__version__}, "
                  f"jax {jax.__version__}, jaxlib {jax.lib.__version__}, matmul precision {a.matmul_precision}", settings, a, clock, pred,
                  a.epochs * steps_per_epoch, compile_seconds, {"jax_devices": str(jax.devices())})


if __name__ == "__main__":
    main()
