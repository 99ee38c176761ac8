#!/usr/bin/env python3
"""scripts/launch_verdicts.py on a made-up log folder whose answers are known: a clearly faster candidate
with passing tests flips, one inside the baseline's spread is kept, a failed test breaks a faster one, a
skipped test or an untimed row gives no evidence. Exit 0 when every verdict is as expected."""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "..", "scripts", "launch_verdicts.py")


def rows(label, us):
    """bench_step's JSON line for µs-per-step samples (two rounds of these are written)."""
    return json.dumps({"bench": "step", "label": label, "step_steps_per_s": [1e6 / u for u in us]})


def verdicts_of(lines, logs):
    """launch_verdicts.py's output on a folder of these launch_steps.jsonl lines and {gtest log: lines}."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "launch_steps.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")
        for name, text in logs.items():
            with open(os.path.join(d, name), "w") as f:
                f.write("\n".join(text) + "\n")
        with open(os.path.join(d, "h1_defaults1_true_summary.json"), "w") as f:
            json.dump({"wall_seconds": 5.6, "time.steps": 3.9, "time.eval": 0.6, "test_error": 0.1}, f)
        return subprocess.run([sys.executable, script, d], stdout=subprocess.PIPE, text=True, check=True).stdout


def main():
    lines = []
    base = [45.0, 45.5, 46.0, 45.2, 45.8]
    for kind in ("mlp_h1_{}_steps1_graph", "mlp_h1_{}_steps100_graph", "fnn800_{}_graph"):
        lines.append(rows(kind.format("gemm"), base))
        lines.append(rows(kind.format("gemm_own"), [30.0, 30.4, 30.2, 30.1, 30.3]))      # clearly faster
        lines.append(rows(kind.format("columns"), [44.8, 45.6, 45.1, 46.1, 45.3]))       # inside the spread
        lines.append(rows(kind.format("gemm_forward"), [35.0, 35.1, 35.2, 35.3, 35.4]))  # faster, test failed
        lines.append(rows(kind.format("gemm_wgrad"), [35.0, 35.1, 35.2, 35.3, 35.4]))    # faster, test skipped
    lines.append(rows("mlp_h1_gemm_own_pdl_steps1_graph", [29.0] * 5))                   # fnn800 row missing
    lines.append(rows("chains100_shared_aten_graph", [700.0, 710.0, 705.0]))
    lines.append(rows("chains100_shared_fused_graph", [200.0, 205.0, 210.0]))
    # a second round of one row: pooled with the first, it now overlaps the baseline -> not faster
    lines.append(rows("chains1000_shared_aten_graph", [7000.0, 7100.0, 7050.0]))
    lines.append(rows("chains1000_shared_fused_graph", [6000.0, 6050.0, 6100.0]))
    lines.append(rows("chains1000_shared_fused_graph", [7200.0, 7300.0, 7250.0]))
    logs = {
        "test_mlp_forward_head.log": ["[       OK ] MlpForwardHead.CudaEqualsReference (120 ms)",
                                      "[  FAILED  ] MlpForwardHead.CudaEqualsReference (3 ms)"],
        "test_weight_grad.log": ["[  SKIPPED ] WeightGrad.CudaEqualsReferenceBitForBit (0 ms)"],
        "test_graph.log": ["[       OK ] Graph.CudaOwnProductsRunNearCublasRun (900 ms)",
                           "[       OK ] Graph.CudaPdlRunEqualsPlainRun (400 ms)"],
        "test_mlp_tail.log": ["[       OK ] MlpTail.CudaEqualsReferenceBitForBit (50 ms)"],
        "test_mlp_fused.log": ["[       OK ] MlpFused.CudaSharedChainsEqualsReference (2000 ms)"],
    }
    out = verdicts_of(lines, logs)
    verdicts = {l.split(": ")[0]: l.split(": ")[1].split("  (")[0] for l in out.splitlines()
                if not l.startswith(" ") and ": " in l}
    expected = {
        "own launches": "broken",             # faster everywhere, but the forward's GPU test failed
        "own forward alone": "broken",        # faster, but its test failed (a later FAILED wins over OK)
        "own wgrad alone": "no evidence",     # faster, its test skipped
        "column blocks": "keep",              # tests pass, times inside the baseline's spread
        "programmatic launches": "no evidence",  # timed in one of the three rows only
        "shared chains through the pass": "keep",  # 100 chains faster; 1,000 not, once both rounds pool
    }
    bad = {k: (verdicts.get(k), v) for k, v in expected.items() if verdicts.get(k) != v}
    if "wall   5.60 s" not in out:
        bad["H.1 in full"] = ("missing", "printed")
    if bad:
        print(out)
        sys.exit(f"launch_verdicts: unexpected verdicts (got, expected): {bad}")
    # and a flip: the same folder with the forward's and WeightGrad's GPU tests passing
    logs["test_weight_grad.log"] = ["[       OK ] WeightGrad.CudaEqualsReferenceBitForBit (30 ms)"]
    logs["test_mlp_forward_head.log"] = logs["test_mlp_forward_head.log"][:1]
    out = verdicts_of(lines, logs)
    first = [l for l in out.splitlines() if l.startswith("own launches: ")]
    if not first or not first[0].startswith("own launches: flip  (kernels.cuda_mlp_forward"):
        print(out)
        sys.exit("launch_verdicts: own launches should flip with every test passing")
    print("launch_verdicts: every verdict as expected")


if __name__ == "__main__":
    main()
