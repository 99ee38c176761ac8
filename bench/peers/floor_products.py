#!/usr/bin/env python3
"""The App. H.1 step's matrix products alone, in a peer's own library (issue 44): the floor that
bench/floors.sh measures for sgmcmc (bench_step's "floor"), here for PyTorch 2.x (ATen's CPU BLAS)
and JAX (XLA's CPU dot), so that a peer's step can be compared with the products it cannot avoid.

Per step, batch 500: forward X[500x784] W1^T + b1, H[500x100] W2^T + b2; backward G2^T H [10x100],
G2 W2 [500x100], G1^T X [100x784] (the input's gradient is not needed), float32.

    floor_products.py --lib torch|jax --steps 1000 --rounds 3 --threads 2
prints one JSON line: products steps/s per round.
"""
import argparse
import json
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", choices=["torch", "jax"], required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    r = np.random.RandomState(0)
    X = r.rand(500, 784).astype(np.float32)
    H = r.rand(500, 100).astype(np.float32)
    G2 = r.randn(500, 10).astype(np.float32)
    G1 = r.randn(500, 100).astype(np.float32)
    W1 = r.randn(100, 784).astype(np.float32) * 0.03
    W2 = r.randn(10, 100).astype(np.float32) * 0.1
    b1, b2 = np.zeros(100, np.float32), np.zeros(10, np.float32)
    rates = []
    if a.lib == "torch":
        import torch
        torch.set_num_threads(a.threads)
        X, H, G2, G1, W1, W2, b1, b2 = map(torch.from_numpy, (X, H, G2, G1, W1, W2, b1, b2))
        o1, o2 = torch.empty(500, 100), torch.empty(500, 10)
        gw2, gh, gw1 = torch.empty(10, 100), torch.empty(500, 100), torch.empty(100, 784)

        def step():
            torch.addmm(b1, X, W1.t(), out=o1)
            torch.addmm(b2, H, W2.t(), out=o2)
            torch.mm(G2.t(), H, out=gw2)
            torch.mm(G2, W2, out=gh)
            torch.mm(G1.t(), X, out=gw1)
        for _ in range(50):
            step()
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            for _ in range(a.steps):
                step()
            rates.append(a.steps / (time.perf_counter() - t0))
        version = f"torch {torch.__version__}"
    else:
        import jax
        import jax.numpy as jnp

        @jax.jit
        def run(X, H, G2, G1, W1, W2, b1, b2):
            # The inputs ride in the carry and one element of each is rewritten from the previous
            # iteration's outputs (an in-place one-element update), so that XLA neither hoists the
            # products out of the loop nor drops them, at no elementwise pass over the operands.
            def body(c, _):
                acc, X, H, G2, G1 = c
                s = acc * 1e-30
                X, H, G2, G1 = (t.at[0, 0].add(s) for t in (X, H, G2, G1))
                o1 = X @ W1.T + b1
                o2 = H @ W2.T + b2
                gw2 = G2.T @ H
                gh = G2 @ W2
                gw1 = G1.T @ X
                acc = acc + o1[1, 1] + o2[1, 1] + gw2[1, 1] + gh[1, 1] + gw1[1, 1]
                return (acc, X, H, G2, G1), None
            return jax.lax.scan(body, (jnp.float32(0), X, H, G2, G1), None, length=a.steps)[0][0]
        args = [jnp.asarray(v) for v in (X, H, G2, G1, W1, W2, b1, b2)]
        jax.block_until_ready(run(*args))
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            jax.block_until_ready(run(*args))
            rates.append(a.steps / (time.perf_counter() - t0))
        version = f"jax {jax.__version__}"
    print(json.dumps({"bench": "h1_products", "lib": a.lib, "version": version, "threads": a.threads,
                      "steps": a.steps, "products_steps_per_second": rates}))


if __name__ == "__main__":
    main()
