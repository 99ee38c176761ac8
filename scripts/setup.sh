#!/usr/bin/env bash
# Installs what sgmcmc needs on Debian bookworm (idempotent; quiet when everything is present).
# Also used by both Docker images (one recipe), including the CUDA image's Ubuntu base.
#   usage: scripts/setup.sh [--with-data] [--with-plots] [--runtime] [--cuda]
#     (default)     build dependencies: compiler, cmake, LibTorch 1.13 (CPU), yaml-cpp, cxxopts, GoogleTest, ...
#     --runtime     only what the built binary needs to run (used by the Docker runtime stages)
#     --cuda        without Debian's CPU LibTorch and OpenBLAS (the CUDA LibTorch comes from PyTorch);
#                   with --runtime: the runtime libraries of a CUDA build
#     --with-data   Fashion-MNIST (Debian's dataset-fashion-mnist, /usr/share/datasets/fashion-mnist)
#     --with-plots  python3-matplotlib for scripts/plot.py
# Run as root (or with sudo available).
set -euo pipefail
build_pkgs=(build-essential cmake ninja-build pkg-config libtorch-dev libyaml-cpp-dev libcxxopts-dev
            libgtest-dev libgmock-dev zlib1g-dev libdeflate-dev libopenblas0-pthread libgloo-dev nlohmann-json3-dev
            libdnnl-dev     # oneDNN's headers: the models' matrix products (src/kernels/cpu/matmul.h)
            python3-torch   # python3-torch: the TorchScript round-trip test and examples/torchscript
            python3-dev python3-venv pybind11-dev python3-pytest)  # the Python package (python/), its tests
cuda_build_pkgs=(build-essential cmake ninja-build pkg-config libyaml-cpp-dev libcxxopts-dev libgtest-dev
                 libgmock-dev zlib1g-dev libdeflate-dev nlohmann-json3-dev python3-venv)
# yaml-cpp's runtime package is versioned: 0.7 on Debian bookworm, 0.8 on newer Debian/Ubuntu.
yaml_rt=libyaml-cpp0.8
[[ -r /etc/os-release ]] && grep -q '^VERSION_CODENAME=bookworm' /etc/os-release && yaml_rt=libyaml-cpp0.7
runtime=0; cuda=0
for arg in "$@"; do
  case "$arg" in
    --runtime) runtime=1 ;;
    --cuda) cuda=1 ;;
    --with-data) ;;
    --with-plots) ;;
    *) echo "setup.sh: unknown option '$arg' (use --with-data, --with-plots, --runtime, --cuda)" >&2; exit 2 ;;
  esac
done
if ((runtime && cuda)); then pkgs=("$yaml_rt" zlib1g libdeflate0)
elif ((runtime)); then pkgs=(libtorch1.13 "$yaml_rt" zlib1g libdeflate0 libopenblas0-pthread)
elif ((cuda)); then pkgs=("${cuda_build_pkgs[@]}")
else pkgs=("${build_pkgs[@]}")
fi
for arg in "$@"; do
  case "$arg" in
    --with-data) pkgs+=(dataset-fashion-mnist) ;;
    --with-plots) pkgs+=(python3-matplotlib) ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
