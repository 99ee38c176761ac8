"""A Gaussian likelihood's noise precision τ with a Gamma prior, resampled by Gibbs steps, as
``sgmcmc train`` does for ``model.noise_prior: gamma``:

    y_i ~ N(f(x_i), 1/τ),   τ ~ Gamma(α, β)  (shape α, rate β)
    Gibbs:  τ | r ~ Gamma(α + n/2, β + Σ r_i²/2)      (r_i = y_i − f(x_i) over the whole training set)

The conditional has the form of a Gaussian prior's λ given θ (``prior.py``), so the draw is the core's
(``src/priors/gaussian_prior.h``) with the residuals in θ's place: the same Gamma sampler as the binary's.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from . import _C
from .optim import _default_seed

__all__ = ["NoisePrecision"]


class NoisePrecision:
    """τ of y ~ N(f(x), 1/τ) under Gamma(α, β).

    ``nll(residuals)``: Σ −log N(r_i; 0, 1/τ) at the current τ (add it to the loss, times N/n for a
    minibatch, as the binary's Ũ has it). ``gibbs_step(residuals)``: a new τ from its conditional given the
    residuals of the whole training set (under ``torch.no_grad()``); returns it. ``tau``: the current value.
    """

    def __init__(self, tau: float = 1.0, alpha: float = 1.0, beta: float = 1.0, seed: Optional[int] = None):
        for name, v in (("tau", tau), ("alpha", alpha), ("beta", beta)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"NoisePrecision.{name}: must be a finite number > 0, got {v!r}")
        self.alpha, self.beta = float(alpha), float(beta)
        self.seed = _default_seed() if seed is None else int(seed)
        self._tau = float(tau)
        self._buffer: Optional[torch.Tensor] = None
        self._impl = None

    @property
    def tau(self) -> float:
        return self._tau

    def nll(self, residuals: torch.Tensor) -> torch.Tensor:
        r = residuals.reshape(-1)
        n = r.numel()
        return 0.5 * self._tau * (r * r).sum() - 0.5 * n * math.log(self._tau / (2 * math.pi))

    @torch.no_grad()
    def gibbs_step(self, residuals: torch.Tensor) -> float:
        r = residuals.detach().reshape(-1).to(torch.float64)
        if r.numel() == 0:
            raise ValueError("NoisePrecision.gibbs_step: no residuals")
        if not bool(torch.isfinite(r).all()):
            raise ValueError("NoisePrecision.gibbs_step: non-finite residuals")
        if self._buffer is None or self._buffer.numel() != r.numel() or self._buffer.device != r.device:
            # the core's prior holds the tensor it draws from: one buffer, refilled at each step (its
            # generator's state carries over when the buffer is remade)
            state = self._impl.generator_state() if self._impl is not None else None
            self._buffer = torch.zeros_like(r).requires_grad_(True)
            self._impl = _C.GaussianPrior([[self._buffer]], ["tau"], self._tau, True, self.alpha, self.beta, self.seed)
            if state is not None:
                self._impl.set_generator_state(state)
        self._buffer.copy_(r)
        self._impl.gibbs_step()
        self._tau = float(self._impl.precisions[0])
        return self._tau
