#!/usr/bin/env bash
# Runs every benchmark side by side with its PyTorch-Python reference and writes the table into
# docs/performance.md (between the BENCH-TABLE markers; the rest of the file is kept).
#   usage: bench/run_all.sh [--device cpu|cuda] [--threads N] [--reps R] [--quick]
# CPU: needs Debian's python3-torch (the same LibTorch 1.13); installs it if missing.
# Each figure is the best of R repetitions (default 3), so a busy machine biases both sides alike less.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=cpu; THREADS=$(nproc); REPS=3; QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "run_all.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PY=${PY:-/usr/bin/python3}  # on the GPU machine: the python3 whose torch has CUDA
if ! $PY -c "import torch" 2>/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch >/dev/null
fi
BUILD=${SGMCMC_BUILD_DIR:-build}
if [ -z "${SGMCMC_NO_BUILD:-}" ]; then  # SGMCMC_NO_BUILD=1: the binaries in $BUILD as they are
  bash scripts/build.sh -DSGMCMC_BENCH=ON >/dev/null
  ninja -C "$BUILD" bench_update >/dev/null 2>&1 || cmake --build "$BUILD" --target bench_update >/dev/null
fi
BIN=$BUILD/sgmcmc
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
RATINGS=${RATINGS:-../shared/data/movielens-small/ratings.dat}
[ -f "$RATINGS" ] || RATINGS=data/movielens-small/ratings.dat
EPOCHS=10; BSTEPS=4000; PARAMS=10000000
if [ "$QUICK" = 1 ]; then EPOCHS=2; BSTEPS=1000; PARAMS=2000000; REPS=1; fi
if [ "$DEVICE" = cuda ]; then
  # On a GPU, 10 epochs (1,000 steps) are a third of a second: the table would time the start-up (CUDA
  # context, cuBLAS handles, the data's upload) rather than the training. 100 epochs.
  PARAMS=100000000
  [ "$QUICK" = 1 ] || { EPOCHS=100; BSTEPS=10000; }
fi
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
RES=$TMP/results.jsonl

best() {  # best (max) value of KEY over the JSON lines of a command run REPS times
  local key=$1; shift
  local b=0
  for _ in $(seq "$REPS"); do
    v=$("$@" | $PY -c "import sys,json; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$key'])")
    b=$($PY -c "print(max($b, $v))")
  done
  echo "$b"
}
ours() {  # steps/s from summary.json of an sgmcmc run
  local out=$TMP/run; rm -rf "$out"
  "$BIN" train "$@" --out "$out" --overwrite -q >/dev/null
  $PY -c "import json; d=json.load(open('$out/summary.json')); print(json.dumps({'steps_per_second': d['steps_per_second']}))"
}

# eager (train.graph's default, auto, would capture on CUDA); the graph row sets it
MN="configs/mnist_bnn_sghmc.yaml --set data.dir=$FMNIST --set train.epochs=$EPOCHS --set train.burn_in=1 --set train.threads=$THREADS --set device=$DEVICE --set train.graph=false"
MN_SGD="configs/mnist_bnn_sgd.yaml --set data.dir=$FMNIST --set train.epochs=$EPOCHS --set train.burn_in=1 --set train.threads=$THREADS --set device=$DEVICE --set train.graph=false"
BP="configs/movielens_small_sghmc.yaml --set data.path=$RATINGS --set data.fold=0 --set train.steps=$BSTEPS --set train.burn_in_steps=0 --set train.threads=$THREADS --set device=$DEVICE"

echo "mnist sghmc ..." >&2
c_sghmc=$(best steps_per_second ours $MN)
p_sghmc=$(best steps_per_second $PY bench/ref_mnist_bnn.py --data $FMNIST --sampler sghmc --epochs $EPOCHS --threads "$THREADS" --device "$DEVICE")
c_graph=0
if [ "$DEVICE" = cuda ]; then  # the whole step captured in a CUDA graph (train.graph)
  echo "mnist sghmc, train.graph ..." >&2
  c_graph=$(best steps_per_second ours $MN --set train.graph=true)
fi
h1_full=0
if [ "$DEVICE" = cuda ] && [ "$QUICK" = 0 ]; then  # App. H.1 in full: the process's wall clock, the defaults
  echo "App. H.1 in full ..." >&2
  for _ in $(seq "$REPS"); do
    s=$(date +%s.%N)
    "$BIN" train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --out "$TMP/h1" --overwrite -q >/dev/null
    e=$(date +%s.%N)
    h1_full=$($PY -c "t = $e - $s; print(t if $h1_full == 0 else min($h1_full, t))")
  done
fi
echo "mnist sgd ..." >&2
c_sgd=$(best steps_per_second ours $MN_SGD)
p_sgd=$(best steps_per_second $PY bench/ref_mnist_bnn.py --data $FMNIST --sampler sgd --epochs $EPOCHS --threads "$THREADS" --device "$DEVICE")
echo "mnist sghmc, 10 parallel chains ..." >&2
CH_EPOCHS=$(( EPOCHS > 2 ? EPOCHS / 2 : 1 ))
c_ch1=$(best steps_per_second ours $MN --set chains=1 --set train.epochs=$CH_EPOCHS)
c_ch10=$(best steps_per_second ours $MN --set chains=10 --set train.epochs=$CH_EPOCHS)
c_ch100=0
if [ "$DEVICE" = cuda ]; then c_ch100=$(best steps_per_second ours $MN --set chains=100 --set train.epochs=$CH_EPOCHS); fi
echo "bpmf sghmc ..." >&2
c_bp=$(best steps_per_second ours $BP)
p_bp=$(best steps_per_second $PY bench/ref_bpmf.py --ratings "$RATINGS" --steps $BSTEPS --eval 20 --threads "$THREADS" --device "$DEVICE")
echo "update ..." >&2
"./$BUILD/bench_update" --device "$DEVICE" --params $PARAMS --threads "$THREADS" --json "$RES" >&2
p_upd=$($PY bench/ref_update.py --device "$DEVICE" --params $PARAMS --threads "$THREADS")

if [ "$DEVICE" = cuda ]; then
  NAME=$($PY -c "import torch; print(torch.cuda.get_device_name(0))")
else
  NAME="$(lscpu | sed -n 's/^Model name: *//p' | head -1)$(bash scripts/cpu_generation.sh), $THREADS threads"
fi
TABLE=$TMP/table.md
$PY - "$RES" "$p_upd" > "$TABLE" <<EOF
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
py = json.loads(sys.argv[2])
def r(a, b): return f"{a/b:.2f}×"
print("Measured $(date -u +%Y-%m-%d) on **$NAME** (device $DEVICE), commit $(git rev-parse --short HEAD), best of $REPS.")
print()
if $h1_full > 0:
    print(f"App. H.1 in full: {$h1_full:.1f} s (\`sgmcmc train configs/mnist_bnn_sghmc.yaml --set device=cuda\`, 800 epochs, the defaults, the process's wall clock, best of $REPS)")
    print()
print("| benchmark | sgmcmc | PyTorch-Python | ratio |")
print("| --- | ---: | ---: | ---: |")
print(f"| MNIST BNN 784-100-10, batch 500, SGHMC ($EPOCHS epochs, Gibbs + eval per epoch), eager | {$c_sghmc:.1f} steps/s | {$p_sghmc:.1f} steps/s | {r($c_sghmc, $p_sghmc)} |")
if $c_graph > 0:
    print(f"| same, \`train.graph: true\` (whole step in one CUDA graph); App. H.1's 80,000 steps ≈ {80000/$c_graph:.1f} s | {$c_graph:.1f} steps/s | {$p_sghmc:.1f} steps/s | {r($c_graph, $p_sghmc)} |")
print(f"| same, plain SGD | {$c_sgd:.1f} steps/s | {$p_sgd:.1f} steps/s | {r($c_sgd, $p_sgd)} |")
print(f"| SGHMC / SGD time per step (sampler overhead) | {$c_sgd/$c_sghmc:.2f} | {$p_sgd/$p_sghmc:.2f} | |")
print(f"| MNIST BNN SGHMC, 10 parallel chains (\`chains: 10\`) vs \`chains: 1\` | {$c_ch10:.1f} vs {$c_ch1:.1f} steps/s: 10 chains cost {$c_ch1/$c_ch10:.1f}× one | | |")
if $c_ch100 > 0:
    print(f"| MNIST BNN SGHMC, 100 parallel chains vs \`chains: 1\` | {$c_ch100:.1f} vs {$c_ch1:.1f} steps/s: 100 chains cost {$c_ch1/$c_ch100:.1f}× one | | |")
print(f"| BPMF movielens-small fold 0, d 20, batch 4,000, SGHMC | {$c_bp:.1f} steps/s ({$c_bp*4000/1e6:.2f} M ratings/s) | {$p_bp:.1f} steps/s | {r($c_bp, $p_bp)} |")
print()
print("Sampler update alone on a flat float32 buffer of $PARAMS parameters (bytes = 2·(θ + state)·4 + ∇·4 per parameter):")
print()
print("| sampler | ms/step | GB/s | % of copy bandwidth | PyTorch-Python ms/step | ratio |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for x in rows:
    p = py.get(x["sampler"])
    pc = f"{p:.2f}" if p else "–"
    rc = f"{p / x['ms_per_step']:.2f}×" if p else ""
    print(f"| {x['sampler']} | {x['ms_per_step']:.2f} | {x['gb_per_s']:.1f} | {100*x['gb_per_s']/x['copy_gb_per_s']:.0f} % (copy {x['copy_gb_per_s']:.1f} GB/s) | {pc} | {rc} |")
EOF
DOC=docs/performance.md
[ -f $DOC ] || printf '# Performance\n\n<!-- BENCH-TABLE:%s -->\n<!-- /BENCH-TABLE:%s -->\n' "$DEVICE" "$DEVICE" > $DOC
if ! grep -q "<!-- BENCH-TABLE:$DEVICE -->" $DOC; then
  printf '\n<!-- BENCH-TABLE:%s -->\n<!-- /BENCH-TABLE:%s -->\n' "$DEVICE" "$DEVICE" >> $DOC
fi
$PY - "$DOC" "$TABLE" "$DEVICE" <<'EOF'
import sys, re
doc, table, dev = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
s = open(doc).read()
a, b = f"<!-- BENCH-TABLE:{dev} -->", f"<!-- /BENCH-TABLE:{dev} -->"
i, j = s.index(a) + len(a), s.index(b)
open(doc, "w").write(s[:i] + "\n" + table + s[j:])
EOF
cat "$TABLE"
