"""Step-size schedules (the core's ``src/samplers/schedules.h``), driving an optimizer's groups.

    constant:    a
    polynomial:  a (b + t)^(−γ)                        (Welling & Teh 2011)
    step:        a · factor^floor(t / every)
    cyclical:    a/2 · (cos(π (t mod c) / c) + 1),  c = ceil(total / cycles)   (Zhang et al. 2020)
                 with explore_fraction β > 0, the first β of each cycle explores: temperature 0,
                 no samples collected.
"""
from __future__ import annotations

from typing import List, Optional

from . import _C
from .optim import SamplerOptimizer, _text

__all__ = ["Schedule"]


class Schedule:
    """``Schedule(optimizer, type, total_steps=..., **options)``, then ``schedule.step()`` after each
    ``optimizer.step()`` (as a torch lr scheduler). Each group's lr is its initial lr times the
    schedule's factor at the number of steps done; in a cyclical schedule's exploration stage the
    optimizer runs at temperature 0 and ``sampling`` is False (a ``SampleCollector`` then skips).

    Options are the YAML ``schedule:`` block's: ``b``, ``gamma`` (polynomial); ``every``,
    ``factor`` (step); ``cycles``, ``explore_fraction`` (cyclical). ``total_steps`` is the run's
    length (cyclical needs it).
    """

    def __init__(self, optimizer: SamplerOptimizer, type: str = "constant", *, total_steps: int = 0, **options):
        if getattr(optimizer, "lr_auto", False):
            raise ValueError(f"Schedule: {optimizer.name} has lr=\"auto\" and no step size yet: make the schedule "
                             "after optimizer.choose_lr(...)")
        opts = {"type": type}
        opts.update({k: _text(f"schedule.{k}", v) for k, v in options.items()})
        self.optimizer = optimizer
        self._impl = _C.make_schedule(opts, 1.0, int(total_steps), 1)
        if self._impl.has_stages and optimizer.is_sampler and not optimizer.runs_at_zero_temperature:
            raise ValueError(f"schedule.explore_fraction: {optimizer.name} is not defined at temperature 0 "
                             "(the exploration stage); use explore_fraction 0")
        self.base_lrs: List[float] = [g["lr"] for g in optimizer.param_groups]
        self.temperature = optimizer.temperature
        self.t = 0
        self._apply()

    def factor(self, t: Optional[int] = None) -> float:
        """The schedule's multiplier of the base lr at step t (default: now)."""
        return self._impl.at(self.t if t is None else int(t))

    @property
    def sampling(self) -> bool:
        """False in an exploration stage of a cyclical schedule (no noise, no samples)."""
        return self._impl.sampling(self.t)

    def describe(self) -> str:
        return self._impl.describe()

    def _apply(self) -> None:
        f = self._impl.at(self.t)
        for g, base in zip(self.optimizer.param_groups, self.base_lrs):
            g["lr"] = base * f
        if self.optimizer.is_sampler:
            self.optimizer.temperature = self.temperature if self._impl.sampling(self.t) else 0.0

    def step(self) -> None:
        self.t += 1
        self._apply()

    def state_dict(self) -> dict:
        return {"t": self.t, "base_lrs": list(self.base_lrs), "temperature": self.temperature}

    def load_state_dict(self, state: dict) -> None:
        self.t, self.base_lrs, self.temperature = int(state["t"]), list(state["base_lrs"]), state["temperature"]
        self._apply()
