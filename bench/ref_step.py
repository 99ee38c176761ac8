#!/usr/bin/env python3
"""The training step alone, as a PyTorch user writes it in Python (bench/floors.sh's comparison row).

The same work per step as bench_step / `sgmcmc train` without evaluations and Gibbs steps: a
minibatch gathered from a fresh permutation per epoch, U~ = (N/n) * sum NLL + sum_g lambda_g |theta_g|^2 / 2,
backward, and the SGHMC Euler update v <- v - eta*grad - alpha*v + N(0, 2*alpha*eta), theta <- theta + v.
Models: the App. H.1 MLP (--hidden 100 --activation sigmoid), FNN-800 (--hidden 800,800 --activation relu)
and the CNN of models/cnn.h (--model cnn). Data: Fashion-MNIST's training images (50,000 after the
10,000 validation images), resident in memory.

    ref_step.py --model mlp --hidden 100 --activation sigmoid --batch 500 --steps 200 --rounds 1 --threads 2
prints one JSON line with the steps/s of each round.
"""
import argparse, json, math, time

import numpy as np
import torch

from ref_mnist_bnn import find, read_idx


def build(a):
    if a.model == "cnn":
        class Cnn(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1, self.conv2 = torch.nn.Conv2d(1, 20, 5), torch.nn.Conv2d(20, 50, 5)
                self.fc1, self.fc2 = torch.nn.Linear(800, 500), torch.nn.Linear(500, 10)

            def forward(self, x):
                h = torch.max_pool2d(torch.relu(self.conv1(x.unsqueeze(1))), 2)
                h = torch.max_pool2d(torch.relu(self.conv2(h)), 2)
                return self.fc2(torch.relu(self.fc1(h.reshape(h.shape[0], 800))))
        return Cnn()
    act = torch.nn.Sigmoid if a.activation == "sigmoid" else torch.nn.ReLU
    layers, width = [], 784
    for h in [int(v) for v in a.hidden.split(",")]:
        layers += [torch.nn.Linear(width, h), act()]
        width = h
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--hidden", default="100")
    ap.add_argument("--activation", choices=["sigmoid", "relu"], default="sigmoid")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    x = read_idx(find(a.data, "train-images-idx3-ubyte"))[10000:]
    y = read_idx(find(a.data, "train-labels-idx1-ubyte"))[10000:]
    x = torch.tensor(x, dtype=torch.float32) / 255.0
    if a.model == "mlp":
        x = x.reshape(-1, 784)
    y = torch.tensor(y.astype(np.int64))
    N = x.shape[0]
    model = build(a)
    params = list(model.parameters())
    lam = [torch.ones(()) for _ in params]
    v = [torch.zeros_like(p) for p in params]
    eta, alpha = 2e-6, 0.01
    sd = math.sqrt(2 * alpha * eta)
    per_epoch = N // a.batch
    state = {"order": None, "b": per_epoch}

    def step():
        if state["b"] == per_epoch:
            state["order"], state["b"] = torch.randperm(N), 0
        idx = state["order"][state["b"] * a.batch:(state["b"] + 1) * a.batch]
        state["b"] += 1
        nll = torch.nn.functional.cross_entropy(model(x[idx]), y[idx], reduction="sum")
        u = nll * (N / a.batch) + sum(0.5 * lg * (p * p).sum() for lg, p in zip(lam, params))
        for p in params:
            p.grad = None
        u.backward()
        with torch.no_grad():
            for p, vi in zip(params, v):
                vi.mul_(1 - alpha).add_(p.grad, alpha=-eta).add_(torch.randn_like(vi), alpha=sd)
                p.add_(vi)

    for _ in range(a.warmup):
        step()
    rates = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        rates.append(a.steps / (time.perf_counter() - t0))
    print(json.dumps({"bench": "step_python", "model": a.model, "hidden": a.hidden, "threads": a.threads,
                      "batch": a.batch, "steps": a.steps, "steps_per_second": rates}))


if __name__ == "__main__":
    main()
