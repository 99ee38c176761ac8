"""sgmcmc.SGHMC and sgmcmc.SGLD on a correlated 2-D Gaussian target recover its moments.

The target: U(θ) = θᵀPθ/2 with P = Σ⁻¹, Σ = [[1, 0.9], [0.9, 1]], exact gradients. Both samplers
are then linear recursions z' = A z + ξ, ξ ~ N(0, Q), whose stationary covariance S solves the
discrete Lyapunov equation S = A S Aᵀ + Q exactly (it differs from Σ by the discretisation's
O(η) bias, which the test does not blur into its tolerance). C = 4,000 chains, one draw each after
a burn-in over which the transient ρ(A)^t has decayed below 1e-8, are independent draws from
N(0, S_θθ) (to that accuracy). For n independent draws the sample covariance's entry (i, j) has
standard deviation sqrt((S_ii S_jj + S_ij²) / n), and the sample mean's sqrt(S_ii / n); each is
checked within 4.5 standard deviations (a false alarm has probability below 1e-5 per check).
The prior path is exercised too: P = P_lik + λI with λθ added by the optimizer (prior_precision).
"""
import math

import pytest
import torch

import sgmcmc

SIGMA = torch.tensor([[1.0, 0.9], [0.9, 1.0]], dtype=torch.float64)
P = torch.linalg.inv(SIGMA)
LAMBDA = 0.25  # the part of P the optimizer adds as the prior's precision
P_LIK = P - LAMBDA * torch.eye(2, dtype=torch.float64)
CHAINS = 4000


def lyapunov(A, Q):
    S = Q.clone()
    for _ in range(100000):
        nxt = A @ S @ A.T + Q
        if torch.allclose(nxt, S, rtol=0, atol=1e-15):
            return nxt
        S = nxt
    raise AssertionError("Lyapunov iteration did not converge")


def burn_in_for(A):
    rho = torch.linalg.eigvals(A).abs().max().item()
    assert rho < 1
    return int(math.ceil(math.log(1e-8) / math.log(rho)))


def run(opt, theta, steps):
    for _ in range(steps):
        opt.zero_grad()
        with torch.no_grad():
            theta.grad.copy_(theta @ P_LIK)  # rows are chains; P is symmetric
        opt.step()
    return theta.detach().clone()


def check_moments(draws, S):
    n = draws.shape[0]
    mean = draws.mean(0)
    c = draws - mean
    cov = c.T @ c / (n - 1)
    for i in range(2):
        assert abs(mean[i].item()) < 4.5 * math.sqrt(S[i, i] / n), (mean, S)
        for j in range(2):
            sd = math.sqrt((S[i, i] * S[j, j] + S[i, j] ** 2) / n)
            assert abs(cov[i, j].item() - S[i, j].item()) < 4.5 * sd, (cov, S)


@pytest.mark.parametrize("integrator", ["euler"])
def test_sghmc_recovers_the_stationary_covariance(integrator):
    eta, alpha = 0.01, 0.1
    I = torch.eye(2, dtype=torch.float64)
    # v' = (1 − α)v − ηPθ + ξ,  θ' = θ + v'   (src/samplers/sghmc.h, Euler, β̂ = 0, T = 1)
    A = torch.cat([torch.cat([I - eta * P, (1 - alpha) * I], 1), torch.cat([-eta * P, (1 - alpha) * I], 1)], 0)
    q = 2 * eta * alpha
    Q = q * torch.cat([torch.cat([I, I], 1), torch.cat([I, I], 1)], 0)
    S = lyapunov(A, Q)[:2, :2]
    burn = burn_in_for(A)
    theta = torch.zeros(CHAINS, 2, dtype=torch.float64, requires_grad=True)
    opt = sgmcmc.SGHMC([theta], lr=eta, alpha=alpha, integrator=integrator, prior_precision=LAMBDA, seed=7)
    check_moments(run(opt, theta, burn), S)
    # the discretisation's bias is small: S is Σ to within 10 %
    assert torch.allclose(S, SIGMA, rtol=0.1, atol=0.1)


def test_sgld_recovers_the_stationary_covariance():
    eta = 0.02
    I = torch.eye(2, dtype=torch.float64)
    A = I - eta * P  # θ' = θ − ηPθ + N(0, 2ηI)
    S = lyapunov(A, 2 * eta * I)
    burn = burn_in_for(A)
    theta = torch.zeros(CHAINS, 2, dtype=torch.float64, requires_grad=True)
    opt = sgmcmc.SGLD([theta], lr=eta, prior_precision=LAMBDA, seed=11)
    check_moments(run(opt, theta, burn), S)


def test_fused_and_reference_paths_draw_the_same_noise():
    """The fused kernel and the per-parameter reference take the same Philox noise: one trajectory
    to float rounding."""
    out = []
    for fused in (True, False):
        theta = torch.zeros(64, 2, dtype=torch.float64, requires_grad=True)
        opt = sgmcmc.SGHMC([theta], lr=0.01, alpha=0.1, prior_precision=LAMBDA, seed=3)
        opt.fused = fused
        out.append(run(opt, theta, 50))
    assert torch.allclose(out[0], out[1], rtol=0, atol=1e-12)
