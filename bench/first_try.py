#!/usr/bin/env python3
"""A new user's first runs, as README's own-model snippet writes them, with the step size left out.

1. A CNN of the user's own (two conv layers, LayerNorm, dropout) on 3,000 Fashion-MNIST training images
   (TorchScript, tensors file), README's snippet: `sampler: {name: sghmc}`, every other key at its default.
2. A small regression MLP (one hidden layer of 50 ReLU units) on Boston housing, `sampler: {name: sghmc}`.
3. App. H.1 (configs/mnist_bnn_sghmc.yaml) for 100 epochs with sampler.lr: auto against the shipped lr.
4. The tuned Boston config (configs/boston_uci_sghmc.yaml, lr 3e-6 chosen by a sweep on validation RMSE)
   with sampler.lr: auto against its own lr, on splits 0-4 (`--only boston_tuned`).
Prints one line per run: exit code, the chosen lr, test error / RMSE and NLL, the health verdict.

usage: /usr/bin/python3 bench/first_try.py [--sgmcmc build/sgmcmc] [--work /tmp/first_try] [--only cnn,boston,h1]
"""
import argparse
import gzip
import json
import os
import subprocess

import numpy as np
import torch
import torch.nn as nn

FMNIST = "/usr/share/datasets/fashion-mnist"


class UserCnn(nn.Module):
    """What a user writes first: two conv layers, LayerNorm, dropout, a linear head."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 5, padding=2)
        self.c2 = nn.Conv2d(16, 32, 5, padding=2)
        self.norm = nn.LayerNorm([32, 7, 7])
        self.drop = nn.Dropout(0.25)
        self.head = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        h = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        h = torch.max_pool2d(torch.relu(self.c2(h)), 2)
        h = self.drop(self.norm(h))
        return self.head(h.flatten(1))


def idx(name):
    path = os.path.join(FMNIST, name)
    opener = gzip.open if os.path.exists(path + ".gz") else open
    with opener(path + ".gz" if os.path.exists(path + ".gz") else path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def run(sgmcmc, config_text, work, name, sets=()):
    os.makedirs(work, exist_ok=True)
    cfg = os.path.join(work, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(config_text)
    out = os.path.join(work, name)
    cmd = [sgmcmc, "train", cfg, "--out", out, "--overwrite", "-q"] + [a for s in sets for a in ("--set", s)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    s = json.load(open(os.path.join(out, "summary.json"))) if os.path.exists(os.path.join(out, "summary.json")) else {}
    lr = s.get("lr_auto", {}).get("lr")
    head = "test_error" if "test_error" in s and s["test_error"] is not None else "test_rmse"
    warn = [w["check"] for w in s.get("health", {}).get("warnings", [])]
    print(f"{name}: exit {p.returncode}, lr {lr if lr else '(given)'}, {head} {s.get(head)}, test_nll {s.get('test_nll')}, "
          f"samples {s.get('samples')}, health {'ok' if s.get('health', {}).get('ok') else warn}, "
          f"pilot {s.get('lr_auto', {}).get('seconds', 0):.1f} s, wall {s.get('wall_seconds', 0):.1f} s", flush=True)
    if p.returncode not in (0,):
        print("   stderr:", p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sgmcmc", default="build/sgmcmc")
    ap.add_argument("--work", default="/tmp/first_try")
    ap.add_argument("--only", default="cnn,boston,h1,boston_tuned")
    a = ap.parse_args()
    only = a.only.split(",")
    os.makedirs(a.work, exist_ok=True)
    torch.manual_seed(0)
    if "cnn" in only:
        x = torch.from_numpy(idx("train-images-idx3-ubyte")[:3000].copy()).float().div(255).unsqueeze(1)
        y = torch.from_numpy(idx("train-labels-idx1-ubyte")[:3000].astype(np.int64))
        xt = torch.from_numpy(idx("t10k-images-idx3-ubyte")[:2000].copy()).float().div(255).unsqueeze(1)
        yt = torch.from_numpy(idx("t10k-labels-idx1-ubyte")[:2000].astype(np.int64))
        torch.save({"x_train": x, "y_train": y, "x_test": xt, "y_test": yt}, os.path.join(a.work, "data.pt"))
        torch.jit.script(UserCnn()).save(os.path.join(a.work, "net.pt"))
        text = (f"data:  {{format: tensors, path: {a.work}/data.pt}}\n"
                f"model: {{name: torchscript, path: {a.work}/net.pt}}\n"
                "prior: {groups: {convs: \"*c*\", rest: \"*\"}}\n"
                "sampler: {name: sghmc}\n")
        run(a.sgmcmc, text, a.work, "cnn")
    if "boston" in only:
        text = ("data: {format: csv, path: ../shared/data/boston-housing/boston.csv, target: medv}\n"
                "model: {name: mlp, hidden: [50], activation: relu}\n"
                "sampler: {name: sghmc}\n")
        run(a.sgmcmc, text, a.work, "boston")
    if "h1" in only:
        shipped = open("configs/mnist_bnn_sghmc.yaml").read()
        sets = [f"data.dir={FMNIST}", "train.epochs=100"]
        run(a.sgmcmc, shipped, a.work, "h1_shipped", sets)
        run(a.sgmcmc, shipped, a.work, "h1_auto", sets + ["sampler.lr=auto"])
    if "boston_tuned" in only:
        tuned = open("configs/boston_uci_sghmc.yaml").read()
        for split in range(5):
            run(a.sgmcmc, tuned, a.work, f"boston_tuned_{split}", [f"data.split={split}"])
            run(a.sgmcmc, tuned, a.work, f"boston_auto_{split}", [f"data.split={split}", "sampler.lr=auto"])


if __name__ == "__main__":
    main()
