"""Convergence diagnostics over several chains (the core's ``src/metrics/convergence.h``).

split-R̂ (BDA3 §11.4): below 1.01 the chains agree; ESS (BDA3 §11.5, Geyer's initial positive
sequence): the draws' worth in independent ones, ~100 per chain is a usual floor for the mean.
"""
from __future__ import annotations

import torch

from . import _C

__all__ = ["split_rhat", "effective_sample_size"]


_ORDERS = {("draw", "chain"): False, ("chain", "draw"): True}


def _draws(draws, dims) -> torch.Tensor:
    t = torch.as_tensor(draws, dtype=torch.float64)
    if t.dim() == 1:  # one chain: nothing to confuse
        return t.unsqueeze(1).contiguous()
    if t.dim() != 2:
        raise ValueError(f"draws: expected [S] (one chain) or a 2-D array of draws and chains, got shape {tuple(t.shape)}")
    if dims is None:
        raise ValueError(f"draws of shape {tuple(t.shape)}: say which axis holds the chains, dims=('draw', 'chain') "
                         "or dims=('chain', 'draw') (ArviZ's order)")
    key = tuple(dims)
    if key not in _ORDERS:
        raise ValueError(f"dims: expected ('draw', 'chain') or ('chain', 'draw'), got {dims!r}")
    return (t.t() if _ORDERS[key] else t).contiguous()


def split_rhat(draws, dims=None) -> float:
    """split-R̂ of draws: [S] (one chain), or 2-D with ``dims`` naming its axes, ``("draw", "chain")`` or
    ``("chain", "draw")`` (ArviZ's); NaN below 4 draws a chain. A 2-D array without ``dims`` is refused:
    [4, 100] read the wrong way round is 100 chains of 4 draws."""
    return _C.split_rhat(_draws(draws, dims))


def effective_sample_size(draws, dims=None) -> float:
    """Multi-chain effective sample size of draws, shaped as for ``split_rhat``."""
    return _C.effective_sample_size(_draws(draws, dims))
