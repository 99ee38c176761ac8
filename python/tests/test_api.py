"""The package's pieces: options checked by the core, param groups, closures, the prior's Gibbs
step, schedules, diagnostics, the sample collector and its files, and sgmcmc.train in-process."""
import math
import os

import pytest
import torch

import sgmcmc


def param(n=4, dtype=torch.float32):
    return torch.zeros(n, dtype=dtype, requires_grad=True)


def test_registry_lists_every_sampler_with_a_class():
    names = set(sgmcmc.registry())
    classes = {c.name for c in (sgmcmc.SGLD, sgmcmc.PSGLD, sgmcmc.SGRLD, sgmcmc.SGHMC, sgmcmc.SGHMCNaive, sgmcmc.SGNHT,
                                sgmcmc.MSGNHT, sgmcmc.Santa, sgmcmc.HMC, sgmcmc.StochasticHMC, sgmcmc.SGNUTS, sgmcmc.SGD,
                                sgmcmc.SGDMomentum, sgmcmc.RMSprop, sgmcmc.Adam)}
    assert names == classes


def test_unknown_option_names_the_options():
    with pytest.raises(TypeError, match="alpah.*options: .*alpha"):
        sgmcmc.SGHMC([param()], lr=0.1, alpah=0.1)


def test_signature_and_docstring_show_the_options_with_their_defaults():
    """The options are keyword-only parameters with the core's defaults (its option tables), and the
    docstring lists each with its default and meaning."""
    import inspect
    import pydoc
    sig = inspect.signature(sgmcmc.SGHMC)
    ps = sig.parameters
    assert list(ps)[:2] == ["params", "lr"] and ps["lr"].default is inspect.Parameter.empty
    assert ps["alpha"].kind is inspect.Parameter.KEYWORD_ONLY and ps["alpha"].default == 0.01
    assert ps["noise_estimate"].default == "none" and ps["integrator"].default == "euler"
    assert ps["fisher_decay"].default == 0.99 and ps["temperature"].default == 1.0
    assert ps["prior_precision"].default == 0.0 and ps["seed"].default is None
    assert "alpha=0.01, noise_estimate='none'" in str(sig)
    assert inspect.signature(sgmcmc.SGNHT).parameters["xi_init"].default is None
    assert inspect.signature(sgmcmc.HMC).parameters["leapfrog_steps"].default == 50
    assert inspect.signature(sgmcmc.SGDMomentum).parameters["nesterov"].default is False
    assert "lr" not in list(inspect.signature(sgmcmc.SGD).parameters)[2:]
    doc = sgmcmc.SGHMC.__doc__
    assert "alpha=0.01 (real; in (0, 1]): momentum decay" in doc
    assert "noise_estimate='none' (choice; none | constant | fisher)" in doc
    assert "alpha=0.01" in pydoc.render_doc(sgmcmc.SGHMC, renderer=pydoc.plaintext)
    # every class: each core key but lr in the signature, its default the core's
    for name, info in sgmcmc.registry().items():
        cls = next(getattr(sgmcmc, n) for n in sgmcmc.optim.__all__[1:-1] if getattr(sgmcmc, n).name == name)
        keyword_only = [k for k, p in inspect.signature(cls).parameters.items() if p.kind is p.KEYWORD_ONLY]
        assert [k for k in info["keys"] if k != "lr"] == keyword_only[:-3], name  # then prior_precision, seed, generator
        assert cls.needs_closure == info["needs_closure"], name


def test_signature_defaults_are_what_the_core_uses():
    """Passing every option at its signature default builds the same chain as passing none."""
    import inspect
    for cls in (sgmcmc.SGHMC, sgmcmc.Santa, sgmcmc.PSGLD, sgmcmc.SGDMomentum):
        defaults = {k: p.default for k, p in inspect.signature(cls).parameters.items()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in ("prior_precision", "seed", "generator")}
        a, b = param(), param()
        oa, ob = cls([a], lr=1e-3, seed=3, **defaults), cls([b], lr=1e-3, seed=3)
        for _ in range(3):
            a.grad.fill_(0.5)
            b.grad.fill_(0.5)
            oa.step()
            ob.step()
        assert torch.equal(a, b), cls.__name__


def test_bad_values_are_refused_by_the_core():
    with pytest.raises(ValueError, match="alpha"):
        sgmcmc.SGHMC([param()], lr=0.1, alpha=2.0)
    with pytest.raises(ValueError, match="lr"):
        sgmcmc.SGLD([param()], lr=-1.0)
    with pytest.raises(ValueError, match="integrator"):
        sgmcmc.SGHMC([param()], lr=0.1, integrator="rk4")


def test_param_groups_after_construction_are_refused():
    opt = sgmcmc.SGLD([param()], lr=0.1, seed=1)
    with pytest.raises(RuntimeError, match="construction"):
        opt.add_param_group({"params": [param()]})


def test_group_lrs_scale_each_group_step():
    """SGD at T = 0 is deterministic: θ ← θ − lr·g per group, each group with its own lr."""
    a, b = param(), param()
    opt = sgmcmc.SGD([{"params": [a], "lr": 0.1}, {"params": [b], "lr": 0.3}], lr=0.1, seed=1)
    a.grad.fill_(1.0)
    b.grad.fill_(1.0)
    opt.step()
    assert torch.allclose(a, torch.full((4,), -0.1)) and torch.allclose(b, torch.full((4,), -0.3))
    opt.param_groups[1]["lr"] = 0.5
    opt.step()
    assert torch.allclose(b, torch.full((4,), -0.8))


def _sghmc_steps(opt, params, k):
    for _ in range(k):
        opt.zero_grad()
        sum(((i + 1) * p.square()).sum() for i, p in enumerate(params)).backward()
        opt.step()


def test_every_option_per_group_is_one_core_sampler_per_set_of_options():
    """Groups with their own alpha step exactly as one SGHMC per group over one generator, in the groups'
    order; every option is in every group (torch.optim's way), and the chain resumes bit for bit."""
    a, b, c = param(), param(3), param(2)
    groups = [{"params": [a]}, {"params": [b], "alpha": 0.2}, {"params": [c]}]
    opt = sgmcmc.SGHMC(groups, lr=0.01, alpha=0.05, seed=7)
    assert opt.param_groups[1]["alpha"] == 0.2 and opt.param_groups[0]["alpha"] == 0.05
    assert opt.param_groups[2]["integrator"] == "euler"  # the core's default, where nothing set it
    _sghmc_steps(opt, [a, b, c], 3)
    state = opt.state_dict()
    _sghmc_steps(opt, [a, b, c], 3)

    a2, b2, c2 = param(), param(3), param(2)
    gen = torch.Generator().manual_seed(7)
    first = sgmcmc.SGHMC([{"params": [a2]}, {"params": [c2], "lr": 0.01}], lr=0.01, alpha=0.05, generator=gen)
    second = sgmcmc.SGHMC([b2], lr=0.01, alpha=0.2, generator=gen)
    for _ in range(6):
        for o in (first, second):
            o.zero_grad()
        (a2.square().sum() + 2 * b2.square().sum() + 3 * c2.square().sum()).backward()
        first.step()
        second.step()
    assert torch.equal(a, a2) and torch.equal(b, b2) and torch.equal(c, c2)

    a3, b3, c3 = param(), param(3), param(2)
    again = sgmcmc.SGHMC([{"params": [a3]}, {"params": [b3], "alpha": 0.2}, {"params": [c3]}], lr=0.01,
                         alpha=0.05, seed=7)
    _sghmc_steps(again, [a3, b3, c3], 3)
    again.load_state_dict(state)
    _sghmc_steps(again, [a3, b3, c3], 3)
    assert torch.equal(a, a3) and torch.equal(b, b3) and torch.equal(c, c3)


def test_a_bad_group_option_names_the_group_and_the_key():
    with pytest.raises(ValueError, match=r"param group 1: sghmc\.alpha"):
        sgmcmc.SGHMC([{"params": [param()]}, {"params": [param()], "alpha": -1.0}], lr=0.1, seed=1)
    with pytest.raises(TypeError, match="param group 1: alpha"):
        sgmcmc.SGHMC([{"params": [param()]}, {"params": [param()], "alpha": [0.1]}], lr=0.1, seed=1)
    with pytest.raises(ValueError, match="param group 1: lr"):
        sgmcmc.SGHMC([{"params": [param()]}, {"params": [param()], "lr": -1.0}], lr=0.1, seed=1)
    with pytest.raises(ValueError, match="param group 0: prior_precision"):
        sgmcmc.SGHMC([{"params": [param()], "prior_precision": math.nan}], lr=0.1, seed=1)
    with pytest.raises(ValueError, match="same options"):
        sgmcmc.HMC([{"params": [param()]}, {"params": [param()], "leapfrog_steps": 3}], lr=0.1, seed=1)
    opt = sgmcmc.SGHMC([{"params": [param()]}, {"params": [param()], "alpha": 0.2}], lr=0.1, seed=1)
    opt.param_groups[1]["alpha"] = 0.3  # options are the core sampler's, made at construction
    with pytest.raises(ValueError, match="param group 1: alpha is set when the optimizer is made"):
        opt.step()


def test_prior_precision_adds_lambda_theta():
    """SGD with prior_precision λ and a zero likelihood gradient: θ ← θ(1 − lr·λ)."""
    p = torch.ones(3, requires_grad=True)
    opt = sgmcmc.SGD([p], lr=0.1, prior_precision=2.0, seed=1)
    opt.zero_grad()
    opt.step()
    assert torch.allclose(p, torch.full((3,), 0.8))


def test_set_to_none_gradients_are_taken_back():
    p = torch.zeros(3, requires_grad=True)
    opt = sgmcmc.SGD([p], lr=0.5, seed=1)
    opt.zero_grad(set_to_none=True)
    assert p.grad is None
    (p * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    opt.step()
    assert torch.allclose(p, torch.tensor([-0.5, -1.0, -1.5]))


def test_hmc_needs_a_closure_and_samples_a_gaussian_mean():
    x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = sgmcmc.HMC([x], lr=0.3, leapfrog_steps=5, prior_precision=1.0, seed=2)
    with pytest.raises(RuntimeError, match="closure"):
        opt.step()

    def closure():  # likelihood: N(x; 1, 1) observed once; with the N(0, 1) prior: posterior N(1/2, 1/2)
        opt.zero_grad()
        u = 0.5 * ((x - 1.0) ** 2).sum()
        u.backward()
        return u
    draws = []
    for _ in range(3000):
        opt.step(closure)
        draws.append(x.item())
    d = torch.tensor(draws[500:], dtype=torch.float64)
    # HMC draws are nearly independent here; ESS from the core's diagnostics sets the tolerance
    ess = sgmcmc.effective_sample_size(d, dims=("draw", "chain"))
    assert ess > 300
    assert abs(d.mean().item() - 0.5) < 4.5 * math.sqrt(0.5 / ess)


def test_gradient_noise_is_each_groups_ratio_and_leaves_grad_alone():
    # Two "minibatches" whose gradients are a and b: V = (a - b)^2 / 2 per coordinate, and SGLD's
    # ratio is lr * mean(V) / (2T) per group (golden values from the sampler's equation).
    w, v = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
    a_w, b_w = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([3.0, 2.0, -1.0])
    a_v, b_v = torch.tensor([0.5, 0.0]), torch.tensor([-0.5, 4.0])
    opt = sgmcmc.SGLD([{"params": [w], "lr": 0.1}, {"params": [v], "lr": 0.01}], lr=0.1, temperature=2.0, seed=1)
    w.grad, v.grad = torch.full((3,), 7.0), torch.full((2,), 7.0)
    calls = []

    def loss():
        k = len(calls) % 2
        calls.append(k)
        return (w * (a_w, b_w)[k]).sum() + (v * (a_v, b_v)[k]).sum()

    r = opt.gradient_noise(loss)
    var_w = ((a_w - b_w).double() ** 2 / 2).mean().item()
    var_v = ((a_v - b_v).double() ** 2 / 2).mean().item()
    assert r == pytest.approx([0.1 * var_w / 4, 0.01 * var_v / 4], rel=1e-12)
    assert len(calls) == 2
    assert torch.equal(w.grad, torch.full((3,), 7.0)) and torch.equal(v.grad, torch.full((2,), 7.0))
    # an optimizer injects no noise: no ratio
    sgd = sgmcmc.SGD([w], lr=0.1)
    assert all(math.isnan(x) for x in sgd.gradient_noise(loss))


def test_gibbs_step_draws_from_the_gamma_conditional():
    """λ | θ ~ Gamma(α + n/2, β + ‖θ‖²/2): with α = β = 1, n = 2,000 ones, mean (1 + 1,000)/(1 + 1,000) = 1
    and sd sqrt(1,001)/1,001 ≈ 0.032; the mean of 200 draws within 4.5 sd/sqrt(200)."""
    p = torch.ones(2000, requires_grad=True)
    opt = sgmcmc.SGLD([p], lr=1e-3, seed=1)
    prior = sgmcmc.GaussianPrior(opt, precision=5.0, hyperprior=(1.0, 1.0), seed=9)
    assert opt.param_groups[0]["prior_precision"] == 5.0
    draws = [prior.gibbs_step()[0] for _ in range(200)]
    assert opt.param_groups[0]["prior_precision"] == draws[-1]
    sd = math.sqrt(1001) / 1001
    assert abs(sum(draws) / 200 - 1.0) < 4.5 * sd / math.sqrt(200)


def test_standalone_prior_gradient_and_log_prob():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    prior = sgmcmc.GaussianPrior([w], precision=3.0, hyperprior=None)
    assert prior.neg_log_prob().item() == pytest.approx(3.0 * 5.0 / 2)
    w.grad = torch.zeros(2)
    prior.add_grad()
    assert torch.allclose(w.grad, torch.tensor([3.0, -6.0]))
    assert prior.gibbs_step() == [3.0]  # no hyperprior: fixed


def test_cyclical_schedule_explores_at_temperature_zero():
    p = param()
    opt = sgmcmc.SGLD([p], lr=0.2, seed=1)
    sched = sgmcmc.Schedule(opt, "cyclical", total_steps=100, cycles=2, explore_fraction=0.5)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.2) and opt.temperature == 0.0 and not sched.sampling
    for _ in range(25):
        sched.step()
    # cos(π/2): half the base lr, at the stage boundary
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1) and sched.sampling and opt.temperature == 1.0
    for _ in range(25):
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.2) and not sched.sampling


def test_exploration_needs_a_sampler_defined_at_zero_temperature():
    opt = sgmcmc.Santa([param()], lr=1e-3, data_size=10, seed=1)
    with pytest.raises(ValueError, match="explore_fraction"):
        sgmcmc.Schedule(opt, "cyclical", total_steps=100, cycles=2, explore_fraction=0.5)


def test_split_rhat_flags_chains_that_disagree():
    g = torch.Generator().manual_seed(0)
    same = torch.randn(1000, 4, generator=g, dtype=torch.float64)
    assert sgmcmc.split_rhat(same, dims=("draw", "chain")) < 1.01
    shifted = same + torch.tensor([0.0, 0.0, 0.0, 3.0], dtype=torch.float64)
    assert sgmcmc.split_rhat(shifted, dims=("draw", "chain")) > 1.1
    assert 3000 < sgmcmc.effective_sample_size(same, dims=("draw", "chain")) < 5000  # 4,000 independent draws


def test_collector_files_predictive_and_metrics(tmp_path):
    model = torch.nn.Linear(2, 3)
    opt = sgmcmc.SGLD(model.parameters(), lr=1e-3, seed=1)
    prior = sgmcmc.GaussianPrior(opt, precision=1.0, hyperprior=None)
    col = sgmcmc.SampleCollector(model, burn_in=2, thin=3, keep=True, out_dir=str(tmp_path / "samples"), prior=prior)
    x = torch.randn(10, 2)
    y = torch.randint(0, 3, (10,))
    for step in range(1, 12):
        opt.zero_grad()
        (10 * torch.nn.functional.cross_entropy(model(x), y)).backward()
        opt.step()
        if col.due(step):
            col.add(step, test=model(x).softmax(-1), ood=model(5 * x).softmax(-1))
    assert col.count == 3  # steps 5, 8, 11
    files = sgmcmc.load_samples(str(tmp_path))
    assert [f["step"] for f in files] == [5, 8, 11]
    assert set(files[0]) == {"weight", "bias", "step", "lambda.group0"}
    assert torch.equal(files[-1]["weight"], model.weight.detach())
    m = col.metrics("test", y)
    assert {"error", "nll", "ece", "brier", "mi"} <= set(m) and 0 <= m["error"] <= 1
    o = col.ood_metrics("test", "ood")
    assert 0 <= o["ood_auroc_entropy"] <= 1
    with pytest.raises(FileNotFoundError, match="no samples"):
        sgmcmc.load_samples(str(tmp_path / "nothing"))


@pytest.mark.skipif(not hasattr(sgmcmc._C, "train"), reason="sgmcmc._C built without the trainer (SGMCMC_PYTHON_ONLY)")
def test_train_runs_the_binary_trainer_in_process(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(120, 3)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.1 * torch.randn(120)
    torch.save({"x_train": x[:100], "y_train": y[:100], "x_test": x[100:], "y_test": y[100:]},
               str(tmp_path / "data.pt"))
    torch.jit.script(torch.nn.Linear(3, 1)).save(str(tmp_path / "model.pt"))
    config = {"seed": 3,
              "data": {"format": "tensors", "path": str(tmp_path / "data.pt"), "task": "regression"},
              "model": {"name": "torchscript", "path": str(tmp_path / "model.pt")},
              "sampler": {"name": "sghmc", "lr": 1e-3, "alpha": 0.1},
              "train": {"epochs": 40, "batch_size": 20, "threads": 1}}
    denormal = torch.full((4,), 1e-39)
    assert torch.set_flush_denormal(False) and (denormal * 1).count_nonzero() == 4
    s = sgmcmc.train(config, out=str(tmp_path / "run"))  # train.flush_denormal: true inside the run
    assert (denormal * 1).count_nonzero() == 4  # ... and the caller's setting back after it
    assert s["run_dir"] == str(tmp_path / "run") and s["finished"]
    assert s["test_rmse"] < 0.5  # the noise is 0.1; the trivial predictor's RMSE is ≈ 2.3
    assert len(sgmcmc.load_samples(s["run_dir"])) == s["samples"]
    with pytest.raises(ValueError, match="sampler.alpah: unknown key"):
        sgmcmc.train(dict(config, sampler={"name": "sghmc", "alpah": 0.1}), out=str(tmp_path / "bad"))
    assert not os.path.exists(tmp_path / "bad")


@pytest.mark.skipif(hasattr(sgmcmc._C, "train"), reason="sgmcmc._C has the trainer")
def test_train_without_the_trainer_says_how_to_get_it():
    with pytest.raises(RuntimeError, match="without the trainer .SGMCMC_PYTHON_ONLY.; build it with the whole core"):
        sgmcmc.train({"sampler": {"name": "sghmc"}})


def test_noise_precision_draws_from_its_gamma_conditional():
    # fixed residuals: τ | r ~ Gamma(α + n/2, β + Σr²/2); 4,000 Gibbs draws (independent given r) have its mean
    # and variance within 4 standard errors
    g = torch.Generator().manual_seed(2)
    r = 0.5 * torch.randn(50, generator=g, dtype=torch.float64)
    noise = sgmcmc.NoisePrecision(tau=1.0, alpha=2.0, beta=1.0, seed=7)
    draws = torch.tensor([noise.gibbs_step(r) for _ in range(4000)], dtype=torch.float64)
    shape, rate = 2.0 + 25, 1.0 + 0.5 * float((r * r).sum())
    mean, var = shape / rate, shape / rate ** 2
    assert abs(draws.mean().item() - mean) < 4 * math.sqrt(var / 4000)
    assert abs(draws.var().item() / var - 1) < 4 * math.sqrt(2 / 4000) + 0.02
    assert noise.tau == draws[-1].item()
    # nll at τ: Σ −log N(r; 0, 1/τ)
    want = -torch.distributions.Normal(0.0, 1 / math.sqrt(noise.tau)).log_prob(r).sum().item()
    assert abs(noise.nll(r).item() - want) < 1e-6 * abs(want)  # (torch.distributions in float32)
    with pytest.raises(ValueError, match="non-finite residuals"):
        noise.gibbs_step(torch.tensor([1.0, float("nan")]))
    with pytest.raises(ValueError, match="alpha: must be a finite number > 0"):
        sgmcmc.NoisePrecision(alpha=0)


def test_a_non_finite_gradient_is_refused_and_nothing_is_written():
    a, b = param(), param()
    opt = sgmcmc.SGHMC([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, seed=1)
    a.grad = torch.ones_like(a)
    b.grad = torch.ones_like(b)
    b.grad[1] = float("nan")
    before = [a.detach().clone(), b.detach().clone()]
    with pytest.raises(FloatingPointError, match=r"param group 1, parameter 0 \(4,\): 1 non-finite"):
        opt.step()
    assert torch.equal(a.detach(), before[0]) and torch.equal(b.detach(), before[1])
    opt.check_finite = False  # the flag that skips it: NaN goes through, as torch.optim's would
    opt.step()
    assert torch.isnan(b.detach()).any()
