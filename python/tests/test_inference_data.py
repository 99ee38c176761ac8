"""Samples out to ArviZ (sgmcmc.to_inference_data) and the diagnostics' axis order.

The ArviZ tests run where ArviZ is installed (pip install arviz) and are skipped otherwise; the axis-order
tests always run.
"""
import json
import os
import subprocess

import pytest
import torch

import sgmcmc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_diagnostics_refuse_an_ambiguous_shape_and_read_arviz_order():
    g = torch.Generator().manual_seed(1)
    draws = torch.randn(400, 4, generator=g, dtype=torch.float64)  # [draw, chain]
    with pytest.raises(ValueError, match="say which axis holds the chains"):
        sgmcmc.split_rhat(draws)
    with pytest.raises(ValueError, match="dims: expected"):
        sgmcmc.split_rhat(draws, dims=("draws", "chains"))
    a = sgmcmc.split_rhat(draws, dims=("draw", "chain"))
    b = sgmcmc.split_rhat(draws.t(), dims=("chain", "draw"))
    assert a == b and a < 1.02
    assert sgmcmc.effective_sample_size(draws.t(), dims=("chain", "draw")) == \
        sgmcmc.effective_sample_size(draws, dims=("draw", "chain"))
    # one chain needs no dims
    assert sgmcmc.split_rhat(draws[:, 0]) == sgmcmc.split_rhat(draws[:, :1], dims=("draw", "chain"))


def _collector_run(seed, steps=2000):
    module = torch.nn.Module()
    module.x = torch.nn.Parameter(torch.zeros(3))
    opt = sgmcmc.SGLD(module.parameters(), lr=0.05, seed=seed)
    col = sgmcmc.SampleCollector(module, burn_in=200, thin=1, keep=True)
    m = torch.tensor([1.0, -2.0, 0.5])
    for t in range(1, steps + 1):
        opt.zero_grad()
        module.x.grad.copy_(module.x.detach() - m)  # U = |x - m|²/2: the target N(m, I)
        opt.step()
        if col.due(t):
            col.add(t)
    return col


def test_collectors_to_arviz_agree_with_the_packages_diagnostics():
    az = pytest.importorskip("arviz")
    cols = [_collector_run(seed) for seed in (1, 2, 3, 4)]  # four chains
    idata = sgmcmc.to_inference_data(cols)
    post = idata.posterior["x"]
    assert post.dims[:2] == ("chain", "draw") and post.shape == (4, 1800, 3)
    draws = post.values[:, :, 1]  # [chain, draw]
    assert abs(draws.mean() + 2.0) < 0.2
    ours = sgmcmc.split_rhat(torch.as_tensor(draws), dims=("chain", "draw"))
    theirs = float(az.rhat(idata, var_names=["x"], method="split")["x"].values[1])
    assert abs(ours - theirs) < 1e-6
    ess_ours = sgmcmc.effective_sample_size(torch.as_tensor(draws), dims=("chain", "draw"))
    ess_theirs = float(az.ess(idata, var_names=["x"], method="mean")["x"].values[1])
    assert abs(ess_ours / ess_theirs - 1) < 0.15
    assert "step" in idata.sample_stats
    assert float(az.summary(idata, var_names=["x"])["r_hat"].max()) < 1.1  # ArviZ's rank-normalized R̂


@pytest.mark.skipif(not os.environ.get("SGMCMC_TEST_BINARY"), reason="needs the binary (SGMCMC_TEST_BINARY)")
def test_run_directory_to_arviz_with_pointwise_log_likelihood(tmp_path):
    az = pytest.importorskip("arviz")
    import numpy as np
    exe = os.environ["SGMCMC_TEST_BINARY"]
    run = str(tmp_path / "run")
    # the breast cancer set of docs/logistic_regression.md, full batch: 900 well-mixed samples in ~2 s
    subprocess.run([exe, "train", os.path.join(ROOT, "configs", "breast_cancer_lr_sghmc_s.yaml"), "--out", run, "--quiet",
                    "--set", "output.progress=false", "--set", "train.threads=1", "--set", "train.batch_size=455",
                    "--set", "train.steps=20000", "--set", "train.burn_in_steps=2000", "--set", "train.thin=20",
                    "--set", "sampler.lr=2e-3", "--set", "output.max_samples=1000"], check=True, cwd=ROOT)
    pred = str(tmp_path / "p.pt")
    subprocess.run([exe, "predict", run, "--per-sample", "--predictive", pred, "--quiet",
                    "--out", str(tmp_path / "predict.json")], check=True, cwd=ROOT)
    idata = sgmcmc.to_inference_data(run, predictive=pred)
    assert idata.posterior["weight"].shape[:2] == (1, 900)
    assert any(k.startswith("lambda.") for k in idata.posterior.data_vars)
    with open(tmp_path / "predict.json") as f:
        nll = json.load(f)["test_nll"]
    ll = idata.log_likelihood["y"].values[0]  # [draw, n]
    n = ll.shape[1]
    # the pointwise log-likelihood is the binary's: its log predictive density is -n * test_nll
    lppd = np.log(np.exp(ll).mean(0)).sum()
    assert abs(lppd + n * nll) < 1e-4 * n * nll
    # az.loo and az.waic run on it (on held-out points PSIS's weights 1/p_s are heavy-tailed: LOO is for the
    # training points, which `sgmcmc predict RUN --data train.pt --per-sample` gives)
    loo = az.loo(idata)
    assert np.isfinite(float(loo.elpd_loo)) and loo.n_data_points == n
    assert np.isfinite(float(az.waic(idata).elpd_waic))
    with pytest.raises(KeyError, match="no parameter 'nope'"):
        sgmcmc.to_inference_data(run, var_names=["nope"])
