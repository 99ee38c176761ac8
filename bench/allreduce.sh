#!/usr/bin/env bash
# All-reduce cost per step on this machine (Gloo, loopback): W local ranks of bench_allreduce.
#   usage: bench/allreduce.sh [W=2] [reps=50] [device=cpu|cuda]   (cuda: rank r on cuda:r, NCCL)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-2}; REPS=${2:-50}; DEVICE=${3:-cpu}
BUILD=${SGMCMC_BUILD_DIR:-build}
bash scripts/build.sh -DSGMCMC_BENCH=ON >/dev/null
cmake --build "$BUILD" --target bench_allreduce >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pids=()
for ((r = 0; r < W; r++)); do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$W MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT OMP_NUM_THREADS=1 \
    "$BUILD/bench_allreduce" "$REPS" "$DEVICE" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
