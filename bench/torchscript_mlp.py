#!/usr/bin/env python3
"""Writes the App. H.1 network (784-100-10 sigmoid MLP, parameters fc1.*, fc2.* as the built-in mlp
names them) as a TorchScript file, for bench/torchscript_vs_mlp.sh.   usage: torchscript_mlp.py OUT.pt"""
import sys

import torch
import torch.nn as nn


class Mlp(nn.Module):
    def __init__(self, sizes=(784, 100, 10)):
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.fc2 = nn.Linear(sizes[1], sizes[2])

    def forward(self, x):
        return self.fc2(torch.sigmoid(self.fc1(x.flatten(1))))


if __name__ == "__main__":
    torch.manual_seed(1)
    torch.jit.script(Mlp()).save(sys.argv[1])
