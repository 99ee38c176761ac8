"""Shared by the peer scripts of bench/peers/ (issue 44): the App. H.1 workload, its data, its settings
and the metrics of the averaged predictive. numpy only, so that every peer imports it unchanged.

The workload (configs/mnist_bnn_{sghmc,sgld}.yaml with prior.hyperprior: none):
  784-100-10 sigmoid MLP, weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (src/models/mlp.cpp),
  Fashion-MNIST / 255, 50,000 training images resident in memory (the other 10,000 of the 60,000 are
  the validation set, unused here), batch 500 from a fresh permutation each epoch (100 steps an epoch,
  float32), U~(theta) = (N/n) sum_batch nll + sum lambda |theta|^2 / 2 with a fixed lambda = 1.
  SGHMC (src/samplers/sghmc.h, Euler): v <- (1 - a) v - eta grad U~ + N(0, 2 a eta), theta <- theta + v,
      eta = 2e-6, a = 0.01, v0 = 0.
  SGLD (src/samplers/sgld.h): theta <- theta - lr grad U~ + N(0, 2 lr), lr = 1e-5 (Welling & Teh's 2e-5 / 2).
  After `burn_in` epochs, the parameters at the end of every epoch are one sample: its softmax on the
  10,000 test images is added to a running mean (sgmcmc's default thinning: one sample an epoch), and
  the averaged predictive's test error and NLL are reported at the end.

Every script prints one JSON line (see `report`): steps/s counts only the time inside the training
epochs (no start-up, no compilation, no evaluation), as sgmcmc's summary.json `time.steps` does.
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np

N_TRAIN = 50000
N_VAL = 10000
BATCH = 500
HIDDEN = 100
ETA = 2.0e-6        # sghmc lr (eta) in configs/mnist_bnn_sghmc.yaml
ALPHA = 0.01        # sghmc alpha (momentum decay a = eta * C)
SGLD_LR = 1.0e-5    # sgld lr in configs/mnist_bnn_sgld.yaml
PRIOR_PRECISION = 1.0


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


def load(data_dir):
    """(x_train [50000, 784] float32, y_train [50000] int64, x_test [10000, 784], y_test [10000]).
    The validation images are carved out by a fixed permutation (seed 0), as bench/ref_mnist_bnn.py does."""
    x = read_idx(find(data_dir, "train-images-idx3-ubyte")).reshape(-1, 784)
    y = read_idx(find(data_dir, "train-labels-idx1-ubyte")).astype(np.int64)
    xte = read_idx(find(data_dir, "t10k-images-idx3-ubyte")).reshape(-1, 784)
    yte = read_idx(find(data_dir, "t10k-labels-idx1-ubyte")).astype(np.int64)
    perm = np.random.RandomState(0).permutation(len(x))
    tr = np.sort(perm[N_VAL:])
    f = lambda a: (a.astype(np.float32) / np.float32(255.0))
    return f(x[tr]), y[tr], f(xte), yte


def init_params(seed):
    """The MLP's initial parameters as numpy float32, PyTorch's layout (weight [out, in])."""
    r = np.random.RandomState(seed)
    out = {}
    for name, (fin, fout) in (("0", (784, HIDDEN)), ("2", (HIDDEN, 10))):
        b = 1.0 / math.sqrt(fin)
        out[name + ".weight"] = r.uniform(-b, b, (fout, fin)).astype(np.float32)
        out[name + ".bias"] = r.uniform(-b, b, (fout,)).astype(np.float32)
    return out


def parser(desc):
    ap = argparse.ArgumentParser(description=desc)
    ap.add_argument("--data", default=os.environ.get("FMNIST", "/usr/share/datasets/fashion-mnist"))
    ap.add_argument("--sampler", choices=["sghmc", "sgld"], default="sghmc")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--burn-in", type=int, default=10, help="epochs before the first sample")
    ap.add_argument("--no-eval", action="store_true", help="speed only: no predictive")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    return ap


class Predictive:
    """Running mean of the samples' test probabilities (float64) and its metrics."""

    def __init__(self, y_test):
        self.y = np.asarray(y_test)
        self.sum = None
        self.samples = 0
        self.seconds = 0.0

    def add(self, probs):
        p = np.asarray(probs, dtype=np.float64)
        self.sum = p if self.sum is None else self.sum + p
        self.samples += 1

    def metrics(self):
        if not self.samples:
            return float("nan"), float("nan")
        p = self.sum / self.samples
        err = float((p.argmax(1) != self.y).mean())
        nll = float(-np.log(np.maximum(p[np.arange(len(self.y)), self.y], 1e-300)).mean())
        return err, nll


class Clock:
    """Seconds spent inside training epochs only."""

    def __init__(self):
        self.seconds = 0.0
        self.epoch_seconds = []

    def run(self, fn):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        self.seconds += dt
        self.epoch_seconds.append(dt)
        return out


def report(peer, version, settings, a, clock, pred, steps, compile_seconds, extra=None):
    err, nll = pred.metrics()
    # the first epoch also pays lazy initialisation in some peers: report the rate without it too
    rest = clock.epoch_seconds[1:]
    d = {"peer": peer, "version": version, "sampler": a.sampler, "settings": settings, "seed": a.seed,
         "threads": a.threads, "device": a.device, "epochs": a.epochs, "burn_in": a.burn_in,
         "batch": BATCH, "steps": steps, "step_seconds": clock.seconds,
         "steps_per_second": steps / clock.seconds,
         "steps_per_second_after_first_epoch": (len(rest) * (steps // max(1, a.epochs))) / sum(rest) if rest else None,
         "compile_seconds": compile_seconds, "samples": pred.samples,
         "test_error": err, "test_nll": nll, "eval_seconds": pred.seconds}
    if extra:
        d.update(extra)
    print(json.dumps(d), flush=True)
    sys.stdout.flush()
