#!/usr/bin/env python3
"""Plain PyTorch-Python reference loop for the 000 App. H.1 MNIST BNN.

The same work per step as `sgmcmc train configs/mnist_bnn_{sghmc,sgd}.yaml`: a minibatch from indices
shuffled each epoch, U~ = (N/n) * sum NLL + sum_g lambda_g |theta_g|^2 / 2, backward, the update
(SGHMC Euler: v <- v - eta*grad - alpha*v + N(0, 2*alpha*eta), theta <- theta + v; SGD: theta <- theta - lr*grad);
every epoch a Gibbs step lambda_g ~ Gamma(1 + n_g/2, 1 + |theta_g|^2/2) (SGHMC) and, after burn-in,
the current sample's predictive probabilities on the test and validation sets added to running sums
and the averaged predictive's test error computed. Data (Fashion-MNIST IDX, gzip) resident in memory.

    ref_mnist_bnn.py --data /usr/share/datasets/fashion-mnist --sampler sghmc --epochs 5 --threads 2
prints one JSON line: steps, wall_seconds, steps_per_second, test_error.
"""
import argparse, gzip, json, math, os, struct, time

import numpy as np
import torch


def read_idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    nd = magic & 0xFF
    dims = struct.unpack(">" + "I" * nd, data[4:4 + 4 * nd])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def find(d, stem):
    for ext in ("", ".gz"):
        if os.path.exists(os.path.join(d, stem + ext)):
            return os.path.join(d, stem + ext)
    raise SystemExit(f"{d}: {stem} not found")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--sampler", choices=["sghmc", "sgd"], default="sghmc")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--burn-in", type=int, default=1)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)

    xtr = read_idx(find(a.data, "train-images-idx3-ubyte")).reshape(-1, 784)
    ytr = read_idx(find(a.data, "train-labels-idx1-ubyte"))
    xte = read_idx(find(a.data, "t10k-images-idx3-ubyte")).reshape(-1, 784)
    yte = read_idx(find(a.data, "t10k-labels-idx1-ubyte"))
    perm = np.random.RandomState(0).permutation(len(xtr))
    xv, yv, xt, yt = xtr[perm[:10000]], ytr[perm[:10000]], xtr[perm[10000:]], ytr[perm[10000:]]
    f = lambda x: torch.tensor(x, dtype=torch.float32, device=dev) / 255.0
    l = lambda y: torch.tensor(y.astype(np.int64), device=dev)
    xt, yt, xv, yv, xte, yte = f(xt), l(yt), f(xv), l(yv), f(xte), l(yte)
    N = xt.shape[0]

    model = torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.Sigmoid(), torch.nn.Linear(100, 10)).to(dev)
    params = list(model.parameters())
    lam = [torch.ones((), device=dev) for _ in params]
    v = [torch.zeros_like(p) for p in params]
    eta, alpha, lr = 2e-6, 0.01, 1.6e-5
    sd = math.sqrt(2 * alpha * eta)
    sum_test = torch.zeros(xte.shape[0], 10, device=dev)
    sum_val = torch.zeros(xv.shape[0], 10, device=dev)
    samples = 0
    steps_per_epoch = N // a.batch
    test_error = float("nan")

    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(N, device=dev)
        for b in range(steps_per_epoch):
            idx = order[b * a.batch:(b + 1) * a.batch]
            x, y = xt[idx], yt[idx]
            nll = torch.nn.functional.cross_entropy(model(x), y, reduction="sum")
            prior = sum(0.5 * lg * (p * p).sum() for lg, p in zip(lam, params))
            u = nll * (N / a.batch) + prior
            for p in params:
                p.grad = None
            u.backward()
            with torch.no_grad():
                if a.sampler == "sghmc":
                    for p, vi in zip(params, v):
                        vi.mul_(1 - alpha).add_(p.grad, alpha=-eta).add_(torch.randn_like(vi), alpha=sd)
                        p.add_(vi)
                else:
                    for p in params:
                        p.add_(p.grad, alpha=-lr)
        with torch.no_grad():
            if a.sampler == "sghmc":  # Gibbs step for the precisions
                for i, p in enumerate(params):
                    shape = 1.0 + 0.5 * p.numel()
                    rate = 1.0 + 0.5 * (p * p).sum()
                    lam[i] = torch.distributions.Gamma(torch.tensor(shape, device=dev), rate).sample()
            pt, pv = torch.softmax(model(xte), 1), torch.softmax(model(xv), 1)
            if epoch > a.burn_in or a.sampler == "sgd":
                if a.sampler == "sgd":
                    sum_test, sum_val, samples = pt, pv, 1
                else:
                    sum_test += pt; sum_val += pv; samples += 1
                test_error = (sum_test.argmax(1) != yte).float().mean().item()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    steps = a.epochs * steps_per_epoch
    print(json.dumps({"bench": "mnist_bnn_python", "sampler": a.sampler, "threads": a.threads, "steps": steps,
                      "wall_seconds": wall, "steps_per_second": steps / wall, "test_error": test_error}))


if __name__ == "__main__":
    main()
