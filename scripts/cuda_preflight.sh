#!/usr/bin/env bash
# The CUDA build's pre-flight on a machine without a GPU (podman, Debian's mirror and PyPI): compiles the
# CUDA build of this tree against LibTorch 2.11 / CUDA 13 and runs its tests (the GPU tests skip), so that a
# GPU session does not spend its device minutes on a compile error.
#   bash scripts/cuda_preflight.sh [TARGETS [TESTS]]
#     TARGETS  ninja targets (default all), e.g. "sgmcmc_main test_mlp_fused bench_step"
#     TESTS    a ctest -R pattern (default every test), e.g. "test_mlp_fused|test_first_try"
# The first run builds docker/Dockerfile.cuda's build stage as sgmcmc:cuda-build (the whole CUDA build and
# its ctest: about half an hour on 2 cores with the pip layer cached); later runs start from it and
# recompile only what changed (docker/Dockerfile.cuda-check): a few minutes for a kernel or two.
# `podman rmi sgmcmc:cuda-build` makes the next run start from the current tree.
set -euo pipefail
cd "$(dirname "$0")/.."
build=../shared/tools/container-build.sh
secret=()
[ -s /etc/ssl/certs/ca-certificates.crt ] && secret=(--secret id=pip_cert,src=/etc/ssl/certs/ca-certificates.crt)
if ! command -v podman >/dev/null || ! podman image exists localhost/sgmcmc:cuda-build; then
  "$build" "${secret[@]}" -f docker/Dockerfile.cuda --target build -t sgmcmc:cuda-build .
fi
"$build" -f docker/Dockerfile.cuda-check --build-arg TARGETS="${1:-all}" --build-arg TESTS="${2:-.}" -t sgmcmc:cuda-check .
podman rmi sgmcmc:cuda-check > /dev/null
