#!/usr/bin/env bash
# The TorchScript MLP against the built-in mlp on the App. H.1 run (Fashion-MNIST, 784-100-10 sigmoid,
# batch 500, SGHMC), interleaved rounds, training steps/s from each run's summary.json
# (train_steps_per_second: the training steps alone, evaluations excluded).
#   usage: bench/torchscript_vs_mlp.sh [ROUNDS=5] [EPOCHS=10] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} epochs=${2:-10} threads=${3:-2}
bin=${SGMCMC_BIN:-build/sgmcmc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 bench/torchscript_mlp.py "$work/mlp.pt"
# The same config with the model block of the TorchScript file (no mlp-only keys).
sed -e '/^  hidden:/d' -e '/^  activation:/d' -e "s|^  name: mlp|  name: torchscript\n  path: $work/mlp.pt|" \
  configs/mnist_bnn_sghmc.yaml > "$work/ts.yaml"
common=(--set data.dir=/usr/share/datasets/fashion-mnist --set train.epochs="$epochs" --set train.burn_in=1
        --set train.threads="$threads" --set output.checkpoint=false --quiet --overwrite)
rate() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['train_steps_per_second'])" "$1/summary.json"; }
builtin=() script=()
for ((r = 1; r <= rounds; ++r)); do
  "$bin" train configs/mnist_bnn_sghmc.yaml "${common[@]}" --out "$work/a"
  builtin+=("$(rate "$work/a")")
  "$bin" train "$work/ts.yaml" "${common[@]}" --out "$work/b"
  script+=("$(rate "$work/b")")
done
/usr/bin/python3 - "${builtin[*]}" "${script[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ratio = [y / x for x, y in zip(a, b)]
fmt = lambda v: f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
print("| model | train steps/s, min / median / max |")
print("| --- | --- |")
print(f"| built-in mlp | {fmt(a)} |")
print(f"| torchscript (same network) | {fmt(b)} |")
print(f"| ratio torchscript / mlp (per round) | {min(ratio):.3f} / {statistics.median(ratio):.3f} / {max(ratio):.3f} |")
PY
