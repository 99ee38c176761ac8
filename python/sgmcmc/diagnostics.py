"""Convergence diagnostics over several chains (the core's ``src/metrics/convergence.h``).

split-R̂ (BDA3 §11.4): below 1.01 the chains agree; ESS (BDA3 §11.5, Geyer's initial positive
sequence): the draws' worth in independent ones, ~100 per chain is a usual floor for the mean.
"""
from __future__ import annotations

import torch

from . import _C

__all__ = ["split_rhat", "effective_sample_size"]


def _draws(draws) -> torch.Tensor:
    t = torch.as_tensor(draws, dtype=torch.float64)
    if t.dim() == 1:
        t = t.unsqueeze(1)
    if t.dim() != 2:
        raise ValueError(f"draws: expected [S] or [S, C] (S draws of C chains), got shape {tuple(t.shape)}")
    return t.contiguous()


def split_rhat(draws) -> float:
    """split-R̂ of draws [S, C] (S draws in order in each of C chains); NaN below 4 draws a chain."""
    return _C.split_rhat(_draws(draws))


def effective_sample_size(draws) -> float:
    """Multi-chain effective sample size of draws [S, C]."""
    return _C.effective_sample_size(_draws(draws))
