"""lr="auto" in your own loop: the binary's step-size pilot (``sampler.lr: auto``) over your own steps.

    opt = sgmcmc.SGHMC(model.parameters(), lr="auto", alpha=0.05)
    choice = opt.choose_lr(train_step, val_nll, run_steps=total_steps)    # sets every group's lr
    for ...: train_step(opt)                                                # the run itself

or, for an optimizer you build yourself, ``sgmcmc.choose_lr(make_optimizer, train_step, val_nll, ...)``.

Each trial starts from the parameters as they are when the pilot starts (restored before every trial
and after the last), builds a fresh optimizer at one step size with the same seed, and calls
``train_step(optimizer)`` ``steps`` times. It is scored by the validation NLL of the posterior
predictive averaged over 8 iterates of its last quarter: ``val_nll()`` returns −log p(y_i | x_i, θ)
per validation point, and the predictive's NLL per point is −log of the mean of p over the iterates.
A trial whose loss or validation NLL stops being finite, or whose step refuses a non-finite gradient,
is unstable. Which steps are tried and which is chosen is the C++ core's (``train/lr_pilot.h``, the
binary's own search): a grid of factors of 4 from 4^-5 to 4^2 times the sampler's default step, the
best refined by factors of 2; half the top of the plateau of steps the validation points cannot tell
from the best (a paired comparison, mean difference within two standard errors); a stability margin
where a step up to 4 times the choice was unstable; and, given ``noise``, the gradient-noise cap
(the minibatch noise at most 0.1 times the injected noise, over all the parameters as the binary's one
sampler group measures it: the groups' ratios weighted by their sizes). The binary's two further rounds need its
data and model and are not run here: the batch (give yours) and a Gaussian likelihood's τ (start
``NoisePrecision`` near its posterior value).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import _C

__all__ = ["choose_lr", "LrChoice"]


@dataclass
class LrChoice:
    """What the pilot chose and why: ``lr``; ``why`` (one line); ``trials`` (dicts of lr, val_nll (NaN:
    unstable), stable, noise_ratio, in the order tried); ``plateau`` (the steps the validation points
    cannot tell from the best); ``uncapped_lr`` and ``noise_ratio`` (before the gradient-noise cap);
    ``steps_per_trial``; ``seconds``. ``record`` is the same as the binary's summary.json "lr_auto"."""
    lr: float
    why: str
    trials: List[Dict[str, Any]]
    plateau: Tuple[float, float]
    uncapped_lr: float
    noise_ratio: float
    steps_per_trial: int
    seconds: float
    record: Dict[str, Any] = field(repr=False)


def _number(x) -> float:
    return float("nan") if x is None else float(x)


def _finite(x) -> bool:
    if x is None:
        return True
    if isinstance(x, torch.Tensor):
        return bool(torch.isfinite(x.detach()).all())
    return math.isfinite(float(x))


def _trial(lr: float, make_optimizer, train_step, val_nll, steps: int, noise, restore) -> Tuple[Any, float]:
    """One trial (the binary's run_lr_trial over the user's callables): (per-point NLL or None, noise ratio)."""
    restore()
    opt = make_optimizer(lr)
    first = (3 * steps) // 4
    every = max((steps - first) // 8, 1)
    draws: List[torch.Tensor] = []
    loss_sum = 0.0
    try:
        for k in range(steps):
            loss = train_step(opt)
            if loss is not None:
                loss_sum = loss_sum + (loss.detach() if isinstance(loss, torch.Tensor) else float(loss))
            if k % 25 == 24 and not _finite(loss_sum):
                return None, math.nan
            if k + 1 > first and (k + 1 - first) % every == 0:
                with torch.no_grad():
                    points = val_nll().detach().to("cpu", torch.float64).reshape(-1)
                if not bool(torch.isfinite(points).all()):
                    return None, math.nan
                draws.append(points)
        if not _finite(loss_sum) or not draws:
            return None, math.nan
    except FloatingPointError:
        return None, math.nan  # step() refused a non-finite gradient: the step size blew the chain up
    # the averaged predictive's NLL per point: −log mean_s p_s = −(logsumexp_s(−nll_s) − log S)
    stacked = torch.stack(draws)
    points = -(torch.logsumexp(-stacked, 0) - math.log(len(draws)))
    ratio = math.nan
    if noise is not None and hasattr(opt, "gradient_noise"):
        # over all the parameters, each group's ratio weighted by its size: the binary's chain is one sampler
        # group whose ratio is the mean over every coordinate (per-tensor groups would each report their own,
        # and the largest, a bias's, would cap the step far below the binary's choice)
        sizes = [sum(p.numel() for p in g["params"]) for g in opt.param_groups]
        pairs = [(n, r) for n, r in zip(sizes, opt.gradient_noise(noise)) if math.isfinite(r)]
        if pairs:
            ratio = sum(n * r for n, r in pairs) / sum(n for n, _ in pairs)
    return points, ratio


def choose_lr(make_optimizer: Callable[[float], torch.optim.Optimizer],
              train_step: Callable[[torch.optim.Optimizer], Any], val_nll: Callable[[], torch.Tensor], *,
              run_steps: Optional[int] = None, steps: Optional[int] = None, around: Optional[float] = None,
              noise: Optional[Callable[[], torch.Tensor]] = None, model: Optional[torch.nn.Module] = None,
              verbose: bool = True) -> LrChoice:
    """The step size by the binary's pilot (module docstring), over your own training step and validation.

    ``make_optimizer(lr)`` builds the optimizer at step size ``lr`` over your parameters (with a fixed
    ``seed``, so that every trial draws the same noise). ``train_step(optimizer)`` takes one step with the
    optimizer it is given (zero_grad, the loss on the next minibatch, backward, step) and returns the
    loss (or None). ``val_nll()`` returns the NLL per validation point [n] at the current parameters
    (for a classifier ``F.cross_entropy(model(x_val), y_val, reduction="none")``); hold those points out
    of the training data. ``run_steps``: the run's length, a trial is a fiftieth of it (100 to 1,000
    steps), or ``steps`` per trial. ``around``: the grid's centre (default: the sampler's default step,
    from the core's option table). ``noise``: the loss on a fresh minibatch, as
    ``SamplerOptimizer.gradient_noise`` takes it, for the gradient-noise cap. ``model``: its whole
    state (buffers too: batch norm) is restored around the trials; else the optimizer's parameters.
    Prints one line per trial unless ``verbose=False``. Returns an ``LrChoice``.
    """
    if steps is None:
        if run_steps is None:
            raise TypeError("choose_lr: give run_steps= (the run's length; a trial is a fiftieth of it) or steps=")
        steps = int(_C.pilot_steps(int(run_steps)))
    if int(steps) < 1:
        raise ValueError(f"choose_lr: steps must be >= 1, got {steps}")
    probe = make_optimizer(float(around) if around is not None else 1.0)
    if around is None:
        name = getattr(probe, "name", None)
        if not name:
            raise TypeError("choose_lr: give around= (the grid's centre) for an optimizer that is not sgmcmc's")
        option = next(o for o in _C.sampler_info()[name]["options"] if o["key"] == "lr")
        around = float(option["default"])
    if model is not None:
        saved_state = {k: v.detach().clone() for k, v in model.state_dict().items()}

        def restore():
            model.load_state_dict(saved_state)
    else:
        params = [p for g in probe.param_groups for p in g["params"]]
        saved = [p.detach().clone() for p in params]

        def restore():
            with torch.no_grad():
                for p, v in zip(params, saved):
                    p.copy_(v)
    del probe

    def trial(lr: float):
        return _trial(lr, make_optimizer, train_step, val_nll, int(steps), noise, restore)

    say = (lambda line: print(line, flush=True)) if verbose else None
    try:
        record = json.loads(_C.search_lr(float(around), int(steps), trial, say))
    finally:
        restore()
    trials = [{"lr": t["lr"], "val_nll": _number(t["val_nll"]), "stable": t["stable"],
               "noise_ratio": _number(t.get("noise_ratio"))} for t in record["trials"]]
    return LrChoice(lr=record["lr"], why=record["why"], trials=trials, plateau=tuple(record["plateau"]),
                    uncapped_lr=record["uncapped_lr"], noise_ratio=_number(record["noise_ratio"]),
                    steps_per_trial=record["steps_per_trial"], seconds=record["seconds"], record=record)
