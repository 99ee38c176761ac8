#!/usr/bin/env bash
# Configures and builds sgmcmc (Release) into build/ (or $SGMCMC_BUILD_DIR). Extra args go to cmake.
# SGMCMC_TARGET=sgmcmc builds only the binary (the main job), not the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SGMCMC_BUILD_DIR:-build}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
elif (($#)); then
  cmake -S . -B "$build" "$@" >/dev/null
fi
cmake --build "$build" -j"$(nproc)" ${SGMCMC_TARGET:+--target "$SGMCMC_TARGET"}
