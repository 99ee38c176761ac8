"""sgmcmc from Python: the samplers of the C++ trainer as torch.optim optimizers in your own loop.

    import sgmcmc
    opt = sgmcmc.SGHMC(model.parameters(), lr=2e-6, alpha=0.01, prior_precision=1.0)
    for x, y in loader:
        opt.zero_grad()
        (N * F.cross_entropy(model(x), y)).backward()   # ∇Ũ: the loss summed over the data set
        opt.step()

See ``sgmcmc.optim`` for the gradient convention, docs/python.md for the whole guide.
"""
import torch  # noqa: F401  (loads LibTorch before the extension)

from . import _C  # noqa: F401
from .diagnostics import effective_sample_size, split_rhat
from .inference_data import to_inference_data
from .optim import (HMC, MSGNHT, PSGLD, SGD, SGHMC, SGLD, SGNHT, SGRLD, Adam, RMSprop, Santa, SamplerOptimizer,
                    SGDMomentum, SGHMCNaive, SGNUTS, StochasticHMC, registry)
from .likelihood import NoisePrecision
from .lr_pilot import LrChoice, choose_lr
from .prior import GaussianPrior
from .run import train
from .samples import SampleCollector, load_samples, save_sample
from .schedule import Schedule

__version__ = "0.1.0"

__all__ = [
    "SGLD", "PSGLD", "SGRLD", "SGHMC", "SGHMCNaive", "SGNHT", "MSGNHT", "Santa", "HMC", "StochasticHMC", "SGNUTS", "SGD",
    "SGDMomentum", "RMSprop", "Adam", "SamplerOptimizer", "registry", "GaussianPrior", "Schedule",
    "SampleCollector", "load_samples", "save_sample", "split_rhat", "effective_sample_size", "train",
    "to_inference_data", "NoisePrecision", "choose_lr", "LrChoice",
]
