"""Your own CNN, your own PyTorch loop, posterior samples from sgmcmc.SGHMC.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/own_cnn.py      # from a CMake build
    python3 examples/python/own_cnn.py                                        # after pip install ./python

A small CNN (two conv layers, LayerNorm, dropout off while sampling) on 3,000 Fashion-MNIST training
images; classes 5–9 are held out as the out-of-distribution set (as `data.ood: classes` does), so
the model learns classes 0–4. The loop is plain PyTorch; sgmcmc supplies the sampler (one fused
C++ step per param group), the Gaussian prior with Gibbs-sampled precisions, the sample collector
(burn-in, thinning, the predictive averaged online, the binary's sample files) and the metrics.
Prints the test error, NLL and ECE of the averaged predictive against the last sample alone, and
the AUROC of telling held-out classes from known ones by the predictive's entropy and by the
mutual information (only a posterior has the latter).

``--lr auto`` chooses the step size by the binary's pilot (``sampler.lr: auto``) over this loop's own
steps, scored on 500 held-out training images (``opt.choose_lr``). ``--export DIR`` writes the same
network (TorchScript, its initial weights), the same splits and a config for ``sgmcmc train``, so the
binary's ``lr: auto`` run can be compared on the same data::

    python3 examples/python/own_cnn.py --lr auto --export /tmp/cnn
    build/sgmcmc train /tmp/cnn/config.yaml --out /tmp/cnn/run     # summary.json: test_nll
"""
import argparse
import gzip
import os
import struct

import torch
import torch.nn.functional as F

import sgmcmc

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
parser.add_argument("--train", type=int, default=3000)
parser.add_argument("--epochs", type=int, default=30)
parser.add_argument("--lr", default=None, help="step size η on ∇Ũ, or auto: the pilot's (default: 0.005 / N, an SGD-momentum rate of 0.1 on the mean loss at α = 0.05)")
parser.add_argument("--val", type=int, default=500, help="held-out training images the pilot scores on")
parser.add_argument("--export", default=None, help="write net.pt, data.pt and config.yaml for sgmcmc train here")
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--out", default=None, help="write the samples here (samples/sample_NNNNNN.pt)")
args = parser.parse_args()
torch.manual_seed(args.seed)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def idx(name):
    with gzip.open(os.path.join(args.data, name), "rb") as f:
        raw = f.read()
    dims = struct.unpack(">I", raw[:4])[0] & 0xFF
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(raw[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


x_all = idx("train-images-idx3-ubyte.gz").float().div(255).unsqueeze(1)
y_all = idx("train-labels-idx1-ubyte.gz").long()
known = y_all < 5
x, y = x_all[known][: args.train], y_all[known][: args.train]
x_val, y_val = x_all[known][args.train: args.train + args.val], y_all[known][args.train: args.train + args.val]
xt_all = idx("t10k-images-idx3-ubyte.gz").float().div(255).unsqueeze(1)
yt_all = idx("t10k-labels-idx1-ubyte.gz").long()
x_test, y_test = xt_all[yt_all < 5][:2000], yt_all[yt_all < 5][:2000]
x_ood = xt_all[yt_all >= 5][:2000]
N = x.shape[0]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.norm = torch.nn.LayerNorm(32 * 7 * 7)
        self.fc = torch.nn.Linear(32 * 7 * 7, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.norm(x.flatten(1)))


model = Net()
batch = 100
steps_per_epoch = N // batch
if args.export:
    os.makedirs(args.export, exist_ok=True)
    torch.jit.script(model).save(os.path.join(args.export, "net.pt"))
    torch.save({"x_train": x, "y_train": y, "x_val": x_val, "y_val": y_val, "x_test": x_test, "y_test": y_test},
               os.path.join(args.export, "data.pt"))
    with open(os.path.join(args.export, "config.yaml"), "w") as f:
        f.write(f"""name: own-cnn
seed: {args.seed}
data: {{format: tensors, path: {os.path.abspath(args.export)}/data.pt, task: classification}}
model: {{name: torchscript, path: {os.path.abspath(args.export)}/net.pt}}
prior: {{hyperprior: gamma, gibbs_start_epochs: 2}}
sampler: {{name: sghmc, lr: auto, alpha: 0.05}}
train: {{epochs: {args.epochs}, batch_size: {batch}, burn_in: {args.epochs // 3}, thin: {steps_per_epoch // 2}}}
""")
# One prior group (and one λ) per parameter tensor; η on ∇Ũ = N·(mean loss) + λθ.
lr = "auto" if args.lr == "auto" else float(args.lr) if args.lr is not None else 0.005 / N
opt = sgmcmc.SGHMC([{"params": [p], "name": n} for n, p in model.named_parameters()], lr=lr, alpha=0.05,
                   seed=args.seed)
prior = sgmcmc.GaussianPrior(opt, precision=1.0, hyperprior=(1.0, 1.0))
if lr == "auto":
    def minibatches():
        while True:
            yield from torch.randperm(N).split(batch)
    stream = minibatches()

    def train_step(o):
        b = next(stream)
        o.zero_grad()
        loss = F.cross_entropy(model(x[b]), y[b])
        (N * loss).backward()
        o.step()
        return loss

    def fresh_batch_loss():  # U's data term on a new minibatch: the gradient-noise cap's probe
        b = torch.randperm(N)[:batch]
        return N * F.cross_entropy(model(x[b]), y[b])

    choice = opt.choose_lr(train_step, lambda: F.cross_entropy(model(x_val), y_val, reduction="none"),
                           run_steps=steps_per_epoch * args.epochs, noise=fresh_batch_loss)
    print(f"lr auto: {choice.lr:.3g} ({choice.why}; {choice.seconds:.0f} s)")
collector = sgmcmc.SampleCollector(model, burn_in=steps_per_epoch * args.epochs // 3, thin=steps_per_epoch // 2,
                                   out_dir=os.path.join(args.out, "samples") if args.out else None, prior=prior)

step = 0
for epoch in range(args.epochs):
    for b in torch.randperm(N).split(batch):
        opt.zero_grad()
        loss = F.cross_entropy(model(x[b]), y[b])
        (N * loss).backward()  # ∇Ũ's likelihood part: the loss summed over the data set
        opt.step()
        step += 1
        if collector.due(step):
            with torch.no_grad():
                collector.add(step, test=model(x_test).softmax(-1), ood=model(x_ood).softmax(-1))
    if epoch >= 2:
        prior.gibbs_step()  # λ | θ ~ Gamma(α + n/2, β + ‖θ‖²/2) per tensor
    print(f"epoch {epoch + 1:3d}  loss {loss.item():.4f}  samples {collector.count}")

with torch.no_grad():
    last = sgmcmc.SampleCollector(model)
    last.add(step, test=model(x_test).softmax(-1), ood=model(x_ood).softmax(-1))
avg, one = collector.metrics("test", y_test), last.metrics("test", y_test)
ood = collector.ood_metrics("test", "ood")
print(f"\n{collector.count} samples averaged; last sample alone in brackets")
for k in ("error", "nll", "ece"):
    print(f"  test {k:5s} {avg[k]:.4f}   ({one[k]:.4f})")
print(f"  OOD (classes 5-9) AUROC: entropy {ood['ood_auroc_entropy']:.3f} "
      f"(last sample {last.ood_metrics('test', 'ood')['ood_auroc_entropy']:.3f}), "
      f"mutual information {ood['ood_auroc_mi']:.3f}")
