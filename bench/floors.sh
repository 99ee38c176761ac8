#!/usr/bin/env bash
# The training step against its floor and against the PyTorch-Python loop, interleaved:
# each round runs, per model, bench_step (the step, then the floor, in one process) and then
# bench/ref_step.py (the same step written in Python), so slow phases of a shared machine hit every
# column alike. Writes the table (min / median / max over the rounds) between the FLOOR-TABLE markers
# of docs/performance.md and the raw JSON lines to bench/results/floors-<date>T<time>.jsonl.
#   usage: bench/floors.sh [--threads N] [--rounds R] [--steps S] [--profile]
# Environment, for a host other than this one (a CUDA build's bench_step on the GPU machine's CPU): FMNIST (the
# Fashion-MNIST directory), SGMCMC_BUILD_DIR and SGMCMC_NO_BUILD=1 (bench_step as built there),
# FLOORS_ROWS (a subset of the rows), FLOORS_ATEN=0 (no ATen's-BLAS column: a build without oneDNN
# would time the same products twice), FLOORS_DOC=0 (print the table, leave docs/performance.md),
# FLOORS_OUT (the JSON lines' file).
# Rows: the App. H.1 MLP (784-100-10 sigmoid, batch 500), FNN-800 (784-800-800-10 ReLU, batch 100),
# the CNN (src/models/cnn.h, batch 100), all with SGHMC on Fashion-MNIST; BPMF by SGHMC at ml-1M's shape
# (6,040 users, 3,706 items, 1,000,209 synthetic ratings, d = 20, batch 4,000; floor: its gathers and
# scatters). The MLP and CNN rows also run step and floor with every product on ATen's BLAS
# (bench_step --matmul aten; the last column), next to the build's default (oneDNN where built).
# Same environment for every process: GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=8 (what
# the sgmcmc binary sets for itself).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=$(nproc); ROUNDS=5; STEPS=200; PROFILE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --profile) PROFILE=1; shift ;;
    *) echo "floors.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PY=${PY:-/usr/bin/python3}
BUILD=${SGMCMC_BUILD_DIR:-build}
export GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=8
if [ -z "${SGMCMC_NO_BUILD:-}" ]; then
  bash scripts/build.sh -DSGMCMC_BENCH=ON >/dev/null
  ninja -C "$BUILD" bench_step >/dev/null 2>&1 || cmake --build "$BUILD" --target bench_step >/dev/null
fi
F=${FMNIST:-/usr/share/datasets/fashion-mnist}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
# ml-1M's shape, synthetic ratings (the real file cannot be downloaded here).
[[ " ${FLOORS_ROWS:-bpmf_ml1m} " == *" bpmf_ml1m "* ]] && $PY - "$TMP/ml1m.dat" <<'EOF'
import sys, numpy as np
r = np.random.RandomState(0); n = 1000209
u, i, s = r.randint(1, 6041, n), r.randint(1, 3707, n), r.randint(1, 6, n)
np.savetxt(sys.argv[1], np.stack([u, i, s, np.zeros(n, int)], 1), fmt="%d", delimiter="::")
EOF
mkdir -p bench/results
OUT=${FLOORS_OUT:-bench/results/floors-$(date +%Y-%m-%dT%H%M).jsonl}; : > "$OUT"
SG="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01 --set data.dir=$F"
declare -A CFG PYARGS
CFG[mlp_h1]="configs/mnist_bnn_sghmc.yaml --set data.dir=$F"
PYARGS[mlp_h1]="--model mlp --hidden 100 --activation sigmoid --batch 500"
CFG[fnn800]="configs/mnist_fnn800_sgld.yaml $SG"
PYARGS[fnn800]="--model mlp --hidden 800,800 --activation relu --batch 100"
CFG[cnn]="configs/mnist_cnn_sgld.yaml $SG"
PYARGS[cnn]="--model cnn --batch 100"
CFG[bpmf_ml1m]="configs/movielens_bpmf_sghmc.yaml --set data.path=$TMP/ml1m.dat --set data.fold=0"
ROWS=${FLOORS_ROWS:-mlp_h1 fnn800 cnn bpmf_ml1m}
for r in $(seq "$ROUNDS"); do
  for row in $ROWS; do
    echo "round $r/$ROUNDS: $row" >&2
    # shellcheck disable=SC2086
    "./$BUILD/bench_step" ${CFG[$row]} --threads "$THREADS" --rounds 1 --steps "$STEPS" --label "$row" \
      --json "$OUT" >/dev/null
    if [ -n "${PYARGS[$row]:-}" ]; then
      if [ "${FLOORS_ATEN:-1}" != 0 ]; then
        # the same step and floor with every product on ATen's BLAS (OpenBLAS), for comparison
        # shellcheck disable=SC2086
        "./$BUILD/bench_step" ${CFG[$row]} --threads "$THREADS" --rounds 1 --steps "$STEPS" --label "${row}_aten" \
          --matmul aten --json "$OUT" >/dev/null
      fi
      # shellcheck disable=SC2086
      $PY bench/ref_step.py ${PYARGS[$row]} --data $F --threads "$THREADS" --steps "$STEPS" --rounds 1 |
        sed "s/^{/{\"label\": \"$row\", /" >> "$OUT"
    fi
  done
done
if [ "$PROFILE" = 1 ]; then
  # shellcheck disable=SC2086
  "./$BUILD/bench_step" ${CFG[mlp_h1]} --threads "$THREADS" --rounds 1 --steps "$STEPS" --label mlp_h1_profile \
    --profile --json "$OUT" > "$TMP/profile.txt"
  cat "$TMP/profile.txt" >&2
fi
NAME="$(lscpu | sed -n 's/^Model name: *//p' | head -1)$(bash scripts/cpu_generation.sh), $THREADS threads"
$PY - "$OUT" "$NAME" "$(git rev-parse --short HEAD 2>/dev/null || echo "?")" "$ROUNDS" "$STEPS" "${FLOORS_DOC:-1}" <<'EOF'
import json, re, statistics, sys, datetime
out, name, commit, rounds, steps, write_doc = sys.argv[1:7]
rows = {}
for line in open(out):
    d = json.loads(line)
    if d.get("label", "").endswith("_profile"): continue
    if d.get("label", "").endswith("_aten"):
        r = rows.setdefault(d["label"][:-5], {"step": [], "floor": [], "python": [], "gbs": []})
        r.setdefault("aten_step", []).extend(d["step_steps_per_s"]); r.setdefault("aten_floor", []).extend(d["floor_steps_per_s"])
        continue
    r = rows.setdefault(d["label"], {"step": [], "floor": [], "python": [], "gbs": []})
    if d.get("bench") == "step": r["matmul"] = d.get("matmul", "aten")
    if d.get("bench") == "step":
        r["step"] += d["step_steps_per_s"]; r["floor"] += d["floor_steps_per_s"]
        if "floor_gb_per_s" in d: r["gbs"].append(d["floor_gb_per_s"])
    else:
        r["python"] += d["steps_per_second"]
names = {"mlp_h1": "App. H.1 MLP 784-100-10 sigmoid, batch 500", "fnn800": "FNN-800 784-800-800-10 ReLU, batch 100",
         "cnn": "CNN 20c5-50c5-500-10, batch 100", "bpmf_ml1m": "BPMF, ml-1M shape, d 20, batch 4,000"}
f = lambda v: f"{min(v):.0f} / {statistics.median(v):.0f} / {max(v):.0f}" if v else "–"
lines = [f"Measured {datetime.date.today()} on **{name}**, commit {commit}, {rounds} interleaved rounds of {steps} "
         "steps; steps/s as min / median / max; SGHMC everywhere; `bench/floors.sh`.", "",
         "| model | products | sgmcmc step | floor alone | step ÷ floor (medians) | step ÷ floor per round (min / median / max) | PyTorch-Python step | sgmcmc ÷ Python | step / floor, all on ATen's BLAS |",
         "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
for k in ["mlp_h1", "fnn800", "cnn", "bpmf_ml1m"]:
    if k not in rows: continue
    r = rows[k]; ms, mf = statistics.median(r["step"]), statistics.median(r["floor"])
    py = f"{statistics.median(r['step']) / statistics.median(r['python']):.2f}×" if r["python"] else "–"
    fl = f(r["floor"]) + (f" ({statistics.median(r['gbs']):.1f} GB/s)" if r["gbs"] else "")
    at = (f"{statistics.median(r['aten_step']):.0f} / {statistics.median(r['aten_floor']):.0f} "
          f"({100 * statistics.median(r['aten_step']) / statistics.median(r['aten_floor']):.0f} %)") if r.get("aten_step") else "–"
    mm = {"onednn": "oneDNN", "aten": "ATen's BLAS"}.get(r.get("matmul", ""), "–") if k != "bpmf_ml1m" else "–"
    # step and floor of one round ran seconds apart in one process: their ratio is less exposed to
    # the shared machine's slow and fast phases than the ratio of the two medians
    pr = [100 * a / b for a, b in zip(r["step"], r["floor"])]
    prs = f"{min(pr):.0f} / {statistics.median(pr):.0f} / {max(pr):.0f} %"
    lines.append(f"| {names[k]} | {mm} | {f(r['step'])} | {fl} | {100 * ms / mf:.0f} % | {prs} | {f(r['python'])} | {py} | {at} |")
table = "\n".join(lines)
print(table)
doc = "docs/performance.md"; s = open(doc).read() if write_doc != "0" else ""
a, b = "<!-- FLOOR-TABLE:cpu -->", "<!-- /FLOOR-TABLE:cpu -->"
if a in s:
    s = re.sub(re.escape(a) + ".*?" + re.escape(b), lambda m: a + "\n" + table + "\n" + b, s, flags=re.S)
    open(doc, "w").write(s)
EOF
