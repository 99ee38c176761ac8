#!/usr/bin/env bash
# Five short runs whose metrics.csv and summary.json a refactoring must leave unchanged (one thread, so
# the float sums are ordered alike): App. H.1 with Gibbs steps, Boston by SGHMC, movielens-small fold 0,
# the CNN, SGD. Compare two binaries' outputs with compare.py.
#   usage: bench/golden/run.sh BINARY OUT_DIR      (from the repository root)
set -euo pipefail
B=$1; O=$2; mkdir -p "$O"
T=(--set train.threads=1 --set data.dir=/usr/share/datasets/fashion-mnist --set output.save_samples=false)
"$B" train configs/mnist_bnn_sghmc.yaml --set train.epochs=4 --set train.burn_in=1 "${T[@]}" --out "$O/h1" --overwrite -q
"$B" train configs/boston_uci_sghmc.yaml "${T[@]}" --set train.steps=3000 --set train.burn_in_steps=1000 --out "$O/boston" --overwrite -q
"$B" train configs/movielens_small_sghmc.yaml --set data.fold=0 --set train.steps=300 --set train.burn_in_steps=100 "${T[@]}" --out "$O/ml" --overwrite -q
"$B" train configs/mnist_cnn_sgld.yaml --set data.train_limit=3000 --set data.val_size=500 --set data.test_limit=1000 --set train.epochs=2 --set train.burn_in=1 "${T[@]}" --out "$O/cnn" --overwrite -q
"$B" train configs/mnist_bnn_sgd.yaml --set train.epochs=3 --set train.burn_in=1 "${T[@]}" --out "$O/sgd" --overwrite -q
