#!/usr/bin/env bash
# sgmcmc's Python optimizers against posteriors (issue 45's targets), interleaved rounds, one fresh
# process per row and round, on the same torch: the peers' venv (bench/peers.sh makes .venv-peers with
# posteriors and torch 2.x) with sgmcmc installed into it by `pip install --no-build-isolation ./python`
# (built against that torch). Prints each row's median over rounds and the two ratios, and appends the
# raw JSON lines to bench/results/python/RESULTS.jsonl.
#   usage: bench/python/run.sh [--rounds R] [--threads T] [--install]
# With --install, (re)builds and installs sgmcmc into the venv first (~20 min on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=5; threads=2; install=0
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --install) install=1; shift ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
venv=${PEERS_VENV:-.venv-peers}
py=$venv/bin/python
[[ -x $py ]] || { echo "run.sh: no $py (make it with bash bench/peers.sh --rows '' first)" >&2; exit 2; }
if ((install)) || ! "$py" -c "import sgmcmc" 2>/dev/null; then
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$py" -m pip install --no-build-isolation -q ./python
fi
out=bench/results/python
mkdir -p "$out"
raw=$out/RESULTS.jsonl
export OMP_NUM_THREADS=$threads GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=8
for ((r = 0; r < rounds; r++)); do
  rows=("sgmcmc step" "posteriors step" "sgmcmc epoch" "posteriors epoch")
  for ((k = 0; k < ${#rows[@]}; k++)); do
    set -- ${rows[$(((k + r) % ${#rows[@]}))]}
    taskset -c 0-$((threads - 1)) "$py" bench/python/optim_vs_posteriors.py --impl "$1" --what "$2" --threads "$threads" \
      | tee -a "$raw"
  done
done
"$py" - "$raw" "$rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])][-4 * int(sys.argv[2]):]
med = {}
for what in ("step", "epoch"):
    for impl in ("sgmcmc", "posteriors"):
        t = [r["seconds"] for r in rows if r["impl"] == impl and r["what"] == what]
        med[impl, what] = statistics.median(t)
        print(f"{impl:10s} {what:5s} median {1e3 * med[impl, what]:9.2f} ms  (rounds {len(t)}, min {1e3 * min(t):.2f}, max {1e3 * max(t):.2f})")
    print(f"  {what}: sgmcmc {med['posteriors', what] / med['sgmcmc', what]:.2f}x posteriors")
only = {impl: statistics.median(r["step_only_seconds"] for r in rows if r["impl"] == impl and r["what"] == "step")
        for impl in ("sgmcmc", "posteriors")}
print(f"the update alone over 10M parameters: sgmcmc opt.step() {1e3 * only['sgmcmc']:.2f} ms, posteriors' update "
      f"less its gradient {1e3 * only['posteriors']:.2f} ms: sgmcmc {only['posteriors'] / only['sgmcmc']:.2f}x")
PY
