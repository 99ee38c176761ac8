"""Samples out to ArviZ: ``to_inference_data`` makes an ``arviz.InferenceData`` (chains and draws in ArviZ's
order) from a run directory of ``sgmcmc train`` or from a ``SampleCollector`` that kept its samples.

ArviZ is an optional dependency (``pip install arviz``); everything else of the package works without it.
"""
from __future__ import annotations

import glob
import math
import os
from typing import Dict, Iterable, List, Optional, Sequence

import torch

__all__ = ["to_inference_data"]

_SCALAR_KEYS = ("step", "checksum")


def _arviz():
    try:
        import arviz  # noqa: F401
    except ImportError as e:  # pragma: no cover - the message is the point
        raise ImportError("sgmcmc.to_inference_data needs ArviZ: pip install arviz") from e
    return arviz


def _samples_of(source) -> List[dict]:
    from .samples import SampleCollector, load_samples
    if isinstance(source, SampleCollector):
        if not source.samples:
            raise ValueError("to_inference_data: the SampleCollector kept no samples (make it with keep=True)")
        return source.samples
    if isinstance(source, (str, os.PathLike)):
        return load_samples(os.fspath(source))
    raise TypeError(f"to_inference_data: expected a run directory or a SampleCollector, got {type(source).__name__}")


def _chains_of(run_dir: Optional[str]) -> int:
    """The run's `chains: C` (its parameters stacked [C, ...]); 1 for a plain run or a collector."""
    if run_dir is None:
        return 1
    path = os.path.join(run_dir, "summary.json")
    if os.path.exists(path):
        import json
        with open(path) as f:
            c = json.load(f).get("chains", 1)
        return max(int(c or 1), 1)
    return 1


def to_inference_data(source, *, var_names: Optional[Sequence[str]] = None,
                      predictive: Optional[str] = None) -> "arviz.InferenceData":
    """An ``arviz.InferenceData`` of a run's samples.

    ``source``: a run directory (``sgmcmc train``'s: ``samples/sample_*.pt``), a ``SampleCollector`` made with
    ``keep=True``, or a list of either (runs of one chain each, e.g. seeds: they become the chains, cut to the
    shortest). The posterior group holds each parameter tensor (``var_names``: which; default all) and the
    scalars the samples carry (``lambda.<group>``, ``tau``) with dims (chain, draw, *shape): a run with
    ``chains: C`` gives C chains (its parameters are stacked [C, ...]), any other source one chain.

    ``predictive``: a ``predictive.pt`` written by ``sgmcmc predict RUN --per-sample`` on data with targets; its
    per-sample predictions give the posterior_predictive group (``y``: class probabilities [.., n, K] or means
    [.., n]), the observed data, and the pointwise log-likelihood of each test point (``log_likelihood``, so that
    ``az.loo`` and ``az.waic`` work): log p_s(y) for classification, log N(y; f_s, 1/τ_s) for regression (τ_s the
    sample's own, else 1). Its samples are one chain, in the order ``predict`` averaged them.
    """
    az = _arviz()
    import numpy as np
    if isinstance(source, (list, tuple)):  # several sources: one chain each
        return _several(az, source, var_names)
    samples = _samples_of(source)
    run_dir = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    chains = _chains_of(run_dir)
    names = [k for k, v in samples[0].items() if torch.is_tensor(v)]
    if var_names is not None:
        unknown = [n for n in var_names if n not in names]
        if unknown:
            raise KeyError(f"to_inference_data: no parameter {unknown[0]!r} in the samples (have: {', '.join(names)})")
        names = list(var_names)
    posterior: Dict[str, "np.ndarray"] = {}
    for n in names:
        stacked = torch.stack([s[n].detach().to(torch.float64).cpu() for s in samples])  # [draw, ...]
        if chains > 1:
            if stacked.dim() < 2 or stacked.shape[1] != chains:
                raise ValueError(f"{n}: expected its chains stacked first ([{chains}, ...]), got {tuple(stacked.shape[1:])}")
            stacked = stacked.transpose(0, 1)  # [chain, draw, ...]
        else:
            stacked = stacked.unsqueeze(0)
        posterior[n] = stacked.numpy()
    for k in samples[0]:
        if k in _SCALAR_KEYS or torch.is_tensor(samples[0][k]) or ".chain" in k:
            continue
        values = [float(s[k]) for s in samples if k in s]
        if len(values) == len(samples):
            if chains > 1 and all(f"{k}.chain{c}" in samples[0] for c in range(chains)):
                posterior[k] = np.array([[float(s[f"{k}.chain{c}"]) for s in samples] for c in range(chains)])
            else:
                posterior[k] = np.array(values)[None, :]
    groups = {"posterior": posterior}
    sample_stats = {}
    if all("step" in s for s in samples):
        steps = np.array([float(s["step"]) for s in samples])
        sample_stats["step"] = np.broadcast_to(steps, (chains, len(samples))).copy()
    if predictive is not None:
        groups.update(_predictive_groups(predictive, samples if chains == 1 else None))
    return az.from_dict(posterior=posterior, sample_stats=sample_stats or None,
                        posterior_predictive=groups.get("posterior_predictive"),
                        log_likelihood=groups.get("log_likelihood"),
                        observed_data=groups.get("observed_data"))


def _several(az, sources, var_names) -> "arviz.InferenceData":
    """Runs or collectors of one chain each (seeds of one config) as the chains of one InferenceData,
    cut to the shortest."""
    parts = [to_inference_data(s, var_names=var_names) for s in sources]
    if any(p.posterior.sizes["chain"] != 1 for p in parts):
        raise ValueError("to_inference_data: a list of sources takes runs of one chain each")
    draws = min(p.posterior.sizes["draw"] for p in parts)
    import xarray as xr
    cut = [p.isel(draw=slice(0, draws)) for p in parts]
    posterior = xr.concat([c.posterior for c in cut], dim="chain")
    posterior = posterior.assign_coords(chain=range(len(cut)))
    groups = {"posterior": posterior}
    if all("sample_stats" in c.groups() for c in cut):
        groups["sample_stats"] = xr.concat([c.sample_stats for c in cut], dim="chain").assign_coords(chain=range(len(cut)))
    return az.InferenceData(**groups)


def _predictive_groups(path: str, samples: Optional[List[dict]]) -> dict:
    import numpy as np
    from .samples import _load
    p = _load(path)
    if "per_sample" not in p:
        raise ValueError(f"{path}: no per_sample predictions (write it with sgmcmc predict RUN --per-sample)")
    if "targets" not in p:
        raise ValueError(f"{path}: no targets (predict on data with targets for the log-likelihood)")
    per = p["per_sample"].to(torch.float64)  # [S, n, K] or [S, n]
    y = p["targets"]
    if per.dim() == 3:  # classification
        probs = per.clamp_min(1e-300)
        ll = probs.gather(2, y.long().view(1, -1, 1).expand(per.shape[0], -1, 1)).squeeze(2).log()
    else:
        taus = [float(s.get("tau", 1.0)) for s in samples] if samples and len(samples) == per.shape[0] else [1.0] * per.shape[0]
        tau = torch.tensor(taus, dtype=torch.float64).view(-1, 1)
        ll = 0.5 * (tau / (2 * math.pi)).log() - 0.5 * tau * (per - y.to(torch.float64).view(1, -1)) ** 2
    return {"posterior_predictive": {"y": per.numpy()[None]},
            "log_likelihood": {"y": ll.numpy()[None]},
            "observed_data": {"y": y.numpy()}}
