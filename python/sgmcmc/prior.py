"""Gaussian priors with Gamma hyperpriors on their precisions, resampled by Gibbs steps.

    θ_g ~ N(0, λ_g⁻¹ I),   λ_g ~ Gamma(α, β)  (shape α, rate β)
    Gibbs:  λ_g | θ_g ~ Gamma(α + n_g/2, β + ‖θ_g‖²/2)       (n_g: the entries of group g)

(Chen, Fox & Guestrin 2014, App. H.1, with α = β = 1.) The arithmetic and the Gamma draws are the
core's (``src/priors/gaussian_prior.h``), as in ``sgmcmc train``.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch

from . import _C
from .optim import SamplerOptimizer, _default_seed

__all__ = ["GaussianPrior"]


class GaussianPrior:
    """A N(0, 1/λ_g) prior per group, λ_g fixed or under a Gamma(α, β) hyperprior.

    ``GaussianPrior(optimizer, ...)``: one prior group per param group of an sgmcmc optimizer; the
    prior's gradient λ_g θ_g is then added inside the optimizer's step (each group's
    ``prior_precision`` holds λ_g, and ``gibbs_step()`` writes the new λ's there). Leave the prior
    out of the loss.

    ``GaussianPrior(params_or_groups, ...)``: standalone, over parameters (one group) or a list of
    param groups (dicts with ``params`` and optionally ``name``); add ``neg_log_prob()`` to the
    loss or call ``add_grad()`` after ``backward()``.

    ``hyperprior``: (α, β) of the Gamma hyperprior, or None to keep λ fixed. ``init``: the starting
    λ's: "precision" (``precision`` for every group), "prior_draw" (a draw from the hyperprior) or
    "init_scale" (n_g / ‖θ_g‖² at the current θ).
    """

    def __init__(self, target, precision: float = 1.0, hyperprior: Optional[Tuple[float, float]] = (1.0, 1.0),
                 init: str = "precision", seed: Optional[int] = None):
        self._optimizer = target if isinstance(target, SamplerOptimizer) else None
        groups = self._groups_of(target)
        names = [str(g.get("name", f"group{i}")) for i, g in enumerate(groups)]
        learn = hyperprior is not None
        alpha, beta = hyperprior if learn else (1.0, 1.0)
        self.seed = _default_seed() if seed is None else int(seed)
        self._impl = _C.GaussianPrior([list(g["params"]) for g in groups], names, float(precision), learn,
                                      float(alpha), float(beta), self.seed)
        self._impl.initialize(init)
        self.names: List[str] = names
        self._write()

    @staticmethod
    def _groups_of(target) -> List[dict]:
        if isinstance(target, torch.optim.Optimizer):
            return target.param_groups
        if isinstance(target, torch.Tensor):
            return [{"params": [target]}]
        items = list(target)
        if not items:
            raise ValueError("GaussianPrior: no parameters")
        if isinstance(items[0], dict):
            return [dict(g, params=list(g["params"])) for g in items]
        return [{"params": items}]

    def _write(self) -> None:
        if self._optimizer is not None:
            for g, lam in zip(self._optimizer.param_groups, self._impl.precisions):
                g["prior_precision"] = lam

    @property
    def precisions(self) -> List[float]:
        """λ_g of every group."""
        return list(self._impl.precisions)

    @precisions.setter
    def precisions(self, values: Sequence[float]) -> None:
        self._impl.precisions = [float(v) for v in values]
        self._write()

    @property
    def learned(self) -> bool:
        return self._impl.learned

    def gibbs_step(self) -> List[float]:
        """Draws every λ_g from its conditional given the current θ (a no-op without a hyperprior);
        returns the new λ's."""
        self._impl.gibbs_step()
        self._write()
        return self.precisions

    def neg_log_prob(self) -> torch.Tensor:
        """Σ_g λ_g ‖θ_g‖² / 2 (differentiable; the constant dropped)."""
        return self._impl.neg_log_prob()

    @torch.no_grad()
    def add_grad(self) -> None:
        """Adds λ_g θ_g to every parameter's ``.grad``."""
        self._impl.add_grad()

    def log_values(self) -> dict:
        """{"lambda.<group>": λ}, the scalars the binary writes into each sample file."""
        return {f"lambda.{n}": lam for n, lam in zip(self.names, self.precisions)}

    def state_dict(self) -> dict:
        blob = bytearray(self._impl.generator_state())
        return {"precisions": self.precisions, "seed": self.seed,
                "generator": torch.frombuffer(blob, dtype=torch.uint8).clone()}

    def load_state_dict(self, state: dict) -> None:
        self.precisions = state["precisions"]
        self.seed = int(state["seed"])
        self._impl.set_generator_state(state["generator"].cpu().numpy().tobytes())
