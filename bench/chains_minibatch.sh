#!/bin/bash
# App. H.1 with parallel chains, each chain its own minibatch against one minibatch shared by every chain
# (train.chain_minibatch: own | shared), interleaved rounds: µs a step of stepping (metrics.csv's
# time.steps between the first and last rows: no start-up, no per-epoch work), test error and NLL.
#   bash bench/chains_minibatch.sh [CHAINS] [ROUNDS] [THREADS] [DEVICE]    (defaults 10 3 2 cpu)
# Needs build/sgmcmc (SGMCMC_BUILD_DIR) and Fashion-MNIST (FMNIST, default Debian's).
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-10}; ROUNDS=${2:-3}; THREADS=${3:-2}; DEVICE=${4:-cpu}
BIN=${SGMCMC_BUILD_DIR:-build}/sgmcmc
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PY=${PY:-/usr/bin/python3}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
echo "chains $C, $THREADS threads, device $DEVICE, commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), $(date -u +%FT%RZ)"
for r in $(seq "$ROUNDS"); do
  for mode in own shared; do
    out=$TMP/$mode
    "$BIN" train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set train.epochs=6 --set train.burn_in=1 \
      --set train.threads="$THREADS" --set device="$DEVICE" --set chains="$C" --set train.chain_minibatch=$mode \
      --out "$out" --overwrite -q > /dev/null
    $PY - "$out" "$r" "$mode" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/metrics.csv")))
a, b = rows[0], rows[-1]
us = (float(b["time.steps"]) - float(a["time.steps"])) / (float(b["step"]) - float(a["step"])) * 1e6
d = json.load(open(sys.argv[1] + "/summary.json"))
print(f"round {sys.argv[2]} {sys.argv[3]:6s} {us:9.0f} us/step  test_error {d['test_error']:.4f}  test_nll {d['test_nll']:.4f}")
PY
  done
done
