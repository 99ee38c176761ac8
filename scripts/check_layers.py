#!/usr/bin/env python3
"""Fails when an include under src/ points up a layer (docs/architecture.md, "Layers").

Each folder of src/ stands on one floor; a file may include its own folder or a folder on a lower
floor, never one on its own floor or above. A folder missing from FLOORS is an error too, so a new
folder gets its place here first.   usage: scripts/check_layers.py [SRC_DIR]
"""
import pathlib
import re
import sys

FLOORS = {
    ".": 0,                                   # compat.h, pch.h: LibTorch's version differences
    "core": 1,                                # the vocabulary: option reader, Batch, Task, Gamma, files
    "kernels": 2, "metrics": 2, "runtime": 2,  # update rules and fused kernels; metrics; threads
    "data": 3,
    "models": 4,
    "priors": 5, "samplers": 5,
    "distributed": 6,
    "config": 7,
    "train": 8,
    "sweep": 9, "simulate": 9,
    "cli": 10, "launcher": 10,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Every switch a user may need is a config key; the environment is read for the thread libraries alone,
# in this one file (SGMCMC_NO_REEXEC, and the OpenMP / OpenBLAS variables it sets).
ENV_FILE = "runtime/spin_env.cpp"
SGMCMC_GETENV = re.compile(r'getenv\(\s*"SGMCMC_')


def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "src")
    problems = []
    for path in sorted(p for p in src.rglob("*") if p.suffix in {".h", ".cpp", ".cu", ".cuh"}):
        rel = path.relative_to(src)
        here = rel.parts[0] if len(rel.parts) > 1 else "."
        if here not in FLOORS:
            problems.append(f"{path}: folder '{here}' has no floor in scripts/check_layers.py")
            continue
        text = path.read_text(errors="replace")
        if rel.as_posix() != ENV_FILE:
            for m in SGMCMC_GETENV.finditer(text):
                problems.append(f"{path}:{text.count(chr(10), 0, m.start()) + 1}: reads an SGMCMC_* environment "
                                f"variable: make it a config key (core/kernel_settings.h), or read it in {ENV_FILE}")
        for lineno, target in ((text.count("\n", 0, m.start()) + 1, m.group(1))
                               for text in [path.read_text(errors="replace")]
                               for m in INCLUDE.finditer(text)):
            parts = pathlib.PurePosixPath(target).parts
            there = parts[0] if len(parts) > 1 else "."
            if there not in FLOORS or there == here:
                continue  # a header of the file's own folder, or not one of ours
            if FLOORS[there] >= FLOORS[here]:
                problems.append(f"{path}:{lineno}: {here}/ (floor {FLOORS[here]}) includes {target} "
                                f"(floor {FLOORS[there]}): dependencies point down the layers only")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
