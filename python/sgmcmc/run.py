"""``sgmcmc.train``: the binary's trainer (``sgmcmc train``), in this process."""
from __future__ import annotations

import json
import os
import warnings
from typing import Iterable, Mapping, Optional, Union

from . import _C

__all__ = ["train"]


def train(config: Union[str, os.PathLike, Mapping, None] = None, *, out: Optional[str] = None,
          overwrite: bool = False, resume: Optional[str] = None, quiet: bool = True,
          set: Optional[Union[Mapping[str, object], Iterable[str]]] = None) -> dict:
    """Runs ``sgmcmc train`` in this process and returns its summary.json as a dict (plus
    ``run_dir``).

    ``config``: a YAML file's path, or a dict of blocks as the YAML has them
    (``{"model": {"type": "mlp", "hidden": [100]}, "sampler": {"name": "sghmc"}, ...}``); relative
    paths inside it resolve against the working directory, as the binary's do. ``set``: overrides
    as ``--set`` takes them (``{"train.epochs": 5}`` or ``["train.epochs=5"]``). ``out``: the run
    directory (``--out``); ``overwrite``/``resume`` as ``--overwrite``/``--resume RUN_DIR`` (then
    ``config`` is omitted: the run's own config.yaml is read). Bad configs raise ValueError with the
    binary's one-line message. A run that ends worse than the trivial predictor (the binary's exit
    code 4) returns with a RuntimeWarning that says what to try.
    """
    if not hasattr(_C, "train"):  # a module built from the samplers' part of the core only (CMakeLists.txt)
        raise RuntimeError("sgmcmc.train: this sgmcmc._C was built without the trainer (SGMCMC_PYTHON_ONLY); "
                           "build it with the whole core: pip install --no-build-isolation ./python")
    if resume is not None:
        if config is not None:
            raise ValueError("sgmcmc.train: give either config or resume=RUN_DIR (its config.yaml is used)")
        source = os.path.join(resume, "config.yaml")
        with open(source) as f:
            text = f.read()
        out, resuming = resume, True
    else:
        resuming = False
        if config is None:
            raise ValueError("sgmcmc.train: a config (a YAML path or a dict) is needed")
        if isinstance(config, Mapping):
            text, source = json.dumps(dict(config)), "<dict>"  # JSON is YAML
        else:
            source = os.fspath(config)
            with open(source) as f:
                text = f.read()
    if set is None:
        overrides = []
    elif isinstance(set, Mapping):
        overrides = [f"{k}={_value(v)}" for k, v in set.items()]
    else:
        overrides = [str(s) for s in set]
    r = _C.train(text, source, overrides, "" if out is None else os.fspath(out), overwrite, resuming, quiet)
    summary_path = os.path.join(r.run_dir, "summary.json")
    summary = {}
    if os.path.exists(summary_path):
        with open(summary_path) as f:
            summary = json.load(f)
    else:
        summary = dict(r.values)
    summary["run_dir"] = r.run_dir
    if r.worse_than_trivial:
        warnings.warn(r.health_message, RuntimeWarning, stacklevel=2)
    return summary


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)
