#!/bin/bash
# App. H.1 with parallel chains, each chain its own minibatch against one minibatch shared by every chain
# (train.chain_minibatch: own | shared).
#   bash bench/chains_minibatch.sh [CHAINS] [ROUNDS] [THREADS] [DEVICE]              (defaults 10 3 2 cpu)
#     interleaved rounds of 6 epochs: µs a step of stepping (metrics.csv's time.steps between the first and
#     last rows: no start-up, no per-epoch work), test error and NLL
#   bash bench/chains_minibatch.sh --quality [CHAINS] [SEEDS] [THREADS] [DEVICE]     (defaults 10 3 2 cpu)
#     20 epochs (burn-in 5) for seeds 1..SEEDS: the averaged predictive's test error, NLL and ECE, the
#     chains' R̂ and ESS, then mean ± sd over the seeds
# Needs build/sgmcmc (SGMCMC_BUILD_DIR) and Fashion-MNIST (FMNIST, default Debian's).
set -euo pipefail
cd "$(dirname "$0")/.."
QUALITY=0
[ "${1:-}" = --quality ] && { QUALITY=1; shift; }
C=${1:-10}; N=${2:-3}; THREADS=${3:-2}; DEVICE=${4:-cpu}
BIN=${SGMCMC_BUILD_DIR:-build}/sgmcmc
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PY=${PY:-/usr/bin/python3}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
echo "chains $C, $THREADS threads, device $DEVICE, commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), $(date -u +%FT%RZ)"
train() {  # MODE OUT --set ...
  local mode=$1 out=$2; shift 2
  "$BIN" train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set train.threads="$THREADS" \
    --set device="$DEVICE" --set chains="$C" --set train.chain_minibatch="$mode" "$@" --out "$out" --overwrite -q > /dev/null
}
if [ $QUALITY = 1 ]; then
  for seed in $(seq "$N"); do
    for mode in own shared; do
      train $mode "$TMP/$mode-$seed" --set train.epochs=20 --set train.burn_in=5 --set seed="$seed"
    done
  done
  $PY - "$TMP" "$N" <<'PY'
import json, statistics, sys
keys = ["test_error", "test_nll", "test_ece", "rhat_test_loglik", "ess_test_loglik", "rhat_weights_max", "ess_weights_min"]
for mode in ("own", "shared"):
    runs = [json.load(open(f"{sys.argv[1]}/{mode}-{s}/summary.json")) for s in range(1, int(sys.argv[2]) + 1)]
    for s, d in enumerate(runs, 1):
        print(f"seed {s} {mode:6s} " + "  ".join(f"{k} {d[k]:.4f}" for k in keys))
    sd = lambda v: statistics.stdev(v) if len(v) > 1 else float("nan")
    print(f"{mode:6s} mean ± sd: " + "  ".join(f"{k} {statistics.mean([d[k] for d in runs]):.4f} ± {sd([d[k] for d in runs]):.4f}" for k in keys))
PY
  exit 0
fi
for r in $(seq "$N"); do
  for mode in own shared; do
    train $mode "$TMP/$mode" --set train.epochs=6 --set train.burn_in=1
    $PY - "$TMP/$mode" "$r" "$mode" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/metrics.csv")))
a, b = rows[0], rows[-1]
us = (float(b["time.steps"]) - float(a["time.steps"])) / (float(b["step"]) - float(a["step"])) * 1e6
d = json.load(open(sys.argv[1] + "/summary.json"))
print(f"round {sys.argv[2]} {sys.argv[3]:6s} {us:9.0f} us/step  test_error {d['test_error']:.4f}  test_nll {d['test_nll']:.4f}")
PY
  done
done
