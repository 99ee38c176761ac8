"""A plain PyTorch loop with sgmcmc.SGHMC on App. H.1's model matches `sgmcmc train` statistically.

Both sides: the 784-100-10 sigmoid MLP, Fashion-MNIST's first 6,000 training images (1,000 of
them held out for validation, 5,000 for training), batch 500, SGHMC (lr 2e-5, α = 0.01), a
Gaussian prior per weight matrix / bias vector with Gamma(1, 1) hyperpriors and a Gibbs step per
epoch after the first 300 steps, 60 epochs (600 steps), burn-in 10 epochs, one sample per epoch
averaged into the predictive on the first 2,000 test images. Three seeds each. The two means of
the test error may differ by seed noise only: a run's error on 2,000 images has a binomial
standard deviation of ≈ 0.009 at an error of 0.2, the mean of three runs ≈ 0.005 plus the chains'
own spread (about as much again), the difference of two means ≈ 0.01; the test allows 0.035
(3.5 of those) and 12 % of the NLL.
"""
import gzip
import os
import struct
import subprocess

import pytest
import torch
import torch.nn.functional as F

import sgmcmc

BINARY = os.environ.get("SGMCMC_TEST_BINARY")
DATA = "/usr/share/datasets/fashion-mnist"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = (1, 2, 3)


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n = struct.unpack(">II", raw[:8])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(raw[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def python_run(seed):
    torch.manual_seed(seed)
    x = idx(f"{DATA}/train-images-idx3-ubyte.gz")[:6000].reshape(6000, -1).float() / 255
    y = idx(f"{DATA}/train-labels-idx1-ubyte.gz")[:6000].long()
    perm = torch.randperm(6000)
    x, y = x[perm[1000:]], y[perm[1000:]]
    xt = idx(f"{DATA}/t10k-images-idx3-ubyte.gz")[:2000].reshape(2000, -1).float() / 255
    yt = idx(f"{DATA}/t10k-labels-idx1-ubyte.gz")[:2000].long()
    n = x.shape[0]
    model = torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.Sigmoid(), torch.nn.Linear(100, 10))
    opt = sgmcmc.SGHMC([{"params": [p]} for p in model.parameters()], lr=2e-5, alpha=0.01)
    prior = sgmcmc.GaussianPrior(opt, precision=1.0, hyperprior=(1.0, 1.0))
    col = sgmcmc.SampleCollector(model, burn_in=100, thin=10)
    step = 0
    for epoch in range(60):
        for batch in torch.randperm(n).split(500):
            opt.zero_grad()
            (n * F.cross_entropy(model(x[batch]), y[batch])).backward()
            opt.step()
            step += 1
            if col.due(step):
                with torch.no_grad():
                    col.add(step, test=model(xt).softmax(-1))
        if step > 300:
            prior.gibbs_step()
    return col.metrics("test", yt)


def binary_run(seed, out):
    subprocess.run([BINARY, "train", os.path.join(ROOT, "configs", "mnist_bnn_sghmc.yaml"), "--out", out, "--quiet",
                    "--set", f"data.dir={DATA}", "--set", "data.train_limit=6000", "--set", "data.val_size=1000",
                    "--set", "data.test_limit=2000", "--set", "train.epochs=60", "--set", "train.burn_in=10",
                    "--set", "prior.gibbs_start_steps=300", "--set", "sampler.lr=2e-5", "--set", f"seed={seed}",
                    "--set", "train.threads=1", "--set", "output.save_samples=false"],
                   check=True, stdout=subprocess.DEVNULL)
    import json
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return {"error": s["test_error"], "nll": s["test_nll"]}


@pytest.mark.skipif(not BINARY or not os.path.exists(f"{DATA}/train-images-idx3-ubyte.gz"),
                    reason="needs the built sgmcmc (ctest sets SGMCMC_TEST_BINARY) and Fashion-MNIST")
def test_python_loop_matches_the_binary(tmp_path):
    py = [python_run(s) for s in SEEDS]
    bi = [binary_run(s, str(tmp_path / f"run{s}")) for s in SEEDS]
    mean = lambda rows, k: sum(r[k] for r in rows) / len(rows)  # noqa: E731
    print("python", py, "\nbinary", bi)
    assert mean(py, "error") < 0.3 and mean(bi, "error") < 0.3  # both learned (chance: 0.9)
    assert abs(mean(py, "error") - mean(bi, "error")) < 0.035
    assert abs(mean(py, "nll") - mean(bi, "nll")) < 0.12 * mean(bi, "nll")
