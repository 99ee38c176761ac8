#!/usr/bin/env python3
"""What XLA runs for one step of a peer's jitted loop: a summary of an optimized HLO module.

usage: hlo_summary.py MODULE_after_optimizations.txt
       (from XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_text", e.g. bench/peers/blackjax_h1.py's
       jit_epoch module; scripts/gpu_session.sh followup dumps it on the GPU)

The body of the module's largest `while` loop is the step of a `lax.scan` over minibatches. On a GPU each
of its fusions, custom calls (cuBLAS / cuBLASLt GEMMs, Triton GEMM fusions) and remaining non-trivial
instructions is about one kernel launch, so the counts below are the step's kernels as XLA plans them,
and the fusions that hold a `dot` are its matrix products with what XLA fused around them."""
import re
import sys
from collections import Counter

FREE = {"parameter", "get-tuple-element", "tuple", "bitcast", "constant", "after-all", "opt-barrier",
        "partition-id", "replica-id", "get-dimension-size"}
HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s([a-z][a-z0-9\-]*)\((.*)$")


def parse(path):
    comps, cur = {}, None
    for line in open(path, errors="replace"):
        if cur is None:
            m = HEAD.match(line)
            if m:
                cur = m.group(2)
                comps[cur] = []
            continue
        if line.startswith("}"):
            cur = None
            continue
        m = INSTR.match(line)
        if m:
            comps[cur].append({"name": m.group(2), "op": m.group(4), "rest": m.group(5), "type": m.group(3)})
    return comps


def called(instr, key):
    m = re.search(key + r"=%?([\w.\-]+)", instr["rest"])
    return m.group(1) if m else None


def has_dot(comps, name, seen=None):
    seen = seen or set()
    if name in seen or name not in comps:
        return False
    seen.add(name)
    for i in comps[name]:
        if i["op"] in ("dot", "convolution"):
            return True
        for key in ("calls", "to_apply"):
            c = called(i, key)
            if c and has_dot(comps, c, seen):
                return True
    return False


def summarize(path):
    comps = parse(path)
    bodies = [called(i, "body") for instrs in comps.values() for i in instrs if i["op"] == "while"]
    bodies = [b for b in bodies if b in comps]
    if not bodies:
        print(f"{path}: no while loop")
        return
    body = max(bodies, key=lambda b: len(comps[b]))
    instrs = [i for i in comps[body] if i["op"] not in FREE]
    kinds = Counter()
    gemms = []
    for i in instrs:
        if i["op"] == "fusion":
            kind = re.search(r"kind=(k\w+)", i["rest"])
            kinds[f"fusion {kind.group(1) if kind else '?'}"] += 1
            callee = called(i, "calls")
            if callee and has_dot(comps, callee):
                backend = re.search(r'"kind":"(\w+)"', i["rest"])
                gemms.append(f"{i['name']}: fusion{' ' + backend.group(1) if backend else ''} -> {i['type'][:60]}")
        elif i["op"] == "custom-call":
            target = re.search(r'custom_call_target="([^"]+)"', i["rest"])
            t = target.group(1) if target else "?"
            kinds[f"custom-call {t}"] += 1
            if re.search(r"gemm|matmul|dot", t, re.I):
                gemms.append(f"{i['name']}: {t} -> {i['type'][:60]}")
        else:
            kinds[i["op"]] += 1
            if i["op"] in ("dot", "convolution"):
                gemms.append(f"{i['name']}: {i['op']} -> {i['type'][:60]}")
    print(f"{path.split('/')[-1]}: the step loop is %{body}: {len(instrs)} instructions that run "
          f"(of {len(comps[body])}), about one kernel each on a GPU")
    for k, c in kinds.most_common():
        print(f"  {c:3d} x {k}")
    print(f"  matrix products ({len(gemms)}):")
    for g in gemms:
        print(f"    {g}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarize(p)
