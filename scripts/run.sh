#!/usr/bin/env bash
# The main job: installs what is missing, builds, then trains a short Bayesian MLP on Fashion-MNIST
# by SGHMC (configs/mnist_bnn_sghmc.yaml with a shortened budget) and prints its test error.
#   usage: scripts/run.sh [extra `sgmcmc train` arguments, e.g. --set train.epochs=50]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-data
SGMCMC_TARGET=sgmcmc bash scripts/build.sh  # the binary only, not the 30-odd test programs
out=runs/quickstart-$(date +%Y%m%d-%H%M%S)
./build/sgmcmc train configs/mnist_bnn_sghmc.yaml --out "$out" \
  --set data.dir=/usr/share/datasets/fashion-mnist --set train.epochs=20 --set train.burn_in=5 "$@"
