"""A Python loop with sgmcmc's optimizers reproduces `sgmcmc train` bit for bit.

The binary's chain (src/train/run_setup.cpp) draws its minibatch permutations and its noise from
one CPU generator seeded 2·seed + 1; the Python loop shares a torch.Generator the same way. The
model is a TorchScript linear map without bias on inputs that are all zero, so the likelihood's
gradient is exactly 0 on both sides and ∇Ũ = λθ (λ = 2, a power of two: λθ is exact in float32
whichever side multiplies). What remains is the sampler's whole step (rule, noise, prior fold,
step count, generator use), which must agree in every bit after 20 steps.
"""
import os
import subprocess

import pytest
import torch

import sgmcmc

BINARY = os.environ.get("SGMCMC_TEST_BINARY")
N, SEED, STEPS, LAMBDA = 8, 5, 20, 2.0


@pytest.mark.skipif(not BINARY, reason="SGMCMC_TEST_BINARY (the built sgmcmc, set by ctest) not given")
@pytest.mark.parametrize("sampler,options", [
    ("sghmc", {"alpha": 0.05}),
    ("sgld", {}),
    ("msgnht", {}),
    ("psgld", {}),
])
def test_python_loop_equals_the_binary(tmp_path, sampler, options):
    torch.manual_seed(0)
    module = torch.jit.script(torch.nn.Linear(3, 1, bias=False))
    module.save(str(tmp_path / "model.pt"))
    zeros = torch.zeros(N, 3)
    y = torch.randn(N)
    torch.save({"x_train": zeros, "y_train": y, "x_val": zeros[:2], "y_val": y[:2], "x_test": zeros[:2],
                "y_test": y[:2]}, str(tmp_path / "data.pt"))
    lr = 1e-3
    opts = "".join(f"\n  {k}: {v}" for k, v in options.items())
    (tmp_path / "run.yaml").write_text(f"""
seed: {SEED}
data: {{format: tensors, path: {tmp_path / 'data.pt'}, task: regression}}
model: {{name: torchscript, path: {tmp_path / 'model.pt'}, noise_prior: fixed}}
prior: {{precision: {LAMBDA}, hyperprior: none}}
sampler:
  name: {sampler}
  lr: {lr}{opts}
train: {{epochs: {STEPS}, batch_size: {N}, burn_in: 0, threads: 1, require_healthy: false}}
output: {{save_samples: false}}
""")
    out = tmp_path / "run"
    subprocess.run([BINARY, "train", str(tmp_path / "run.yaml"), "--out", str(out), "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    binary_theta = sgmcmc.samples._load(str(out / "final.pt"))["weight"]  # torch >= 2.6 needs its allow-list

    w = torch.jit.load(str(tmp_path / "model.pt")).weight.detach().clone().requires_grad_(True)
    gen = torch.Generator().manual_seed(2 * SEED + 1)
    cls = {"sghmc": sgmcmc.SGHMC, "sgld": sgmcmc.SGLD, "msgnht": sgmcmc.MSGNHT, "psgld": sgmcmc.PSGLD}[sampler]
    opt = cls([w], lr=lr, prior_precision=LAMBDA, generator=gen, **options)
    for _ in range(STEPS):
        torch.randperm(N, generator=gen)  # the epoch's permutation (src/train/minibatches.cpp)
        opt.zero_grad()                   # the likelihood's gradient: exactly 0 here
        opt.step()
    assert not torch.equal(w.detach(), torch.jit.load(str(tmp_path / "model.pt")).weight)  # it moved
    assert torch.equal(w.detach(), binary_theta), (w, binary_theta)
