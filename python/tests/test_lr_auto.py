"""lr="auto": the binary's pilot over a Python loop's own steps, on a target whose stable steps are known.

The target (float32, so that a diverging trial overflows within its 100 steps): Bayesian linear regression y = Xw + ε, ε ~ N(0, 1), with full-batch gradients, so U's data
term is ½‖Xθ − y‖² and its Hessian H = XᵀX. SGLD's mean then follows θ' = (I − ηH)θ + ηXᵀy, which is
stable exactly when η < 2/λ_max(H); the features are scaled so that this limit (about 8e-4) lies inside
the pilot's grid (SGLD's default step 1e-4 times 4^-5 .. 4^2), so the grid's top steps are unstable. The
pilot keeps a factor of 2 below the plateau's top, so the choice must lie below half the limit; a trial
of 100 steps settles at a step above 1/(4·λ_min) (the slowest direction contracts by (1 − ηλ_min)^100),
so the choice must not fall far below that either: a factor of 16 is what the grid and the halving allow.
"""
import math

import pytest
import torch

import sgmcmc

N, D, VAL = 200, 5, 100


def problem(seed=0):
    g = torch.Generator().manual_seed(seed)
    X = 3 * torch.randn(N + VAL, D, generator=g)
    w = torch.randn(D, generator=g)
    y = X @ w + torch.randn(N + VAL, generator=g)
    return X[:N], y[:N], X[N:], y[N:]


def hessian_eigenvalues(X):
    return torch.linalg.eigvalsh(X.double().T @ X.double())


def loop(theta, X, y, Xv, yv):
    def train_step(opt):
        opt.zero_grad()
        loss = 0.5 * ((X @ theta - y) ** 2).sum()  # ∇Ũ's data term on the whole set
        loss.backward()
        opt.step()
        return loss

    def val_nll():
        return 0.5 * (Xv @ theta - yv) ** 2 + 0.5 * math.log(2 * math.pi)

    return train_step, val_nll


def test_lr_auto_picks_a_stable_step_on_a_known_target(capsys):
    X, y, Xv, yv = problem()
    eig = hessian_eigenvalues(X)
    limit, slow = 2 / eig[-1].item(), 1 / (4 * eig[0].item())
    theta = torch.zeros(D, requires_grad=True)
    opt = sgmcmc.SGLD([theta], lr="auto", seed=3)
    train_step, val_nll = loop(theta, X, y, Xv, yv)
    with pytest.raises(RuntimeError, match="choose_lr"):
        train_step(opt)  # no step before the pilot

    with pytest.raises(ValueError, match="after optimizer.choose_lr"):
        sgmcmc.Schedule(opt, "polynomial", b=1.0, gamma=0.55)  # it would scale the placeholder step

    choice = opt.choose_lr(train_step, val_nll, steps=100)
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("  trial ") for line in lines) == len(choice.trials) >= 10
    assert choice.lr < limit / 2, choice.why
    assert choice.lr > slow / 16, choice.why
    assert any(not t["stable"] for t in choice.trials if t["lr"] > limit)
    assert all(t["stable"] for t in choice.trials if t["lr"] < limit / 2)
    assert any(t["stable"] and t["lr"] in (choice.lr, 2 * choice.lr) for t in choice.trials)
    assert choice.steps_per_trial == 100 and choice.seconds > 0 and choice.why
    assert opt.param_groups[0]["lr"] == choice.lr and opt.lr_choice is choice

    # the parameters are back where they started, and the run itself steps them
    assert torch.equal(theta.detach(), torch.zeros(D))
    for _ in range(200):
        loss = train_step(opt)
    assert math.isfinite(loss.item()) and opt.steps == 200
    w_hat = torch.linalg.solve(X.T @ X, X.T @ y)
    assert (theta.detach() - w_hat).norm() < 1.0  # near the posterior's mean (sd about 0.03 per weight)


def test_choose_lr_over_any_optimizer_and_the_same_choice_twice():
    X, y, Xv, yv = problem(1)
    theta = torch.zeros(D, requires_grad=True)
    train_step, val_nll = loop(theta, X, y, Xv, yv)

    def make(lr):
        return sgmcmc.SGLD([theta], lr=lr, seed=5)

    a = sgmcmc.choose_lr(make, train_step, val_nll, run_steps=1000, verbose=False)
    b = sgmcmc.choose_lr(make, train_step, val_nll, run_steps=1000, verbose=False)
    assert a.steps_per_trial == 100  # a fiftieth of the run, at least 100
    assert a.lr == b.lr and [t["val_nll"] for t in a.trials] == pytest.approx([t["val_nll"] for t in b.trials],
                                                                              nan_ok=True)
    # torch's own optimizer: the centre must be given
    c = sgmcmc.choose_lr(lambda lr: torch.optim.SGD([theta], lr=lr), train_step, val_nll, steps=100,
                         around=1e-4, verbose=False)
    assert c.lr < 2 / hessian_eigenvalues(X)[-1].item() / 2
    with pytest.raises(TypeError, match="around"):
        sgmcmc.choose_lr(lambda lr: torch.optim.SGD([theta], lr=lr), train_step, val_nll, steps=100)
    with pytest.raises(TypeError, match="run_steps"):
        sgmcmc.choose_lr(make, train_step, val_nll)
