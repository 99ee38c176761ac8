#!/usr/bin/env bash
# sgmcmc against the tools a researcher would pick instead (issue 44): BlackJAX (JAX, jit + lax.scan),
# posteriors (PyTorch 2.x, torch.func) and a PyTorch 2.x loop (eager and torch.compile), all on the
# App. H.1 workload (784-100-10 sigmoid MLP, batch 500, Fashion-MNIST's 50,000 training images in
# memory, float32, SGHMC at eta = 2e-6, a = 0.01 and SGLD at lr = 1e-5, prior precision fixed at 1).
# The peers' scripts are bench/peers/*.py; each converts its library's parameters to sgmcmc's dynamics
# (the mapping is in each script's docstring and in the table's notes).
#
# Installs the pinned peers into an ignored virtual environment (.venv-peers/, PyPI, ~6 GB: PyPI's torch
# wheel brings its CUDA libraries), then runs every row interleaved, --rounds times (round r uses seed
# r, and the row order rotates each round), each row a fresh process pinned to the same --threads CPUs
# (taskset) with the same environment (OMP_NUM_THREADS, and GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=8,
# which the sgmcmc binary sets for itself), for --epochs epochs with one averaged sample an epoch after
# --burn-in. Every row reports steps/s over its training epochs alone (no start-up, compilation or
# evaluation; sgmcmc: summary.json's steps / time.steps) and the test error and NLL of its averaged
# predictive; a row's speed counts only when its accuracy agrees with sgmcmc's (bench/peers/table.py).
# Writes the raw JSON lines to bench/results/peers-DEVICE/ and the table between
# <!-- PEERS-TABLE:DEVICE --> and <!-- /PEERS-TABLE:DEVICE --> of docs/performance.md (the marker pair is
# appended at the end of the file if absent), ending with "fastest peer: NAME, sgmcmc N.NN× it".
#
#   usage: bench/peers.sh [--device cpu|cuda] [--threads N] [--rounds R] [--epochs E] [--burn-in B]
#                         [--rows "LABEL ..."] [--no-install] [--no-doc] [--no-floors] [--wheels DIR]
#          bench/peers.sh --table RAW.jsonl [--device D] [--no-doc]   (the table again from a run's raw lines)
# Rows (labels, separated by spaces or commas): sgmcmc-sghmc sgmcmc-sghmc-gibbs blackjax-sghmc blackjax-sghmc-ordered posteriors-sghmc
#   posteriors-baoa torch-compile-sghmc torch-compile-step-sghmc torch-eager-sghmc sgmcmc-sgld blackjax-sgld
#   posteriors-sgld torch-compile-sgld torch-compile-step-sgld torch-eager-sgld; on cuda also
#   torch-compile-default-sghmc torch-compile-step-default-sghmc (mode="default"); and, where the ratings file
#   is there (RATINGS, default ../shared/data/movielens-small/ratings.dat), BPMF on movielens-small fold 0
#   (d = 20, batch 4,000, SGHMC eta = 6.4e-5, a = 0.05, BPMF_STEPS=4000 steps, BPMF_BURNIN=2000, one sample
#   every 20 steps; bench/peers/bpmf.py): bpmf-sgmcmc bpmf-jax bpmf-posteriors-baoa bpmf-torch-eager
# Environment: PEERS_PYTHON (the interpreter for the venv; default: the first python >= 3.12 found, as
# jax 0.12 needs it), PEERS_VENV (default .venv-peers), FMNIST (the Fashion-MNIST IDX directory),
# SGMCMC_BUILD_DIR (default build; built with scripts/build.sh if the binary is missing, unless
# SGMCMC_NO_BUILD=1), PEERS_OUT (the JSON lines' file), PEERS_NOTE (a sentence for the table's header,
# e.g. what else ran on the machine).
# On the GPU machine (no PyPI there): `--device cuda --no-install` uses PEERS_PYTHON (default python3,
# the machine's PyTorch) or an existing PEERS_VENV; `--wheels DIR` installs every wheel carried in DIR
# (pip download here: posteriors, BlackJAX and each of their dependencies the machine lacks; --no-deps) into
# PEERS_VENV/site, first on PYTHONPATH; rows whose library does not import are skipped.
# torch.compile runs mode="reduce-overhead" there. Not part of CI (CI never needs PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=cpu; THREADS=2; ROUNDS=3; EPOCHS=20; BURNIN=10; ROWS=""; INSTALL=1; DOC=1; WHEELS=""; FLOORS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --burn-in) BURNIN=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    --no-doc) DOC=0; shift ;;
    --no-floors) FLOORS=0; shift ;;
    --wheels) WHEELS=$2; shift 2 ;;
    --table) TABLE_ONLY=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "peers.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$DEVICE" in cpu|cuda) ;; *) echo "peers.sh: --device cpu|cuda" >&2; exit 2 ;; esac
if [ -n "${TABLE_ONLY:-}" ]; then  # the table again from a run's JSON lines (e.g. after editing table.py)
  DOCARG=docs/performance.md; [ "$DOC" = 1 ] || DOCARG=-
  exec "${PEERS_PYTHON:-python3}" bench/peers/table.py "$TABLE_ONLY" --device "$DEVICE" --doc "$DOCARG"
fi
ALL_ROWS="sgmcmc-sghmc sgmcmc-sghmc-gibbs blackjax-sghmc blackjax-sghmc-ordered posteriors-sghmc posteriors-baoa
  torch-compile-sghmc torch-compile-step-sghmc torch-eager-sghmc sgmcmc-sgld blackjax-sgld posteriors-sgld
  torch-compile-sgld torch-compile-step-sgld torch-eager-sgld"
RATINGS=${RATINGS:-../shared/data/movielens-small/ratings.dat}
BPMF_STEPS=${BPMF_STEPS:-4000}; BPMF_BURNIN=${BPMF_BURNIN:-2000}
# CUDA: torch.compile also without CUDA graphs (mode="default"), the row that runs where torch's
# reduce-overhead fails (torch 2.11 on an H100: the two-function loop segfaulted)
[ "$DEVICE" = cuda ] && ALL_ROWS="$ALL_ROWS torch-compile-default-sghmc torch-compile-step-default-sghmc"
[ -f "$RATINGS" ] && ALL_ROWS="$ALL_ROWS bpmf-sgmcmc bpmf-jax bpmf-posteriors-baoa bpmf-torch-eager"
ROWS=${ROWS//,/ }; ROWS=${ROWS:-$ALL_ROWS}   # commas too: --rows a,b
PINS="torch==2.15.0 jax==0.12.0.1 jaxlib==0.12.0.1 blackjax==1.7.1 posteriors==0.1.3"
VENV=${PEERS_VENV:-.venv-peers}
F=${FMNIST:-/usr/share/datasets/fashion-mnist}
BUILD=${SGMCMC_BUILD_DIR:-build}
[ -d "$F" ] || { echo "peers.sh: no Fashion-MNIST at $F (set FMNIST)" >&2; exit 1; }

pick_python() {
  local c v
  for c in ${PEERS_PYTHON:-} python3.13 python3.12 \
           "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 python3; do
    command -v "$c" >/dev/null 2>&1 || [ -x "$c" ] || continue
    v=$("$c" -c 'import sys; print(int(sys.version_info >= (3, 12)))' 2>/dev/null) || continue
    if [ "$v" = 1 ] || [ -n "${PEERS_PYTHON:-}" ]; then echo "$c"; return 0; fi
  done
  return 1
}

if [ "$INSTALL" = 1 ] && [ "$DEVICE" = cpu ]; then
  if [ "$(cat "$VENV/.peers-pins" 2>/dev/null)" != "$PINS" ]; then
    PYBASE=$(pick_python) || { echo "peers.sh: needs a python >= 3.12 for jax 0.12 (set PEERS_PYTHON)" >&2; exit 1; }
    echo "peers.sh: installing $PINS into $VENV ($PYBASE)" >&2
    [ -x "$VENV/bin/python" ] || "$PYBASE" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip >&2
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install -q $PINS >&2
    echo "$PINS" > "$VENV/.peers-pins"
  fi
  PY="$VENV/bin/python"
elif [ -x "$VENV/bin/python" ]; then
  PY="$VENV/bin/python"
else
  PY=${PEERS_PYTHON:-python3}
  if [ -n "$WHEELS" ]; then
    # Every wheel of DIR into $VENV/site, put first on PYTHONPATH. Not a venv: the GPU image's python3 is
    # itself a venv (/opt/torch/.venv), and a venv made from it with --system-site-packages sees the base
    # interpreter's packages, not its torch and jax. --no-deps: DIR carries each dependency the machine lacks.
    SITE="$VENV/site"; [[ $SITE == /* ]] || SITE="$PWD/$SITE"
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WHEELS"/*.whl >&2; then
      export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    fi
  fi
fi
if [[ " $(echo $ROWS) " == *" sgmcmc-"* ]] && [ ! -x "$BUILD/sgmcmc" ]; then
  if [ -n "${SGMCMC_NO_BUILD:-}" ]; then echo "peers.sh: no $BUILD/sgmcmc" >&2; exit 1; fi
  SGMCMC_TARGET=sgmcmc bash scripts/build.sh >&2
fi

# Which peers import here (a GPU machine may lack some).
have() { "$PY" -c "import $1" >/dev/null 2>&1; }
declare -A OK=([sgmcmc]=1)
for m in torch jax blackjax posteriors; do have "$m" && OK[$m]=1 || echo "peers.sh: $m does not import: its rows are skipped" >&2; done
[ -n "${OK[jax]:-}" ] || unset 'OK[blackjax]'
vers() { "$PY" - "$@" <<'EOF'
import importlib.metadata as m, sys
out = []
for p in sys.argv[1:]:
    try:
        out.append(f"{p} {m.version(p)}")
    except m.PackageNotFoundError:
        pass
print(", ".join(out))
EOF
}

export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=8
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONWARNINGS=ignore
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge "$THREADS" ]; then PIN=(taskset -c "0-$((THREADS - 1))"); fi
mkdir -p "bench/results/peers-$DEVICE"
STAMP=$(date +%Y-%m-%dT%H%M)
OUT=${PEERS_OUT:-bench/results/peers-$DEVICE/peers-$STAMP.jsonl}; : > "$OUT"
LOG=${OUT%.jsonl}.log; : > "$LOG"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
COMMON=(--data "$F" --epochs "$EPOCHS" --burn-in "$BURNIN" --threads "$THREADS" --device "$DEVICE")

row_cmd() {  # LABEL -> the command (without the common arguments), or nothing when its peer is missing
  local l=$1 samp=sghmc
  [[ $l == *sgld ]] && samp=sgld
  case "$l" in
    sgmcmc-sghmc-gibbs) echo "$PY bench/peers/sgmcmc_row.py --bin $BUILD/sgmcmc --out $TMP/run --sampler sghmc --gibbs" ;;
    sgmcmc-*) echo "$PY bench/peers/sgmcmc_row.py --bin $BUILD/sgmcmc --out $TMP/run --sampler $samp" ;;
    blackjax-sghmc) [ -n "${OK[blackjax]:-}" ] && echo "$PY bench/peers/blackjax_h1.py --sampler sghmc --api integrator" ;;
    blackjax-sghmc-ordered) [ -n "${OK[blackjax]:-}" ] && echo "$PY bench/peers/blackjax_h1.py --sampler sghmc --api ordered" ;;
    blackjax-sgld) [ -n "${OK[blackjax]:-}" ] && echo "$PY bench/peers/blackjax_h1.py --sampler sgld" ;;
    posteriors-baoa) [ -n "${OK[posteriors]:-}" ] && echo "$PY bench/peers/posteriors_h1.py --sampler baoa" ;;
    posteriors-*) [ -n "${OK[posteriors]:-}" ] && echo "$PY bench/peers/posteriors_h1.py --sampler $samp" ;;
    torch-compile-step-default-*) [ -n "${OK[torch]:-}" ] && echo "$PY bench/peers/torch_h1.py --mode compile-step --compile-mode default --sampler $samp" ;;
    torch-compile-step-*) [ -n "${OK[torch]:-}" ] && echo "$PY bench/peers/torch_h1.py --mode compile-step --sampler $samp" ;;
    torch-compile-default-*) [ -n "${OK[torch]:-}" ] && echo "$PY bench/peers/torch_h1.py --mode compile --compile-mode default --sampler $samp" ;;
    torch-compile-*) [ -n "${OK[torch]:-}" ] && echo "$PY bench/peers/torch_h1.py --mode compile --sampler $samp" ;;
    torch-eager-*) [ -n "${OK[torch]:-}" ] && echo "$PY bench/peers/torch_h1.py --mode eager --sampler $samp" ;;
    bpmf-sgmcmc) echo "$PY bench/peers/sgmcmc_row.py --bin $BUILD/sgmcmc --out $TMP/run --bpmf --ratings $RATINGS --steps $BPMF_STEPS" ;;
    bpmf-jax) [ -n "${OK[blackjax]:-}" ] && echo "$PY bench/peers/bpmf.py --peer jax --order sgmcmc --ratings $RATINGS --steps $BPMF_STEPS" ;;
    bpmf-posteriors-baoa) [ -n "${OK[posteriors]:-}" ] && echo "$PY bench/peers/bpmf.py --peer posteriors --order baoa --ratings $RATINGS --steps $BPMF_STEPS" ;;
    bpmf-torch-eager) [ -n "${OK[torch]:-}" ] && echo "$PY bench/peers/bpmf.py --peer torch --ratings $RATINGS --steps $BPMF_STEPS" ;;
    *) echo "peers.sh: unknown row $l" >&2; return 1 ;;
  esac
  return 0
}

read -r -a RA <<< "$(echo $ROWS)"
n=${#RA[@]}
t_start=$(date +%s)
for r in $(seq "$ROUNDS"); do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "round $r/$ROUNDS (load average $load)" | tee -a "$LOG" >&2
  for i in $(seq 0 $((n - 1))); do
    l=${RA[$(( (i + r - 1) % n ))]}
    cmd=$(row_cmd "$l") || exit 2
    [ -n "$cmd" ] || continue
    echo "  $l" >&2
    args=("${COMMON[@]}")
    [[ $l == bpmf-* ]] && args=(--burn-in "$BPMF_BURNIN" --threads "$THREADS" --device "$DEVICE")
    # A row whose result line came out and whose process then failed (a crash in an exit handler, say)
    # keeps its result, with the exit status in the record and the log; without the line it failed.
    echo "== $l, round $r" >> "$LOG"
    rc=0
    # shellcheck disable=SC2086
    "${PIN[@]}" $cmd "${args[@]}" --seed "$r" > "$TMP/row.out" 2>>"$LOG" || rc=$?
    line=$(tail -1 "$TMP/row.out")
    [ "$rc" = 0 ] || { echo "peers.sh: row $l exited with status $rc; its last output lines:" >> "$LOG"; tail -5 "$TMP/row.out" >> "$LOG"; }
    if [[ $line == "{"* ]]; then
      extra=""; [ "$rc" = 0 ] || extra="\"exit_status\": $rc, "
      echo "$line" | sed "s/^{/{\"label\": \"$l\", \"round\": $r, \"load\": \"$load\", $extra/" >> "$OUT"
    else
      echo "peers.sh: row $l failed with status $rc (see $LOG)" >&2
    fi
  done
  # The step's matrix products alone, in each library (bench/peers/floor_products.py; sgmcmc's own
  # with bench_step where the build has it, -DSGMCMC_BENCH=ON), for "step ÷ products" (bench/floors.sh)
  if [ "$DEVICE" = cpu ] && [ "$FLOORS" = 1 ]; then
    for lib in torch jax; do
      [ -n "${OK[$lib]:-}" ] || continue
      "${PIN[@]}" "$PY" bench/peers/floor_products.py --lib "$lib" --threads "$THREADS" --rounds 1 --steps 1000 \
        2>>"$LOG" | tail -1 | sed "s/^{/{\"label\": \"floor-$lib\", \"round\": $r, /" >> "$OUT" || true
    done
    if [ -x "$BUILD/bench_step" ]; then
      "${PIN[@]}" "$BUILD/bench_step" configs/mnist_bnn_sghmc.yaml --set "data.dir=$F" --set prior.hyperprior=none \
        --threads "$THREADS" --rounds 1 --steps 500 --label floor-sgmcmc --json "$TMP/bs.jsonl" >>"$LOG" 2>&1 &&
        tail -1 "$TMP/bs.jsonl" | sed "s/^{/{\"round\": $r, /" >> "$OUT" || true
    fi
  fi
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
minutes=$(( ($(date +%s) - t_start + 59) / 60 ))

NAME="$(lscpu | sed -n 's/^Model name: *//p' | head -1)$(bash scripts/cpu_generation.sh 2>/dev/null || true)"
[ "$DEVICE" = cuda ] && NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) (host: $NAME)"
# The run's facts, one JSON line (table.py writes the header from it): `--table RAW` redoes the table alone.
"$PY" - "$OUT" "$NAME" "$THREADS" "$DEVICE" "$(git rev-parse --short HEAD)" "$ROUNDS" "$EPOCHS" "$BURNIN" "$minutes" \
  "$load_end" "$(vers torch jax jaxlib blackjax posteriors tensordict)" "${PEERS_NOTE:-}" <<'EOF'
import datetime, json, sys
out, name, threads, device, commit, rounds, epochs, burn_in, minutes, load_end, versions, note = sys.argv[1:13]
with open(out, "a") as f:
    f.write(json.dumps({"meta": True, "date": str(datetime.date.today()), "name": name, "threads": int(threads),
                        "device": device, "commit": commit, "rounds": int(rounds), "epochs": int(epochs),
                        "burn_in": int(burn_in), "minutes": int(minutes), "load_end": load_end,
                        "versions": versions, "raw": out, "note": note}) + "\n")
EOF
DOCARG=docs/performance.md
[ "$DOC" = 1 ] || DOCARG=-
"$PY" bench/peers/table.py "$OUT" --device "$DEVICE" --doc "$DOCARG"
