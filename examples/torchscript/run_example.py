#!/usr/bin/env python3
"""Bring your own PyTorch model to sgmcmc, and the posterior back into Python.

1. defines a small residual convnet as an ordinary nn.Module and saves it with torch.jit.script;
2. saves Fashion-MNIST (Debian's dataset-fashion-mnist) as a dict of tensors with torch.save;
3. runs `sgmcmc train` on them (SGHMC, Gamma hyperpriors on one prior precision per group of
   parameters named by patterns, every kept sample saved);
4. loads the samples with torch.load, averages the predictive in Python and compares it with the
   figures the binary wrote to summary.json.

usage: examples/torchscript/run_example.py [--sgmcmc build/sgmcmc] [--work runs/torchscript-example]
                                           [--train 10000] [--test 2000] [--epochs 6]
Needs only Debian's python3-torch (scripts/setup.sh installs it); no download.
"""
import argparse
import glob
import gzip
import json
import os
import subprocess

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(h)))


class ResNet(nn.Module):
    """28x28 grey images -> 10 logits: conv stem, two residual blocks at 14x14 and 7x7, linear head."""

    def __init__(self, width=16, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        self.block1 = Block(width)
        self.block2 = Block(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2)
        h = F.max_pool2d(self.block1(h), 2)
        h = self.block2(h)
        return self.head(h.mean((2, 3)))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return torch.from_numpy(np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape).copy())


def save_fashion_mnist(path, n_train, n_test, root="/usr/share/datasets/fashion-mnist"):
    def images(name, n):
        return read_idx(f"{root}/{name}-images-idx3-ubyte.gz")[:n].float().div(255).unsqueeze(1)

    def labels(name, n):
        return read_idx(f"{root}/{name}-labels-idx1-ubyte.gz")[:n].long()

    torch.save({"x_train": images("train", n_train), "y_train": labels("train", n_train),
                "x_test": images("t10k", n_test), "y_test": labels("t10k", n_test)}, path)


CONFIG = """\
name: torchscript-example
seed: 1
data: {{format: tensors, path: {data}, val_size: {val}}}
model: {{name: torchscript, path: {model}}}
prior:
  hyperprior: gamma
  groups: {{convs: "*conv*", stem: "stem.*", norms: "*bn*", head: "head.*"}}
sampler: {{name: sghmc, lr: {lr}, alpha: 0.1}}
train: {{epochs: {epochs}, burn_in: {burn_in}, batch_size: 100, thin: 20}}
output: {{save_samples: true}}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sgmcmc", default="build/sgmcmc")
    ap.add_argument("--work", default="runs/torchscript-example")
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--lr", type=float, default=1e-4)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model_path, data_path = f"{args.work}/resnet.pt", f"{args.work}/fashion.pt"
    cfg_path, run = f"{args.work}/config.yaml", f"{args.work}/run"

    torch.manual_seed(0)
    torch.jit.script(ResNet()).save(model_path)                       # 1
    save_fashion_mnist(data_path, args.train, args.test)               # 2
    with open(cfg_path, "w") as f:
        f.write(CONFIG.format(data=os.path.abspath(data_path), model=os.path.abspath(model_path),
                              val=args.train // 10, lr=args.lr, epochs=args.epochs, burn_in=args.epochs // 3))
    subprocess.run([args.sgmcmc, "train", cfg_path, "--out", run, "--overwrite"], check=True)  # 3

    net = torch.jit.load(model_path)                                   # 4
    net.eval()
    data = torch.load(data_path)
    names = net.state_dict().keys()
    probs = []
    for f in sorted(glob.glob(f"{run}/samples/sample_*.pt")):
        sample = torch.load(f)  # {parameter/buffer name: tensor, "step": int, "lambda.<group>": float}
        net.load_state_dict({k: v for k, v in sample.items() if k in names})
        with torch.no_grad():
            probs.append(torch.cat([torch.softmax(net(x), 1).double() for x in data["x_test"].split(1000)]))
    p = torch.stack(probs).mean(0)
    y = data["y_test"]
    error = (p.argmax(1) != y).double().mean().item()
    nll = -p.gather(1, y[:, None]).log().mean().item()
    summary = json.load(open(f"{run}/summary.json"))
    print(f"{len(probs)} samples, last one from step {sample['step']}, λ(head) = {sample['lambda.head']:.3g}")
    print(f"posterior predictive in Python: test error {error:.4f}, NLL {nll:.4f}")
    print(f"sgmcmc's summary.json:          test error {summary['test_error']:.4f}, NLL {summary['test_nll']:.4f}")
    assert abs(error - summary["test_error"]) < 1e-9 and abs(nll - summary["test_nll"]) < 1e-4
    print("they agree")


if __name__ == "__main__":
    main()
