#!/usr/bin/env bash
# Installs what sgmcmc needs on Debian bookworm (idempotent; quiet when everything is present).
#   usage: scripts/setup.sh [--with-data] [--with-plots] [--runtime]
#     (default)     build dependencies: compiler, cmake, LibTorch 1.13 (CPU), yaml-cpp, cxxopts, GoogleTest, ...
#     --runtime     only what the built binary needs to run (used by the Docker runtime stage)
#     --cuda        build dependencies without Debian's CPU LibTorch (the CUDA LibTorch comes from PyTorch)
#     --with-data   Fashion-MNIST (Debian's dataset-fashion-mnist, /usr/share/datasets/fashion-mnist)
#     --with-plots  python3-matplotlib for scripts/plot.py
# Run as root (or with sudo available).
set -euo pipefail
build_pkgs=(build-essential cmake ninja-build pkg-config libtorch-dev libyaml-cpp-dev libcxxopts-dev
            libgtest-dev libgmock-dev zlib1g-dev libopenblas0-pthread libgloo-dev)
runtime_pkgs=(libtorch1.13 libyaml-cpp0.7 zlib1g libopenblas0-pthread)
pkgs=("${build_pkgs[@]}")
for arg in "$@"; do
  case "$arg" in
    --runtime) pkgs=("${runtime_pkgs[@]}") ;;
    --cuda) pkgs=(build-essential cmake ninja-build pkg-config libyaml-cpp-dev libcxxopts-dev libgtest-dev
                  libgmock-dev zlib1g-dev python3-venv) ;;
    --with-data) ;;
    --with-plots) ;;
    *) echo "setup.sh: unknown option '$arg' (use --with-data, --with-plots, --runtime, --cuda)" >&2; exit 2 ;;
  esac
done
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
