#!/usr/bin/env bash
# The GPU benchmark: builds sgmcmc with CUDA, runs the CUDA tests, times the training step and App. H.1,
# and writes the tables (Markdown) and the raw records (JSON lines, summary.json files) into one folder.
#
#   bench/gpu.sh [COMMAND ...]        (from anywhere; default: build test steps h1)
#     build    configure and build build-cuda/ against the PyTorch install's LibTorch (-DSGMCMC_CUDA=ON
#              -DSGMCMC_BENCH=ON; CUDA_ARCH, default 90)
#     test     every test of the CUDA build (the CPU ones too, against LibTorch 2.x; the nvcc compile checks
#              are left out: the build itself compiled the kernels)
#     steps    bench_step, graph-replayed, with the default kernels: App. H.1 (one launch a step and 100
#              steps a launch), FNN-800, the CNN; and bench_epoch's ops and seconds per phase of H.1
#     h1       App. H.1 in full (800 epochs) with the defaults, eager and graph-replayed: wall clock, phases
#     pending  the variants that wait for a GPU's timing (docs/gpu_kernels.md, table 2), each against the
#              defaults in interleaved rounds: the step (H.1 and FNN-800) and H.1 in full
#     tables   the Markdown tables from the records already in OUT (every other command ends with it)
#
# Environment: OUT (default bench/results/gpu-<date>), FMNIST (Fashion-MNIST's IDX folder, default
# /usr/share/datasets/fashion-mnist), BUILD (default build-cuda), ROUNDS (bench_step's interleaved rounds,
# default 5), PENDING_ROUNDS (rounds of the pending A/B, default 2), PENDING_ONLY (the pending variants to
# run, by name, default all of them: columns kparts4 columns_kparts4 forward wgrad own), JOBS (build jobs,
# default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-cuda}
OUT=${OUT:-bench/results/gpu-$(date +%Y-%m-%d)}
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
ROUNDS=${ROUNDS:-5}
PENDING_ROUNDS=${PENDING_ROUNDS:-2}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
say() { echo "[gpu.sh $(( $(date +%s) - t0 )) s] $*"; }

# FNN-800 runs SGHMC at a step size it trains with (its config's own sampler is SGLD).
FNN800="configs/mnist_fnn800_sgld.yaml --set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"
H1=configs/mnist_bnn_sghmc.yaml
CNN="configs/mnist_cnn_sgld.yaml --set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"

# The pending variants: NAME and its --set options (docs/gpu_kernels.md, table 2). A variant that beats the
# defaults on both rows of the step and on H.1 in full, with its GPU tests passing, becomes its key's auto.
declare -A PENDING=(
  [columns]="--set kernels.cuda_mlp_tail=columns"
  [kparts4]="--set kernels.cuda_mlp_kparts=4"
  [columns_kparts4]="--set kernels.cuda_mlp_tail=columns --set kernels.cuda_mlp_kparts=4"
  [forward]="--set kernels.cuda_mlp_forward=fused"
  [wgrad]="--set kernels.cuda_mlp_wgrad=fused"
  [own]="--set kernels.cuda_mlp_forward=fused --set kernels.cuda_mlp_wgrad=fused"
)
read -r -a PENDING_ORDER <<< "${PENDING_ONLY:-columns kparts4 columns_kparts4 forward wgrad own}"
# The GPU tests that check the pending kernels against their CPU references.
PENDING_TESTS="MlpFused.CudaEqualsReference:MlpFused.CudaWithPrecisionsEqualsReference:MlpTail.*:MlpForwardHead.*:WeightGrad.*:Graph.CudaOwnProductsRunNearCublasRun"

cmd_build() {
  local prefix
  prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
    { echo "gpu.sh: no PyTorch for python3 (its LibTorch is what the CUDA build links)" >&2; return 1; }
  local gen=(); command -v ninja > /dev/null && gen=(-G Ninja)
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
  cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DSGMCMC_CUDA=ON -DSGMCMC_BENCH=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DCMAKE_PREFIX_PATH="$prefix" > "$OUT/build.log" 2>&1
  cmake --build "$BUILD" -j"${JOBS:-$(nproc)}" >> "$OUT/build.log" 2>&1 ||
    { grep -E "error" "$OUT/build.log" | head -20; echo "gpu.sh: build failed ($OUT/build.log)" >&2; return 1; }
  say "built $BUILD"
}

need() { [ -x "$BUILD/$1" ] || { echo "gpu.sh: no $BUILD/$1 (run: bench/gpu.sh build)" >&2; return 1; }; }

cmd_test() {
  need sgmcmc
  local rc=0
  (cd "$BUILD" && ctest -j"${JOBS:-4}" --timeout 900 -E 'cuda_compile' --output-on-failure > "$OUT/ctest.log" 2>&1) || rc=$?
  grep -E "tests passed|tests failed|\*\*\*Failed|\(Failed\)" "$OUT/ctest.log" | head -30
  say "ctest rc=$rc ($OUT/ctest.log)"
  return 0  # the timings still run; ctest.log and the tables say what failed
}

# One bench_step row into steps.jsonl: LABEL CONFIG... [bench_step options]
step_row() {
  local label=$1; shift
  # shellcheck disable=SC2068
  timeout 300 "$BUILD/bench_step" $@ --set data.dir="$FMNIST" --set device=cuda --threads 16 --rounds "$ROUNDS" \
    --steps 500 --label "$label" --json "$OUT/steps.jsonl" 2>&1 | grep -E "step at|rror" || true
}

cmd_steps() {
  need bench_step
  step_row h1_graph "$H1" --graph
  step_row h1_steps100_graph "$H1" --graph --graph-steps 100
  step_row fnn800_graph "$FNN800" --graph
  step_row cnn_graph "$CNN" --graph
  step_row h1_eager "$H1"
  if [ -x "$BUILD/bench_epoch" ]; then
    timeout 600 "$BUILD/bench_epoch" "$H1" --set data.dir="$FMNIST" --set device=cuda --set train.graph=true \
      --set train.epochs=100 --set train.burn_in=2 --set output.dir=/tmp/sgmcmc-bench-epoch \
      --json "$OUT/epoch.json" > "$OUT/epoch.log" 2>&1 && say "bench_epoch: $OUT/epoch.log" || say "bench_epoch failed"
  fi
}

# App. H.1 in full: TAG GRAPH [--set options]; summary.json kept as h1_TAG_summary.json, the wall clock in h1.jsonl.
h1_run() {
  local tag=$1 graph=$2; shift 2
  local s e rc=0
  s=$(date +%s.%N)
  # shellcheck disable=SC2068
  timeout 900 "$BUILD/sgmcmc" train "$H1" --set data.dir="$FMNIST" --set device=cuda --set train.graph="$graph" $@ \
    --out "/tmp/sgmcmc-h1-$tag" --overwrite -q > "$OUT/h1_$tag.log" 2>&1 || rc=$?
  e=$(date +%s.%N)
  cp "/tmp/sgmcmc-h1-$tag/summary.json" "$OUT/h1_${tag}_summary.json" 2>/dev/null || true
  python3 - "$tag" "$graph" "$rc" "$s" "$e" "$OUT/h1_${tag}_summary.json" "$*" >> "$OUT/h1.jsonl" <<'EOF'
import json, os, sys
tag, graph, rc, s, e, path, sets = sys.argv[1:]
d = json.load(open(path)) if os.path.exists(path) else {}
print(json.dumps({"tag": tag, "graph": graph == "true", "rc": int(rc), "wall_s": round(float(e) - float(s), 2),
                  "sets": sets, "test_error": d.get("test_error"), "test_nll": d.get("test_nll"),
                  **{k: round(v, 3) for k, v in d.items() if k.startswith("time.")}}))
EOF
  say "H.1 in full, $tag: rc=$rc"
}

cmd_h1() {
  need sgmcmc
  h1_run defaults_eager false
  h1_run defaults_graph true
}

cmd_pending() {
  need bench_step; need sgmcmc
  if [ -x "$BUILD/test_mlp_fused" ]; then
    for t in test_mlp_fused test_mlp_tail test_mlp_forward_head test_weight_grad test_graph; do
      [ -x "$BUILD/$t" ] || continue
      timeout 600 "$BUILD/$t" --gtest_filter="$PENDING_TESTS" > "$OUT/pending_$t.log" 2>&1 &&
        say "$t (pending kernels' tests): passed" || say "$t (pending kernels' tests): FAILED ($OUT/pending_$t.log)"
    done
  fi
  local r v
  for v in "${PENDING_ORDER[@]}"; do
    [ -n "${PENDING[$v]:-}" ] || { echo "gpu.sh: no pending variant '$v' (${!PENDING[*]})" >&2; return 2; }
  done
  for r in $(seq 1 "$PENDING_ROUNDS"); do  # interleaved: defaults, then each variant, every round
    for v in defaults "${PENDING_ORDER[@]}"; do
      local sets=${PENDING[$v]:-}
      # shellcheck disable=SC2086
      step_row "pending_h1_${v}_r$r" "$H1" --graph $sets
      # shellcheck disable=SC2086
      step_row "pending_fnn800_${v}_r$r" "$FNN800" --graph $sets
      # shellcheck disable=SC2086
      h1_run "pending_${v}_r$r" true $sets
    done
  done
}

cmd_tables() {
  python3 - "$OUT" > "$OUT/tables.md" <<'EOF'
import collections, json, os, re, statistics, sys
out = sys.argv[1]
def lines(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
steps, h1 = lines("steps.jsonl"), lines("h1.jsonl")
print("# GPU benchmark\n")
if os.path.exists(os.path.join(out, "nvidia-smi.txt")):
    gpu = re.findall(r"NVIDIA [A-Z]\w+[\w -]*?(?=\s{2}|\|)", open(os.path.join(out, "nvidia-smi.txt")).read())
    print(f"GPU: {gpu[0].strip() if gpu else 'unknown'}\n")
plain = [d for d in steps if not d["label"].startswith("pending_")]
if plain:
    print("## The step (bench_step: median of the interleaved rounds)\n")
    print("| row | µs a step | step ÷ floor | floor |\n| --- | ---: | ---: | --- |")
    for d in plain:
        print(f"| {d['label']} | {1e6 / d['step_median']:.1f} | {d['fraction_of_floor']:.3f} | {d.get('floor', '')} |")
    print()
runs = [d for d in h1 if not d["tag"].startswith("pending_")]
if runs:
    print("## App. H.1 in full (800 epochs)\n")
    print("| run | wall s | time.steps s | test error | test NLL |\n| --- | ---: | ---: | ---: | ---: |")
    for d in runs:
        print(f"| {d['tag']} | {d['wall_s']} | {d.get('time.steps', '')} | {d['test_error']} | {d['test_nll']} |")
    print()
pend = collections.defaultdict(dict)
for d in steps:
    m = re.match(r"pending_(h1|fnn800)_(.+)_r\d+$", d["label"])
    if m:
        pend[m.group(2)].setdefault(m.group(1), []).append(1e6 / d["step_median"])
for d in h1:
    m = re.match(r"pending_(.+)_r\d+$", d["tag"])
    if m and d["rc"] == 0:
        pend[m.group(1)].setdefault("h1_full", []).append(d["wall_s"])
if pend:
    print("## Pending variants against the defaults (µs a step, H.1 in full s; every round)\n")
    print("| variant | H.1 step | FNN-800 step | H.1 in full | faster on all three |\n| --- | --- | --- | --- | --- |")
    base = pend.get("defaults", {})
    for v, cols in pend.items():
        cells = [" / ".join(f"{x:.1f}" for x in cols.get(k, [])) for k in ("h1", "fnn800", "h1_full")]
        wins = v != "defaults" and all(k in cols and k in base and max(cols[k]) < min(base[k])
                                       for k in ("h1", "fnn800", "h1_full"))
        print(f"| {v} | {' | '.join(cells)} | {'yes' if wins else ('' if v == 'defaults' else 'no')} |")
EOF
  say "tables: $OUT/tables.md"
}

cmds=("$@")
[ ${#cmds[@]} -eq 0 ] && cmds=(build test steps h1)
for c in "${cmds[@]}"; do
  case "$c" in
    build|test|steps|h1|pending|tables) say "$c"; "cmd_$c" ;;
    *) echo "gpu.sh: unknown command '$c' (build, test, steps, h1, pending, tables)" >&2; exit 2 ;;
  esac
done
[ "${cmds[*]}" = tables ] || cmd_tables
