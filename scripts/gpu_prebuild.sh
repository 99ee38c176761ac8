#!/usr/bin/env bash
# The GPU session's programs, compiled here (no GPU needed) so that a device call spends none of its
# minutes compiling: the build of the launch stage's ten programs takes ~250 s of a 900 s budget there.
# Built against the LibTorch the GPU machine has (torch 2.11.0+cu130 in its python3): PyTorch 2.11's CUDA 13
# wheel from PyPI (the same libraries, installed with pip --target into build-gpubin/torch-cu13) and this
# machine's CUDA 13 toolkit (nvcc, cuBLASLt, CUPTI), for sm_90 (H100 / H200). The programs are stripped and
# packed as .gpubin/bin.tar.xz with build-cuda/ paths; carry .gpubin and gpu_session.sh takes them instead of
# building (its unpack stage, and launch / launch_more when .gpubin is there), after checking that each one
# loads against the machine's LibTorch.
#   bash scripts/gpu_prebuild.sh [TARGET ...]      default: the launch stage's targets
# Also runs the packed tests here on the CPU (their GPU tests skip), against the wheel's libraries: a program
# that does not load or link here does not go to the device. 14 min on 2 cores from scratch, ~2 min after a
# change; the pip step (4.6 GB, under a minute) and the build tree are kept in build-gpubin/ for later runs (ignored by git, as /build*/).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
# shellcheck disable=SC2207
[ ${#targets[@]} -eq 0 ] && targets=($(sed -n 's/^launch_targets="\(.*\)"$/\1/p' scripts/gpu_session.sh))
[ ${#targets[@]} -gt 0 ] || { echo "gpu_prebuild: no targets (gpu_session.sh's launch_targets)" >&2; exit 1; }
torch_version=2.11.0   # the GPU machine's (device README, KINDS.md): its CUDA 13.0 wheel is PyPI's default
prefix=build-gpubin/torch-cu13
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || { echo "gpu_prebuild: no nvcc at $nvcc (set CUDACXX to a CUDA 13 nvcc)" >&2; exit 1; }
"$nvcc" --version | grep -q "release 13\." || { echo "gpu_prebuild: $nvcc is not CUDA 13 (the wheel's)" >&2; exit 1; }
if ! grep -q "^__version__ = '$torch_version+cu13" "$prefix/torch/version.py" 2>/dev/null; then
  rm -rf "$prefix"
  py=/usr/bin/python3; "$py" -m pip --version > /dev/null 2>&1 || py=python3   # Debian's python3-pip, else PATH's
  "$py" -m pip install -q --no-cache-dir --target "$prefix" "torch==$torch_version"
fi
sp=$PWD/$prefix
sources=$(bash scripts/source_hash.sh)   # before compiling: an edit during the build makes the pack not match
# libtorch_cuda finds its nvidia/* neighbours by its $ORIGIN RUNPATH, which ld also follows when it links the
# programs. $sp/torch first in the prefix path: a LibTorch in the system's library folders (Debian's
# libtorch-dev) must not be found before the wheel's. The programs' own RUNPATH is two fixed links,
# /tmp/sgmcmc-prebuilt/torch-lib and cuda-lib, which gpu_session.sh points at the GPU machine's torch/lib and
# nvidia/cu13/lib (and this script at the wheel's, to run the tests here).
links=/tmp/sgmcmc-prebuilt
cmake -S . -B build-gpubin/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSGMCMC_CUDA=ON -DSGMCMC_BENCH=ON \
  -DSGMCMC_PYTHON=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")" \
  -DCMAKE_PREFIX_PATH="$sp/torch;$sp/torch/share/cmake" -DCMAKE_SKIP_BUILD_RPATH=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--enable-new-dtags,-rpath,$links/torch-lib:$links/cuda-lib" > build-gpubin/cmake.log 2>&1 ||
  { tail -30 build-gpubin/cmake.log; exit 1; }
grep -E "cuBLASLt|CUPTI|Distributed" build-gpubin/cmake.log || true
cmake --build build-gpubin/build -j"$(nproc)" --target "${targets[@]}"

# The programs' files (sgmcmc_main is sgmcmc-main on disk).
files=()
for t in "${targets[@]}"; do files+=("build-gpubin/build/${t/sgmcmc_main/sgmcmc-main}"); done
rm -rf $links && mkdir -p $links && ln -s "$sp/torch/lib" $links/torch-lib && ln -s "$sp/nvidia/cu13/lib" $links/cuda-lib
for f in "${files[@]}"; do
  if ldd "$f" | grep -q "not found"; then echo "gpu_prebuild: $f: $(ldd "$f" | grep "not found" | head -3)" >&2; exit 1; fi
  case $(basename "$f") in
    test_*) "$f" --gtest_brief=1 > "build-gpubin/$(basename "$f").log" 2>&1 ||
              { tail -20 "build-gpubin/$(basename "$f").log"; echo "gpu_prebuild: $f failed here" >&2; exit 1; }
            echo "$(basename "$f"): $(grep -E "PASSED|SKIPPED" "build-gpubin/$(basename "$f").log" | tr '\n' ' ')" ;;
  esac
done
"build-gpubin/build/sgmcmc" list > /dev/null
mkdir -p .gpubin build-gpubin/pack/build-cuda
rm -f .gpubin/bin.* build-gpubin/pack/build-cuda/*
cp "${files[@]}" build-gpubin/pack/build-cuda/
strip build-gpubin/pack/build-cuda/*
# What the device checks before it takes them: the torch build they link (its git_version) and the sources'
# hash (the commit is for people: the device's copy of the tree has no git).
{ echo "torch $(sed -n "s/^git_version = '\(.*\)'/\1/p" "$prefix/torch/version.py")"
  echo "sources $sources"
  echo "tree $(git rev-parse HEAD)$(git status --porcelain --untracked-files=no | grep -q . && echo " (with uncommitted changes)")"
} > build-gpubin/pack/build-cuda/PREBUILT
tar -C build-gpubin/pack -cJf .gpubin/bin.tar.xz build-cuda
du -h .gpubin/bin.tar.xz
echo "carry .gpubin (with .devdeps and .devdata); its programs are this tree's as of $(sed -n "s/^tree //p" build-gpubin/pack/build-cuda/PREBUILT)"
