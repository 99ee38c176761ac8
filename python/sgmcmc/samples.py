"""Posterior samples in a Python loop: burn-in, thinning, the predictive averaged online, and the
binary's sample files (``samples/sample_NNNNNN.pt``, which ``sgmcmc predict`` and
``sgmcmc.load_samples`` read)."""
from __future__ import annotations

import glob
import os
from typing import Dict, List, Optional

import torch

from . import _C

__all__ = ["SampleCollector", "load_samples", "save_sample"]


def save_sample(path: str, model: torch.nn.Module, scalars: Optional[Dict[str, float]] = None) -> None:
    """Writes ``model``'s parameters and buffers (CPU copies) and ``scalars`` as one dict, the
    binary's parameter-file format, atomically (a temporary file renamed into place)."""
    d = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    for k, v in (scalars or {}).items():
        if k not in d:
            d[k] = v
    tmp = path + ".tmp"
    torch.save(d, tmp)
    os.replace(tmp, path)


def load_samples(run_dir: str) -> List[dict]:
    """The saved samples of a run (``sgmcmc train``'s or a ``SampleCollector``'s ``out_dir``), in
    order: one dict per sample, {parameter or buffer name: tensor, "step": int, "lambda.<group>":
    float, ...}, which ``module.load_state_dict`` takes after dropping the scalars."""
    d = run_dir if os.path.basename(os.path.normpath(run_dir)) == "samples" else os.path.join(run_dir, "samples")
    files = sorted(glob.glob(os.path.join(d, "sample_*.pt")))
    if not files:
        raise FileNotFoundError(f"{run_dir}: no samples/sample_*.pt (the run kept none: output.save_samples "
                                "false, or no step after burn-in)")
    return [_load(f) for f in files]


def _load(path: str) -> dict:
    # The binary writes its dicts with torch::pickle_save, whose pickles name
    # torch.jit._pickle.restore_type_tag: torch >= 2.6 loads them with weights_only=True only with that
    # function allowed (torch.serialization.safe_globals, torch >= 2.5); older torch has no such check.
    try:
        from torch.serialization import safe_globals
        from torch.jit._pickle import restore_type_tag
    except ImportError:
        return torch.load(path, map_location="cpu")
    with safe_globals([restore_type_tag]):
        return torch.load(path, map_location="cpu", weights_only=True)


class SampleCollector:
    """Keeps a chain's samples after ``burn_in`` steps, every ``thin``-th, and averages its
    predictions online.

    ``due(step)``: whether the state after ``step`` completed steps is a sample (and, with a
    ``Schedule``, whether the schedule is in a sampling stage). ``add(step, **predictions)``:
    records the sample: its parameters into memory (``keep=True``) and into ``out_dir`` as the
    binary's sample files, and each named prediction into the running averages:
    classification: class probabilities [n, K] (p̄ and E_m H(p_m) are kept); regression: predictive
    means [n] with ``tau`` (the noise precision; p̄'s variance is E[1/τ] + Var f).
    ``metrics(name, targets)`` and ``ood_metrics(name_in, name_ood)`` are the binary's metrics.
    """

    def __init__(self, model: torch.nn.Module, *, burn_in: int = 0, thin: int = 1, keep: bool = False,
                 out_dir: Optional[str] = None, schedule=None, prior=None):
        if burn_in < 0 or thin < 1:
            raise ValueError(f"SampleCollector: burn_in >= 0 and thin >= 1, got {burn_in}, {thin}")
        self.model, self.burn_in, self.thin, self.keep = model, int(burn_in), int(thin), keep
        self.out_dir, self.schedule, self.prior = out_dir, schedule, prior
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
        self.samples: List[dict] = []
        self.count = 0
        self._sum: Dict[str, torch.Tensor] = {}
        self._sum_entropy: Dict[str, torch.Tensor] = {}
        self._sum_sq: Dict[str, torch.Tensor] = {}
        self._sum_inv_tau: Dict[str, float] = {}
        self._n: Dict[str, int] = {}

    def due(self, step: int) -> bool:
        if step <= self.burn_in or (step - self.burn_in) % self.thin != 0:
            return False
        return self.schedule is None or self.schedule.sampling

    @torch.no_grad()
    def add(self, step: int, tau: Optional[float] = None, **predictions: torch.Tensor) -> None:
        scalars = {"step": int(step)}
        if self.prior is not None:
            scalars.update(self.prior.log_values())
        if self.out_dir:
            save_sample(os.path.join(self.out_dir, f"sample_{self.count:06d}.pt"), self.model, scalars)
        if self.keep:
            d = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
            d.update(scalars)
            self.samples.append(d)
        for name, p in predictions.items():
            p = p.detach().to(torch.float64)
            if name not in self._sum:
                self._sum[name] = torch.zeros_like(p)
                self._n[name] = 0
                if p.dim() == 2:
                    self._sum_entropy[name] = torch.zeros(p.shape[0], dtype=torch.float64, device=p.device)
                else:
                    self._sum_sq[name] = torch.zeros_like(p)
                    self._sum_inv_tau[name] = 0.0
            self._sum[name] += p
            self._n[name] += 1
            if p.dim() == 2:
                self._sum_entropy[name] += _C.entropy(p)
            else:
                if tau is None:
                    raise ValueError(f"SampleCollector.add: regression prediction '{name}' needs tau")
                self._sum_sq[name] += p * p
                self._sum_inv_tau[name] += 1.0 / float(tau)
        self.count += 1

    def predictive(self, name: str) -> dict:
        """{"mean", "expected_entropy"} (classification) or {"mean", "variance"} (regression)."""
        if name not in self._sum:
            raise KeyError(f"SampleCollector: no prediction '{name}' added")
        n = self._n[name]
        mean = self._sum[name] / n
        if mean.dim() == 2:
            return {"mean": mean, "expected_entropy": self._sum_entropy[name] / n}
        var = (self._sum_sq[name] / n - mean * mean).clamp_min(0) + self._sum_inv_tau[name] / n
        return {"mean": mean, "variance": var}

    def metrics(self, name: str, targets: torch.Tensor, tau: float = 1.0) -> Dict[str, float]:
        """error, nll, brier, ece, mce, entropy, mi (classification) or rmse, nll, cover/width
        (regression) of the averaged predictive, as ``sgmcmc train`` reports them."""
        p = self.predictive(name)
        cls = p["mean"].dim() == 2
        return dict(_C.predictive_metrics(p["mean"].cpu(), targets.cpu(), cls, tau,
                                          expected_entropy=p["expected_entropy"].cpu() if cls else None,
                                          variance=None if cls else p["variance"].cpu()))

    def ood_metrics(self, in_name: str, ood_name: str) -> Dict[str, float]:
        """AUROC / AUPR of telling ``ood_name``'s points from ``in_name``'s by the predictive
        entropy and by the mutual information."""
        a, b = self.predictive(in_name), self.predictive(ood_name)
        return dict(_C.ood_metrics(a["mean"].cpu(), a["expected_entropy"].cpu(), b["mean"].cpu(),
                                   b["expected_entropy"].cpu()))
