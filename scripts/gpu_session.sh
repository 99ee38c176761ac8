#!/usr/bin/env bash
# Everything a session with a GPU machine (the `device` tool) needs in one call, so the 30 minutes of
# device time go to measuring. Here first:  ../shared/tools/device-deps.sh nlohmann-json3-dev
# Then, as the device command (carry .devdeps):  bash scripts/gpu_session.sh [--quick]
# It builds against the machine's PyTorch LibTorch (2.x, CUDA) with -DSGMCMC_CUDA=ON into build-cuda/,
# runs the CUDA tests, then bench/run_all.sh --device cuda, and leaves the logs and the updated
# docs/performance.md in $OUT (the device tool brings $OUT back).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/sgmcmc-gpu-out}
mkdir -p "$OUT"
QUICK=()
[ "${1:-}" = --quick ] && QUICK=(--quick)
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
if ! bash .devdeps/device-build.sh -DSGMCMC_CUDA=ON -DSGMCMC_BENCH=ON > "$OUT/build.log" 2>&1; then
  echo "build failed:"; grep -E "error|Error" "$OUT/build.log" | head -40; tail -20 "$OUT/build.log"; exit 1
fi
grep -E "Distributed runs|CUDA" "$OUT/build.log" | head -5   # which c10d backends (NCCL?) the build found
export LD_LIBRARY_PATH="/tmp/devdeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for t in test_fused test_graph test_cuda_consistency; do
  build-cuda/$t > "$OUT/$t.log" 2>&1
  echo "$t rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) " "$OUT/$t.log"
done
# c10d on the GPU: a one-rank NCCL group (one GPU cannot host two NCCL ranks) and the backend errors.
build-cuda/test_distributed --gtest_filter='C10dCommunicator.*:DistributedConfig.*' > "$OUT/test_distributed.log" 2>&1
echo "test_distributed (c10d) rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) " "$OUT/test_distributed.log"
PY=$(command -v python3) SGMCMC_BUILD_DIR=build-cuda bash bench/run_all.sh --device cuda "${QUICK[@]}" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; tail -25 "$OUT/bench.log"
cp docs/performance.md "$OUT/"
