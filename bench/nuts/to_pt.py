"""Writes bench/nuts/data/NAME.pt (the `tensors` data format sgmcmc reads) from NAME.npz.

Run with Debian's python3 (python3-torch): /usr/bin/python3 bench/nuts/to_pt.py
"""
import glob
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
for npz in sorted(glob.glob(os.path.join(HERE, "data", "*.npz"))):
    d = np.load(npz)
    torch.save({k: torch.from_numpy(np.ascontiguousarray(d[k])) for k in d.files}, npz[:-4] + ".pt")
    print(npz[:-4] + ".pt", {k: tuple(d[k].shape) for k in d.files})
