"""The samplers and optimizers of sgmcmc as ``torch.optim.Optimizer`` subclasses.

Every ``step()`` runs the C++ core's rule (the binary's ``src/samplers/``): on the CPU one fused,
vectorised loop per parameter group with the Philox noise generated inside it, on CUDA (a CUDA
build) one fused kernel per group. Nothing of the rule is written in Python.

The gradient convention (∇Ũ), where every SG-MCMC user trips first
------------------------------------------------------------------
A sampler moves θ by the *potential's* gradient, not the mean loss's::

    ∇Ũ(θ) = (N / n) Σ_{i in batch} ∇(−log p(y_i | x_i, θ))  +  ∇(−log p(θ))

with N the training set's size and n the batch's. So before ``step()``, ``.grad`` must hold the
first term: with ``F.cross_entropy(out, y)`` (a batch *mean*) call ``(N * loss).backward()``.
The second term, a Gaussian prior N(0, 1/λ), is added by the optimizer for every param group with
``prior_precision`` λ > 0 (inside the fused step, so it costs nothing); leave it out of the loss
then. With ``prior_precision=0`` (the default) ``.grad`` must be the whole ∇Ũ. ``sgmcmc.
GaussianPrior(optimizer, hyperprior=(α, β))`` resamples each group's λ by Gibbs steps.

The step size ``lr`` is the papers' η on ∇Ũ: App. H.1's SGHMC uses lr = 2e-6 at N = 50,000 (an
SGD-momentum learning rate of 0.1 on the mean loss). A step too large shows as a loss that grows;
``lr="auto"`` chooses one by the binary's pilot (``sampler.lr: auto``, docs/first_try.md) over your own
steps: ``opt.choose_lr(train_step, val_nll, run_steps=...)`` before the first step (``sgmcmc.lr_pilot``).

Chains, state and resume
------------------------
The optimizer owns its random stream: ``seed`` (default: drawn from torch's global generator, so
``torch.manual_seed`` fixes it), or draws from the ``generator`` given (a ``torch.Generator`` of the
parameters' device, shared with whatever else draws from it: ``sgmcmc train``'s chain draws its
minibatch permutations and its noise from one generator seeded 2·seed + 1). ``state_dict()`` holds the step count, every state tensor
(momentum, thermostat, preconditioner) and the generator's state, so ``load_state_dict`` continues a
chain bit for bit. At construction the parameters of each group move into one contiguous buffer
(their storage changes, the tensors stay the same objects), and their ``.grad`` become views into a
second one; ``zero_grad()`` zeroes in place to keep them so. Add every param group at construction.
"""
from __future__ import annotations

import inspect
import math
from typing import Callable, Dict, Iterable, List, Optional

import torch

from . import _C

__all__ = [
    "SamplerOptimizer", "SGLD", "PSGLD", "SGRLD", "SGHMC", "SGHMCNaive", "SGNHT", "MSGNHT", "Santa", "HMC",
    "StochasticHMC", "SGNUTS", "SGD", "SGDMomentum", "RMSprop", "Adam", "registry",
]


def registry() -> Dict[str, dict]:
    """Every sampler and optimizer of the core: name -> {is_sampler, summary, keys, options, lr_per_datum,
    chains, zero_temperature, needs_closure}; ``options`` lists each key's type, default, meaning,
    choices and range, from the option table beside the sampler's C++ class."""
    return {name: dict(info) for name, info in _C.sampler_info().items()}


def _text(key: str, value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return repr(value) if isinstance(value, float) else str(value)
    raise TypeError(f"{key}: expected a number, bool or string, got {type(value).__name__}")


def _default_seed() -> int:
    return int(torch.randint(0, 2 ** 62, (1,), dtype=torch.int64).item())


class SamplerOptimizer(torch.optim.Optimizer):
    """An sgmcmc sampler (or optimizer) of the core's registry over ``params``.

    Subclasses fix ``name``; use them (``sgmcmc.SGHMC(...)``) rather than this class. ``lr``: the
    step size η, or ``"auto"``: ``choose_lr(train_step, val_nll, run_steps=...)`` then runs the binary's
    pilot over your steps and sets it (``step()`` refuses until then; ``sgmcmc.lr_pilot``). Param group
    keys: ``lr`` (the step size η; groups may differ) and ``prior_precision`` (λ of a N(0, 1/λ)
    prior whose gradient λθ the step adds; 0: none), which may change between steps, and every option
    (``alpha``, ``integrator``, ...: the keys of the YAML ``sampler:`` block), which a group may set
    for itself at construction (``{"params": ..., "alpha": 0.2}``) and which then stays. Options are
    checked by the core (an unknown key is an error that names the nearest one; a bad value in a
    group, an error that names the group and the key). Groups with different options run as one
    core sampler per set of options, stepped in turn over one generator (``HMC`` and
    ``StochasticHMC`` take one set for all groups).
    """

    name: str = ""
    needs_closure = False  # HMC-type samplers evaluate the gradient several times a step
    # step() refuses a non-finite gradient before anything is written (one read of every gradient; on a GPU a
    # sync a step): set it False on an optimizer to skip the check.
    check_finite = True

    def __init__(self, params, lr, *, prior_precision: float = 0.0, seed: Optional[int] = None,
                 generator: Optional[torch.Generator] = None, **options):
        if not self.name:
            raise TypeError("use a subclass (sgmcmc.SGLD, sgmcmc.SGHMC, ...)")
        # lr="auto": the groups without an lr of their own wait for choose_lr() (step() refuses until then)
        self.lr_auto = isinstance(lr, str) and lr == "auto"
        if self.lr_auto:
            params = list(params)
            self._auto_groups = [i for i, g in enumerate(params) if not isinstance(g, dict) or "lr" not in g] \
                if params and isinstance(params[0], dict) else [0]
            lr = _lr_default(self.name)
        elif not (isinstance(lr, (int, float)) and not isinstance(lr, bool) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"{self.name}.lr: must be a finite number > 0 or \"auto\", got {lr!r}")
        self.lr_choice = None
        self._ready = False
        info = registry()[self.name]
        given = {k: v for k, v in options.items() if v is not None}
        for k in given:
            if k not in info["keys"]:
                raise TypeError(f"{self.name}: unknown option '{k}' (options: {', '.join(info['keys'])})")
        self._options = dict(given)  # for the pilot's trial optimizers
        # Every option is a hyper-parameter of every param group, as torch.optim keeps them: the value given
        # here, else the core's default (None: an optional key left unset); a group may give its own.
        self._option_defaults = {o["key"]: given.get(o["key"], _default(o)) for o in info["options"]
                                 if o["key"] != "lr"}
        super().__init__(params, dict(lr=float(lr), prior_precision=float(prior_precision), **self._option_defaults))
        if generator is not None and seed is not None:
            raise ValueError(f"{self.name}: give a seed or a generator, not both")
        self.seed = (generator.initial_seed() if generator is not None else
                     _default_seed() if seed is None else int(seed))
        for i, g in enumerate(self.param_groups):
            self._check_group(i, g)
        self._generator = generator
        self._impl = self._make_impl(float(lr))
        self._ready = True

    def _check_group(self, index: int, group: dict) -> None:
        lr, lam = group["lr"], group["prior_precision"]
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"{self.name}: param group {index}: lr must be a finite number > 0, got {lr!r}")
        if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam >= 0):
            raise ValueError(f"{self.name}: param group {index}: prior_precision must be a finite number >= 0, "
                             f"got {lam!r}")

    def _group_options(self, index: int, group: dict) -> Dict[str, str]:
        """The options the core gets for a group: those given to the constructor and those the group sets
        to other than the constructor's value, as text (the others take the core's defaults)."""
        text = {}
        for k, default in self._option_defaults.items():
            v = group.get(k, default)
            if v is not None and (k in self._options or v != default):
                text[k] = _text(f"{self.name}: param group {index}: {k}", v)
        return text

    def _make_impl(self, lr: float):
        """The core's sampler over the groups: one where every group has the same options (the binary's
        chain), else one per set of options, stepped in turn and drawing from one generator."""
        groups = self.param_groups
        texts = [self._group_options(i, g) for i, g in enumerate(groups)]
        base = self._group_options(-1, {})
        sets: Dict[tuple, List[int]] = {}
        for i, t in enumerate(texts):
            sets.setdefault(tuple(sorted(t.items())), []).append(i)
        if len(sets) > 1 and self.needs_closure:
            raise ValueError(f"{self.name}: every param group needs the same options (one Metropolis test, one "
                             "leapfrog trajectory over all of them)")
        generator = self._generator
        if len(sets) > 1 and generator is None:
            generator = torch.Generator(device=groups[0]["params"][0].device)
            generator.manual_seed(self.seed)
        parts = []
        for key, members in sets.items():
            text = dict(key)
            text["lr"] = _text(f"{self.name}.lr", float(lr))
            try:
                impl = _C.Sampler(self.name, [list(groups[i]["params"]) for i in members], text, self.seed, generator)
            except ValueError as e:
                if dict(key) == base:
                    raise
                raise ValueError(f"{self.name}: param group{'s' if len(members) > 1 else ''} "
                                 f"{', '.join(map(str, members))}: {e}") from None
            parts.append((members, impl))
        self._fixed = [{k: g.get(k, d) for k, d in self._option_defaults.items()} for g in groups]
        return parts[0][1] if len(parts) == 1 else _Partitioned(parts, len(groups))

    def add_param_group(self, param_group: dict) -> None:
        if getattr(self, "_ready", False):
            raise RuntimeError(f"{self.name}: every param group must be given at construction "
                               "(the core lays each group out in one buffer)")
        super().add_param_group(param_group)

    def _sync(self) -> None:
        groups = self.param_groups
        for i, (g, fixed) in enumerate(zip(groups, self._fixed)):
            for k, v in fixed.items():
                if k in g and g[k] != v:
                    raise ValueError(f"{self.name}: param group {i}: {k} is set when the optimizer is made ({v!r}, "
                                     f"now {g[k]!r}); lr and prior_precision may change between steps")
        self._impl.set_groups([float(g["lr"]) for g in groups],
                              [float(g.get("prior_precision", 0.0)) for g in groups])

    def choose_lr(self, train_step: Callable[["SamplerOptimizer"], object], val_nll: Callable[[], torch.Tensor],
                  **kwargs):
        """lr="auto": runs the binary's step-size pilot over ``train_step`` and ``val_nll`` (see
        ``sgmcmc.choose_lr`` for both and for the keywords: ``run_steps`` or ``steps``, ``noise``,
        ``model``, ``around``, ``verbose``) and sets the chosen lr in every group that has none of its
        own. Each trial steps a fresh optimizer of this class, options and seed, handed to
        ``train_step``; the parameters are back at their start afterwards. Returns the ``LrChoice``
        (also kept as ``lr_choice``)."""
        from .lr_pilot import choose_lr
        if self._impl.steps > 0:
            raise RuntimeError(f"{self.name}.choose_lr: the chain has taken steps; choose the lr before the first")
        auto = getattr(self, "_auto_groups", list(range(len(self.param_groups))))

        def make(lr: float) -> "SamplerOptimizer":
            groups = [dict(g, params=list(g["params"])) for g in self.param_groups]
            for i in auto:
                groups[i]["lr"] = lr
            opt = type(self)(groups, lr=lr, seed=self.seed, **self._options)
            opt.check_finite = True  # a trial's non-finite gradient is its instability, not an error
            return opt

        choice = choose_lr(make, train_step, val_nll, **kwargs)
        for i in auto:
            self.param_groups[i]["lr"] = choice.lr
        self.defaults["lr"] = choice.lr
        # the trials' optimizers laid the parameters out in buffers of their own: this one's again
        self._impl = self._make_impl(float(choice.lr))
        self.lr_auto = False
        self.lr_choice = choice
        return choice

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], torch.Tensor]] = None):
        """One update from ∇Ũ in ``.grad`` (see the module's docstring for what it must hold).

        With ``closure`` (which zeroes the gradients, computes the loss, calls ``backward()`` and
        returns the loss), the closure runs first; HMC and stochastic HMC need one and call it once
        per leapfrog step. Returns the closure's loss (HMC: Ũ at the start, prior included).
        """
        if self.lr_auto:
            raise RuntimeError(f"{self.name}: lr=\"auto\": call choose_lr(train_step, val_nll, run_steps=...) "
                               "before the first step (docs/python.md)")
        self._sync()
        if self.needs_closure:
            if closure is None:
                raise RuntimeError(f"{self.name}: step() needs a closure (the gradient at each leapfrog step)")

            def run():
                with torch.enable_grad():
                    return closure()
            return self._impl.step_closure(run)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self.check_finite:
            self._check_finite()
        self._impl.step()
        return loss

    def _check_finite(self) -> None:
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        # one reduction and one read for the whole step; the culprit is looked for only when there is one
        if not grads or bool(torch.stack([torch.isfinite(g).all() for g in grads]).all()):
            return
        for gi, group in enumerate(self.param_groups):
            for pi, p in enumerate(group["params"]):
                if p.grad is not None and not bool(torch.isfinite(p.grad).all()):
                    bad = int((~torch.isfinite(p.grad)).sum())
                    raise FloatingPointError(
                        f"{self.name}.step: param group {gi}, parameter {pi} {tuple(p.shape)}: {bad} non-finite "
                        "gradient entries; nothing was written (a diverged loss, or a step too large: the "
                        "binary's check; check_finite = False skips it)")

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zeroes every gradient in place (the default; ``.grad`` stay views of the group's buffer).
        ``set_to_none=True`` drops them; the next step then copies the new ones back in."""
        if set_to_none:
            for g in self.param_groups:
                for p in g["params"]:
                    p.grad = None
        else:
            self._impl.zero_grad()

    @property
    def temperature(self) -> float:
        """T, scaling the injected noise's variance (1 samples the posterior; 0 is the noise-free
        optimizer the sampler reduces to, e.g. in a cyclical schedule's exploration stage)."""
        return self._impl.temperature

    @temperature.setter
    def temperature(self, value: float) -> None:
        self._impl.temperature = float(value)

    @property
    def steps(self) -> int:
        """Completed steps."""
        return self._impl.steps

    @property
    def fused(self) -> bool:
        """True: one fused kernel per group (the default). False: the per-parameter ATen reference
        of the same rule, with the same noise (for checking; slower)."""
        return self._impl.fused

    @fused.setter
    def fused(self, on: bool) -> None:
        self._impl.fused = bool(on)

    @property
    def is_sampler(self) -> bool:
        """False for the optimizer baselines (no noise: point estimates)."""
        return self._impl.is_sampler

    @property
    def runs_at_zero_temperature(self) -> bool:
        """True when the update is defined at T = 0 (a cyclical schedule's exploration stage)."""
        return self._impl.runs_at_zero_temperature

    def diagnostics(self) -> Dict[str, float]:
        """The sampler's scalar diagnostics (e.g. the thermostat's mean), as the binary logs them."""
        return dict(self._impl.diagnostics())

    def gradient_noise(self, loss_on_fresh_batch: Callable[[], torch.Tensor]) -> List[float]:
        """The health check's noise ratio per param group: the minibatch gradient's noise against the
        noise this sampler injects (the binary's ``health.gradient_noise``; docs/first_try.md).

        ``loss_on_fresh_batch()`` must return the minibatch estimate of U's data term, (N/n)·Σ nll,
        on a NEW random minibatch of the size you train with at every call. It is called twice at the
        current parameters; the prior cancels in the difference, so leave it out. Gradients go through
        ``torch.autograd.grad``: ``.grad`` and the parameters are left as they are (put the model in
        eval mode first if dropout or batch norm would otherwise change it). Above 1 in a group the
        chain's spread there is the minibatches', not the posterior's: take a smaller lr or a larger
        batch. NaN where the question does not apply (optimizers, T = 0, the thermostat samplers).
        """
        self._sync()  # the groups' lr as the next step would take them
        params = [p for g in self.param_groups for p in g["params"]]
        grads = []
        for _ in range(2):
            with torch.enable_grad():
                loss = loss_on_fresh_batch()
                g = torch.autograd.grad(loss, params, allow_unused=True)
            grads.append([torch.zeros_like(p) if x is None else x.detach() for p, x in zip(params, g)])
        variances, k = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            d = [((a - b).double().reshape(-1) ** 2) / 2 for a, b in zip(grads[0][k:k + n], grads[1][k:k + n])]
            variances.append(torch.cat(d) if d else torch.zeros(0, dtype=torch.float64))
            k += n
        return list(self._impl.gradient_noise_ratios(variances))

    def state_dict(self) -> dict:
        sd = super().state_dict()
        blob = bytearray(self._impl.state())
        sd["sgmcmc"] = {"name": self.name, "seed": self.seed,
                        "state": torch.frombuffer(blob, dtype=torch.uint8).clone()}
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        sd = dict(state_dict)
        core = sd.pop("sgmcmc", None)
        if core is None:
            raise ValueError(f"{self.name}: not an sgmcmc optimizer's state_dict (no 'sgmcmc' entry)")
        if core["name"] != self.name:
            raise ValueError(f"{self.name}: the state_dict is a {core['name']} chain's")
        super().load_state_dict(sd)
        for g, fixed in zip(self.param_groups, self._fixed):  # a state_dict without the options keeps them
            for k, v in fixed.items():
                g.setdefault(k, v)
        self.seed = int(core["seed"])
        self._impl.load_state(core["state"].cpu().numpy().tobytes())

    def __repr__(self) -> str:
        groups = ", ".join(f"lr={g['lr']:g} prior_precision={g['prior_precision']:g} "
                           f"({sum(p.numel() for p in g['params'])} values)" for g in self.param_groups)
        return f"sgmcmc.{type(self).__name__}({groups}, seed={self.seed})"


class _Partitioned:
    """Param groups whose options differ: one core sampler per set of options over its groups (each laid out
    and stepped as the binary's chain is), stepped in turn and drawing from one generator; the optimizer
    talks to it as to one sampler."""

    def __init__(self, parts, n_groups: int):
        self._parts, self._n = parts, n_groups  # [(group indices, core sampler)]

    def set_groups(self, lrs, lambdas) -> None:
        for members, impl in self._parts:
            impl.set_groups([lrs[i] for i in members], [lambdas[i] for i in members])

    def step(self) -> None:
        for _, impl in self._parts:
            impl.step()

    def zero_grad(self) -> None:
        for _, impl in self._parts:
            impl.zero_grad()

    @property
    def steps(self) -> int:
        return self._parts[0][1].steps

    @property
    def temperature(self) -> float:
        return self._parts[0][1].temperature

    @temperature.setter
    def temperature(self, value: float) -> None:
        for _, impl in self._parts:
            impl.temperature = value

    @property
    def fused(self) -> bool:
        return self._parts[0][1].fused

    @fused.setter
    def fused(self, on: bool) -> None:
        for _, impl in self._parts:
            impl.fused = on

    @property
    def is_sampler(self) -> bool:
        return self._parts[0][1].is_sampler

    @property
    def runs_at_zero_temperature(self) -> bool:
        return self._parts[0][1].runs_at_zero_temperature

    def diagnostics(self) -> Dict[str, float]:
        """Each set's diagnostics, named with its groups: "xi_mean[0,2]"."""
        out = {}
        for members, impl in self._parts:
            for k, v in impl.diagnostics().items():
                out[f"{k}[{','.join(map(str, members))}]"] = v
        return out

    def gradient_noise_ratios(self, variances) -> List[float]:
        out = [math.nan] * self._n
        for members, impl in self._parts:
            for i, r in zip(members, impl.gradient_noise_ratios([variances[i] for i in members])):
                out[i] = r
        return out

    def state(self) -> bytes:
        """Each set's state, each behind its length (8 bytes, little-endian)."""
        blobs = [bytes(impl.state()) for _, impl in self._parts]
        return b"".join(len(b).to_bytes(8, "little") + b for b in blobs)

    def load_state(self, data: bytes) -> None:
        at = 0
        for _, impl in self._parts:
            if at + 8 > len(data):
                raise ValueError("the state_dict holds fewer option sets than this optimizer's param groups have")
            n = int.from_bytes(data[at:at + 8], "little")
            impl.load_state(data[at + 8:at + 8 + n])
            at += 8 + n
        if at != len(data):
            raise ValueError("the state_dict holds more option sets than this optimizer's param groups have")


def _lr_default(name: str) -> float:
    """The sampler's default step, from the core's option table (the pilot's grid centre)."""
    return float(next(o for o in _C.sampler_info()[name]["options"] if o["key"] == "lr")["default"])


def _default(option: dict):
    """An option's default as a Python value, from the core's table (its text as a resolved config
    writes it); None where the core has none (an optional key such as xi_init)."""
    text, kind = option["default"], option["type"]
    if kind == "real":
        return float(text)
    if kind == "integer":
        return int(text)
    if kind == "flag":
        return text == "true"
    if kind == "optional real":
        return None
    return text


def _options_doc(options: List[dict]) -> str:
    """One line per option: name=default (type; range or choices): meaning."""
    lines = []
    for o in options:
        what = o["type"] + ("; " + o["range"] if o["range"] else "") + \
            ("; " + " | ".join(o["choices"]) if o["choices"] else "")
        default = _default(o)
        shown = f"None (unset: {o['default'].strip('()')})" if default is None else repr(default)
        lines.append(f"        {o['key']}={shown} ({what}): {o['meaning']}")
    return "\n".join(lines) if lines else "        (none)"


def _signature(options: List[dict]) -> inspect.Signature:
    """(params, lr, *, <the core's options with their defaults>, prior_precision=0.0, seed=None,
    generator=None), for help() and inspect.signature (the types are in the docstring)."""
    P = inspect.Parameter
    ps = [P("params", P.POSITIONAL_OR_KEYWORD), P("lr", P.POSITIONAL_OR_KEYWORD)]
    ps += [P(o["key"], P.KEYWORD_ONLY, default=_default(o)) for o in options]
    ps += [P("prior_precision", P.KEYWORD_ONLY, default=0.0), P("seed", P.KEYWORD_ONLY, default=None),
           P("generator", P.KEYWORD_ONLY, default=None)]
    return inspect.Signature(ps)


def _sampler(cls_name: str, core_name: str, doc: str):
    info = _C.sampler_info()[core_name]
    options = [o for o in info["options"] if o["key"] != "lr"]

    # The options travel as **options (only those given reach the core, which fills in its own
    # defaults and checks every value); __signature__ shows them as the keywords they are.
    def __init__(self, params, lr, *, prior_precision: float = 0.0, seed: Optional[int] = None,
                 generator: Optional[torch.Generator] = None, **options):
        SamplerOptimizer.__init__(self, params, lr, prior_precision=prior_precision, seed=seed,
                                  generator=generator, **options)

    sig = _signature(options)
    __init__.__signature__ = sig.replace(parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
                                         + list(sig.parameters.values()))
    cls = type(cls_name, (SamplerOptimizer,), {
        "name": core_name, "needs_closure": info["needs_closure"], "__init__": __init__, "__signature__": sig,
        "__doc__": f"{doc}\n\n    Options (the YAML ``sampler:`` block's keys, as ``sgmcmc train --help-keys`` lists "
                   f"them;\n    an option left out takes the core's default):\n{_options_doc(options)}\n"
                   f"    Common arguments: see ``sgmcmc.SamplerOptimizer``.",
    })
    cls.__module__ = __name__
    return cls


SGLD = _sampler("SGLD", "sgld", """Stochastic gradient Langevin dynamics (Welling & Teh 2011):
    θ ← θ − η∇Ũ + N(0, 2ηT).""")
PSGLD = _sampler("PSGLD", "psgld", """Preconditioned SGLD with an RMSprop preconditioner (Li et al. 2016).""")
SGRLD = _sampler("SGRLD", "sgrld", """SG Riemannian Langevin dynamics with a diagonal metric G(θ) (Patterson & Teh 2013):
    θ ← θ + η(−G∇Ũ + TΓ) + N(0, 2ηT·G), Γ = ∂G/∂θ; metric "expanded_mean" (G = |θ|, mirrored at 0: the
    simplex's expanded mean), "quadratic" (G = 1 + cθ²) or "identity".""")
SGHMC = _sampler("SGHMC", "sghmc", """Stochastic gradient HMC (Chen, Fox & Guestrin 2014), SGD-momentum form:
    v ← v − η∇Ũ − αv + N(0, 2η(αT − β̂)),  θ ← θ + v   (integrator "euler"; "ssi": symmetric splitting).""")
SGHMCNaive = _sampler("SGHMCNaive", "sghmc-naive", """Naive SGHMC without friction (Chen et al. 2014 §3.1):
    a negative control that does not sample the posterior.""")
SGNHT = _sampler("SGNHT", "sgnht", """SG Nosé–Hoover thermostat with a scalar thermostat (Ding et al. 2014).""")
MSGNHT = _sampler("MSGNHT", "msgnht", """Multivariate SGNHT, Euler or splitting integrator (Li, Chen, Fan & Carin 2016).""")
Santa = _sampler("Santa", "santa", """Santa: annealed thermostats with adaptive momentum (Chen et al. 2016).""")
HMC = _sampler("HMC", "hmc", """Exact HMC: leapfrog and a Metropolis–Hastings test on full gradients.
    ``step(closure)``: the closure computes the whole data's loss and its gradient.""")
StochasticHMC = _sampler("StochasticHMC", "stochastic-hmc", """Stochastic HMC: leapfrog steps on minibatch
    gradients with a partial momentum refresh (Franzese et al. 2022). ``step(closure)``: the closure
    draws its own minibatch.""")
SGNUTS = _sampler("SGNUTS", "sgnuts", """Stochastic HMC whose trajectory lengths come from the no-U-turn criterion
    (docs/sgnuts.md): a full momentum refresh per trajectory; the first ``adapt_trajectories`` run until
    (θ − θ₀)·r < 0 or (θ − θ₀)·r₀ < 0, the later ones draw their length from those. One minibatch
    gradient a step, read from ``.grad`` like SGHMC.""")
SGD = _sampler("SGD", "sgd", """Stochastic gradient descent (baseline: a point estimate).""")
SGDMomentum = _sampler("SGDMomentum", "sgd-momentum", """SGD with (Nesterov) momentum (baseline).""")
RMSprop = _sampler("RMSprop", "rmsprop", """RMSprop (Tieleman & Hinton 2012; baseline).""")
Adam = _sampler("Adam", "adam", """Adam (Kingma & Ba 2015; baseline).""")
