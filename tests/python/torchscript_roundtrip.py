#!/usr/bin/env python3
"""CI test through Python (Debian's python3-torch): a scripted convnet with batch norm, trained by
`sgmcmc train` on a tensors file; its saved samples, loaded with torch.load, give the predictive
the binary reported (summary.json), and `sgmcmc predict --data` writes the same probabilities.

usage: torchscript_roundtrip.py SGMCMC_BINARY WORK_DIR
"""
import glob
import json
import os
import subprocess
import sys

try:
    import torch
    import torch.nn as nn
except ImportError:  # python3-torch missing: skipped (ctest SKIP_RETURN_CODE 77)
    print("skipped: python3-torch is not installed (scripts/setup.sh installs it)")
    sys.exit(77)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 7 * 7, 3)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv1(x)))
        h = torch.nn.functional.max_pool2d(h, 2)
        return self.fc(h.flatten(1))


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    os.chdir(work)
    torch.manual_seed(0)
    torch.jit.script(Net()).save("net.pt")
    x = torch.randn(400, 1, 14, 14)
    y = (x.mean((1, 2, 3)) > 0).long() + (x[:, 0, 0, 0] > 1).long()
    torch.save({"x_train": x[:300], "y_train": y[:300], "x_test": x[300:], "y_test": y[300:]}, "data.pt")
    with open("cfg.yaml", "w") as f:
        f.write("data: {format: tensors, path: data.pt, val_size: 50}\n"
                "model: {name: torchscript, path: net.pt}\n"
                "prior: {groups: {conv: 'conv*', bn: 'bn.*', rest: '*'}}\n"
                "sampler: {name: sghmc, lr: 1.0e-3}\n"
                "train: {epochs: 8, burn_in: 2, batch_size: 50, threads: 1, require_healthy: false}\n"
                "output: {save_samples: true, progress: false}\n")
    subprocess.run([binary, "train", "cfg.yaml", "--out", "run", "--overwrite", "--quiet"], check=True)

    net = torch.jit.load("net.pt")
    net.eval()
    d = torch.load("data.pt")
    probs = []
    files = sorted(glob.glob("run/samples/*.pt"))
    assert len(files) == 6, files
    for f in files:
        s = torch.load(f)
        assert isinstance(s["step"], int) and s["lambda.conv"] > 0, s.keys()
        keys = net.state_dict().keys()
        assert all(k in s for k in keys), (keys, s.keys())
        net.load_state_dict({k: v for k, v in s.items() if k in keys})
        with torch.no_grad():
            probs.append(torch.softmax(net(d["x_test"]), 1).double())
    p = torch.stack(probs).mean(0)
    err = (p.argmax(1) != d["y_test"]).double().mean().item()
    nll = -p.gather(1, d["y_test"][:, None]).log().mean().item()
    summary = json.load(open("run/summary.json"))
    print(f"python: error {err:.6f} nll {nll:.6f}; binary: error {summary['test_error']:.6f} nll {summary['test_nll']:.6f}")
    assert summary["samples"] == len(files)
    assert abs(err - summary["test_error"]) < 1e-9
    assert abs(nll - summary["test_nll"]) < 1e-5

    torch.save({"x": d["x_test"][:20], "y": d["y_test"][:20]}, "new.pt")
    subprocess.run([binary, "predict", "run", "--data", "new.pt", "--per-sample", "--quiet"], check=True)
    pred = torch.load("run/predictive.pt")
    assert pred["samples"] == len(files)
    assert torch.allclose(pred["probs"].double(), p[:20], atol=1e-6), (pred["probs"][:2], p[:2])
    assert pred["per_sample"].shape == (len(files), 20, 3)
    print("ok")


if __name__ == "__main__":
    main()
