#!/usr/bin/env bash
# A session with a GPU machine (the `device` tool), in as few calls as its 15 minutes allow.
# Here first:  ../shared/tools/device-deps.sh nlohmann-json3-dev libdeflate-dev libdeflate0
#              mkdir -p .devdata && cp -r /usr/share/datasets/fashion-mnist .devdata/   (the GPU machine
#              has no Fashion-MNIST; .devdata is ignored: add /.devdata/ to .git/info/exclude)
#              bash scripts/gpu_prebuild.sh   (the launch stage's programs, compiled here: .gpubin)
# Then, as the device command (carry .devdeps, .devdata, .gpubin):  bash scripts/gpu_session.sh [STAGE ...]
# The open decisions (issue 41's own launches, shared chains) take two calls:
#   LAUNCH_DEADLINE=540 bash scripts/gpu_session.sh launch        (timeout_s 590)
#   LAUNCH_DEADLINE=200 bash scripts/gpu_session.sh launch_more   (the warm machine, timeout_s 240)
# then here `python3 scripts/launch_verdicts.py gpu-logs`. The other stages are the runs behind
# docs/performance.md's earlier figures, kept so that each figure's command still runs.
# Stages, in the order given (default: build pack tests ctest job):
#   build  configure and build build-cuda/ against the machine's PyTorch LibTorch (2.x, CUDA),
#          -DSGMCMC_CUDA=ON -DSGMCMC_BENCH=ON
#   quick  instead of build, with little device time: builds test_fused and bench_update, runs the CUDA
#          kernel checks and the update's bandwidth, then test_models and test_bpmf's CUDA kernel tests
#   unpack instead of build: the programs carried in .gpubin into build-cuda/: bin.tar.xz from
#          scripts/gpu_prebuild.sh (compiled without a GPU; taken only if they match this machine's torch and
#          this tree, see take_prebuilt), else bin.tgz.part-* (a `pack` brought back from an earlier call)
#   tests  the CUDA tests (fused kernels vs the ATen reference, graph replay vs eager, CPU vs CUDA),
#          c10d's one-rank NCCL group
#   ctest  every test of the CUDA build (the CPU ones too, against LibTorch 2.x)
#   job    the main job's config on device cuda, 5 epochs: the same kind of result as on the CPU
#   pack   the binaries, stripped, into $OUT/bin.tgz.part-* (15 MB parts); carry them back as .gpubin/
#          for `unpack` (only the binaries a call needs: the tree, .devdata and .gpubin share 64 MB)
#   bench  bench/run_all.sh --device cuda (writes docs/performance.md's CUDA table; copied to $OUT)
#   h1     App. H.1 in full: 800 epochs (80,000 SGHMC steps, 800 Gibbs steps, 800 evaluations),
#          eager and train.graph, timed wall clock
#   bpmf   BPMF at ml-1M's shape (a synthetic file of 1,000,209 ratings), SGHMC, steps/s
#   floors bench_step on the GPU for H.1, FNN-800, the CNN and BPMF: step against floor, eager and graph
#   profile  Nsight Compute: the kernels of eager H.1 steps and whole graph replays (scripts/ncu_summary.py)
#   gemm   instead of build: builds bench_step and sgmcmc only, A/B of the CUDA float32 GEMM route, then h1
#   act    after build or unpack: the MLP's elementwise CUDA kernels (kernels/activation_cuda.h, off by
#          default): their test, bench_step A/B with kernels.cuda_act=fused, then h1 with them
#   mlp    instead of build: the fused MLP pass (kernels/mlp_fused.h): builds its test, bench_step and
#          sgmcmc only, runs test_mlp_fused (CUDA against the CPU reference and ATen), bench_step A/B of
#          kernels.cuda_mlp=fused, fused with kernels.cuda_mlp_prior=fused (λθ in its epilogue), that
#          with kernels.cuda_gather=fused (images and labels in one kernel; both off by default until this
#          passes) and aten, for H.1 and FNN-800 (graph and eager), then H.1 in full, graph-replayed; also
#          test_gather_rows; then the epoch stage
#   chains 100 chains of H.1 against one, ATen's products and the fused pass (kernels.cuda_mlp=fused takes
#          chains, kernels/mlp_fused.h): the chains' CUDA test, then steps/s of each (20 epochs, graph)
#   epoch  bench_epoch on the GPU (also the end of mlp): ATen ops, host reads and seconds per phase of
#          App. H.1 (100 epochs, graph-replayed), i.e. what one op of the per-epoch work costs there
#   tiles  after mlp (same machine) or with TILES_BUILD=1: the fused pass's GEMM tile edge A/B
#          (kernels.cuda_mlp_tile=32|64 against ATen, graph-replayed) for H.1 and FNN-800, then H.1 in full
#          with the auto choice
#   lean   instead of build, for a 15-minute device budget: one call builds what it needs and runs, in
#          order, the fused pass's CUDA tests, the H.1 step A/B, H.1 in full, chains, epoch, peers, 1,000
#          chains (stage_lean below; LEAN_DEADLINE)
#   followup  instead of build, one call of a 15-minute budget (FOLLOWUP_DEADLINE=520 there): the fused
#          pass's test, the A/B of its split-K target and head rows, H.1 in full (defaults, prior epilogue
#          and gather kernel on ATen, the fastest split-K target), bench_epoch, the torch.compile peers,
#          Nsight Compute (clock control none) over sgmcmc's replayed steps, 1 and 100 chains, BlackJAX's
#          optimized HLO (scripts/hlo_summary.py) and Nsight Compute over its steps (stage_followup below)
#   pipe   instead of build, one call (PIPE_DEADLINE=330, or 520 as a session's only call): the fused pass's GEMM
#          choices (kernels.cuda_mlp_gemm: tiled | pipelined | cublas): test, step A/B, H.1 in full, ncu, 100 chains
#   auto   instead of build, one call (AUTO_DEADLINE=420): the measured auto GEMM choices' test, step A/B
#          (H.1, FNN-400, FNN-800 against tiled and ATen), H.1 in full, peers (sgmcmc, BlackJAX; carry .whl)
#   cache  instead of build, one call (CACHE_DEADLINE=500, timeout 540): the cluster products
#          (kernels.cuda_mlp_gemm: cluster: their test, in the pass, H.1 in full and the steps), cublaslt's choices kept
#          between processes (kernels.cuda_gemm_cache) checked for the same bits run to run, the CUDA
#          graph tests, H.1 in full with train.graph_steps: epoch against the defaults (the same bits) and
#          with train.eval_lag: 20 (the evaluation's read deferred) and with kernels.cuda_mlp_update: fused
#          (the sampler's update in the pass's last kernel: its tests, the same results, the time), the steps with
#          auto against cublaslt, against auto in blocks of 100 steps a launch and with the update fused, FNN-400 on the cuBLAS route, 100 chains with their own minibatches against
#          a shared one (train.chain_minibatch), a GPU timeline of H.1 (bench/timeline.py), Nsight Compute
#          over 100 chains' step
#   flip   instead of build, one short call (FLIP_DEADLINE=200, timeout ≥ 260): the defaults cache measured
#          (train.graph_steps: auto, train.eval_lag: auto, cublaslt for one chain): the update-in-pass test,
#          H.1 in full with the defaults (a fresh cuBLASLt cache: the first run measures) against the ones
#          before, set explicitly, interleaved
#   next   instead of build, one call (NEXT_DEADLINE=550, timeout 595; carry .devdeps .devdata .whl): the
#          tests of the last launch as column blocks (kernels.cuda_mlp_tail: columns) and the pass with it,
#          H.1 in full with the defaults and with the column blocks twice, the H.1 / FNN-800 steps both ways
#          (one launch a step and blocks of 100), the peers' H.1 rows on the same GPU with the defaults
#          (PEERS-TABLE:cuda), Nsight Compute's sections over the last launch both ways and the cluster
#          products, 100 chains shared with TF32
#   trace  instead of build, one call (~250 s): bench_step --kernel-trace (CUPTI) over H.1 (defaults, the GEMM last
#          launch, programmatic launches, blocks of 100 steps) and FNN-800: each kernel's time and the gaps
#          inside the replayed graph
#   launch instead of build, one call (LAUNCH_DEADLINE=540, timeout 590; carry .devdeps .devdata, and .gpubin
#          from scripts/gpu_prebuild.sh to skip the build's ~250 s), in order of
#          what the defaults' decisions need: the tests of the last hidden layer and the head in one launch
#          (kernels.cuda_mlp_forward: fused), the hidden layers' ∇W as tiled launches (kernels.cuda_mlp_wgrad:
#          fused), the column blocks and the chains' shared minibatch in the pass; H.1 in full with the defaults
#          and with both own launches; the H.1 / FNN-800 steps of gemm, gemm_own and columns; 100 and 1,000
#          chains sharing a minibatch on ATen and through the pass (100 with TF32 too); the steps' second round;
#          then as far as the deadline allows: H.1 in full's second round and the column blocks / own + PDL, the
#          other step variants (PDL, the update fused, each own launch alone, k-parts, the update in the column
#          blocks, the block's rows gathered 5 steps at a time, FNN-800 with kernels.cuda_act: fused), kernel
#          traces (H.1, FNN-800, 100 chains), bench_epoch --kernel-trace and bench_launch.
#   launch_more  a second call on the warm machine (LAUNCH_DEADLINE=200, timeout 240): launch's later parts
#          that the first call's deadline cut (a part it finished is not run again).
#          Flip kernels.cuda_mlp_forward's, cuda_mlp_wgrad's (and cuda_mlp_tail's, cuda_mlp's for shared
#          chains) auto on what they measure: here, `python3 scripts/launch_verdicts.py gpu-logs` (logs.tgz
#          unpacked) sets each against the baseline over both rounds, with its GPU tests' results.
#   timeline  after build: the Python module and bench/timeline.py over H.1 (the GPU's busy and idle time)
#   defaults instead of build, one call (DEFAULTS_DEADLINE=360, timeout 390; carry .whl): the gather kernel's
#          test, the graph and fused-pass tests, H.1 in full and the H.1 / FNN-800 steps with the defaults,
#          Nsight Compute over the default step, H.1 in full with cublaslt, the peers' H.1 rows
#   overlap instead of build, one call (OVERLAP_DEADLINE=560, timeout 590; carry .whl with nvidia-cutlass): phase changes as
#          CUDA events, the per-epoch phases as CUDA graphs (train.graph_epoch), the cuBLASLt products with
#          measured split-K (cublaslt) and the 3xTF32 ones: the tests, H.1 in full twice with the defaults and
#          twice with train.graph_epoch, the step's A/B of auto / cublaslt / tf32x3 and H.1 in full with each,
#          kernels.cuda_mlp_streams' A/B, FNN-800's step on the cuBLAS route, cublaslt and tf32x3, 100 chains,
#          kernels.cuda_act's A/B, bench_epoch (both), peers
#   verify instead of build: builds test_mlp_fused, bench_step and sgmcmc, runs the test, then H.1 in full
#          (graph-replayed) with the default kernels
#   cpufloors  the step-against-floor bench on this host's CPU (bench/floors.sh on build-cuda's bench_step,
#          H.1 and FNN-800, 3 rounds): at 2 threads and at all cores, against the 2-vCPU CI host's table
#   debug  the output and a cuda-gdb backtrace of the test programs in DEBUG_TESTS
#   dist   every test of test_distributed, with its output
#   peers  bench/peers.sh --device cuda: BlackJAX / posteriors / torch.compile on the same GPU (PEERS-TABLE:cuda)
# Logs go to /tmp/gpu-logs, tarred into $OUT/logs.tgz after every stage (the device tool brings $OUT back).
# Spending a GPU session's 15 device minutes: the build there takes 3-4 min, so compile here first
# (bash scripts/gpu_prebuild.sh: the launch stage's programs, ~20 min on 2 cores) and carry .gpubin; a stage
# that builds takes them instead where they match (take_prebuilt). Without a prebuild: build once and pack;
# later calls unpack. For example
#   call 1: build pack tests ctest job         call 2 (carry .gpubin): unpack bench h1 bpmf floors profile
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/sgmcmc-gpu-out}
mkdir -p "$OUT"
L=/tmp/gpu-logs; mkdir -p $L   # every log (the tool brings back at most 8 files: they travel as one tar)
export LD_LIBRARY_PATH="/tmp/devdeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FMNIST=${FMNIST:-$PWD/.devdata/fashion-mnist}
B=build-cuda
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(build pack tests ctest job)
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
# Whether the call is still short of DEADLINE seconds; otherwise says that WHAT is skipped.
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ] || { stamp "skipped: $2 (past $1 s)"; return 1; }; }  # DEADLINE WHAT

gtest_summary() { grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[  FAILED  \]" "$1" | sort -u | head -30; }

stage_build() {
  nvidia-smi > "$L/nvidia-smi.txt" 2>&1
  # shellcheck disable=SC2046
  if ! bash .devdeps/device-build.sh -DSGMCMC_CUDA=ON -DSGMCMC_BENCH=ON $(cutlass_flag) > "$L/build.log" 2>&1; then
    echo "build failed:"; grep -E "error|Error" "$L/build.log" | head -40; tail -20 "$L/build.log"; exit 1
  fi
  grep -E "^torch |Distributed runs|NCCL" "$L/build.log" | head -5
}
# CUTLASS's headers for the 3xTF32 products (kernels/gemm_tf32x3.h), from PyPI's nvidia-cutlass wheel carried
# in .whl (here: pip download nvidia-cutlass --no-deps -d .whl): the cmake option, or nothing without it.
cutlass_flag() {
  [ "${NO_CUTLASS:-0}" = 1 ] && return 0
  local w; w=$(ls .whl/nvidia_cutlass-*.whl 2>/dev/null | head -1)
  [ -n "$w" ] || return 0
  [ -f /tmp/cutlass/cutlass_library/source/include/cutlass/cutlass.h ] ||
    python3 -m zipfile -e "$w" /tmp/cutlass > /dev/null 2>&1 || return 0
  echo "-DSGMCMC_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source/include"
}
# The Debian packages carried in .devdeps, into /tmp/devdeps (as device-build.sh does)
# (once a call: take_prebuilt, configure_cuda and unpack each need them)
unpack_devdeps() {
  [ -f /tmp/devdeps/.unpacked ] && return 0
  mkdir -p /tmp/devdeps && for f in .devdeps/*.deb; do dpkg-deb -x "$f" /tmp/devdeps; done && touch /tmp/devdeps/.unpacked
}
# Configure build-cuda/ as device-build.sh does (for the stages that build only some targets).
configure_cuda() {
  local prefix=/tmp/devdeps tp
  unpack_devdeps
  tp=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  # shellcheck disable=SC2046
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSGMCMC_CUDA=ON \
    -DSGMCMC_BENCH=ON $(cutlass_flag) "-DCMAKE_PREFIX_PATH=$tp;$prefix/usr;$prefix/usr/lib/x86_64-linux-gnu/cmake;$prefix/usr/lib/cmake" \
    > "$L/build.log" 2>&1 || { tail -20 "$L/build.log"; return 1; }
  grep -E "3xTF32" "$L/build.log" || true   # no CUTLASS carried: no line, not a failure
}
# Configure (configure_cuda) and build only these targets; the build log's errors on failure. Programs
# compiled by scripts/gpu_prebuild.sh are taken instead where they match and hold every target.
build_targets() {
  local t missing=0
  if take_prebuilt; then
    for t in "$@"; do [ -x "$B/${t/sgmcmc_main/sgmcmc-main}" ] || missing=1; done
    [ $missing = 0 ] && { stamp "prebuilt: $*"; return 0; }
  fi
  configure_cuda || return 1
  cmake --build $B -j"$(nproc)" --target "$@" >> "$L/build.log" 2>&1 || { grep -E "error" "$L/build.log" | head -20; return 1; }
  stamp "built $*"
}
# A test program with a time limit (and a gtest filter): its summary, and the context of its failures.
run_gtest() {  # NAME TIMEOUT [FILTER]
  timeout "$2" $B/$1 ${3:+--gtest_filter=$3} > "$L/$1.log" 2>&1
  echo "$1 rc=$?"; gtest_summary "$L/$1.log"
  grep -B3 -A8 "Failure" "$L/$1.log" | head -40
}
# H.1 with `chains: C`, kernels.cuda_mlp=V, E epochs, graph-replayed: steps per second of stepping; the
# summary and metrics.csv (time.steps by epoch: the rate after the first epoch) kept as chains_V_C_*.
chains_run() {  # V C EPOCHS TIMEOUT
  local v=$1 c=$2 e=$3
  timeout "$4" $B/sgmcmc train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
    --set chains=$c --set train.graph=true --set kernels.cuda_mlp=$v --set train.epochs=$e \
    --set train.burn_in=$(( e > 4 ? 2 : 1 )) --out /tmp/chains_${v}_$c --overwrite -q > "$L/chains_${v}_$c.log" 2>&1
  echo "H.1 $e epochs, chains=$c, kernels.cuda_mlp=$v: rc=$?"; phase_times /tmp/chains_${v}_$c/summary.json
  cp /tmp/chains_${v}_$c/summary.json "$L/chains_${v}_${c}_summary.json" 2>/dev/null
  cp /tmp/chains_${v}_$c/metrics.csv "$L/chains_${v}_${c}_metrics.csv" 2>/dev/null
}
# Only some targets, for a call with little device time left: configure as device-build.sh does, build
# and run the CUDA checks of the kernels in groups, the first group's results coming back first.
stage_quick() {
  configure_cuda || return 1
  stamp configured
  cmake --build $B -j"$(nproc)" --target test_fused bench_update >> "$L/build.log" 2>&1 || { grep -E "error" "$L/build.log" | head -20; return 1; }
  stamp "built test_fused bench_update"
  $B/test_fused --gtest_filter='Fused.Cuda*:Fused.Block4*' 2>&1 | grep -E "^\[  (FAILED|PASSED|SKIPPED|     OK) |Failure" | head -20
  $B/bench_update --device cuda --params 100000000 --threads 16 --samplers sgld,sghmc,santa,sgd 2>&1 | tail -6
  cmake --build $B -j"$(nproc)" --target test_models test_bpmf >> "$L/build.log" 2>&1 || { grep -E "error" "$L/build.log" | head -20; return 1; }
  stamp "built test_models test_bpmf"
  $B/test_models --gtest_filter='Models.SoftmaxXent*' 2>&1 | grep -E "^\[  (FAILED|PASSED|SKIPPED|     OK) |Failure" | head
  $B/test_bpmf --gtest_filter='Bpmf.Cuda*:Bpmf.OwnBackward*' 2>&1 | grep -E "^\[  (FAILED|PASSED|SKIPPED|     OK) |Failure" | head
}
stage_unpack() {
  if [ -f .gpubin/bin.tar.xz ]; then take_prebuilt; else unpack_devdeps; cat .gpubin/bin.tgz.part-* | tar xz; fi
}
# The programs scripts/gpu_prebuild.sh compiled on a machine without a GPU (.gpubin/bin.tar.xz), taken only
# when they link this machine's torch build (its git_version), were compiled from this tree's sources
# (scripts/source_hash.sh) and find every library (ldd); otherwise nothing is taken and the caller builds.
take_prebuilt() {
  [ -f .gpubin/bin.tar.xz ] || return 1
  local d=/tmp/prebuilt want have f pack sources
  # what a call on this warm machine took before goes too: no later stage may run programs that do not match
  not_taken() {
    stamp "prebuilt not taken: $1"
    if [ -f $B/.prebuilt_pack ]; then (cd $B && rm -f .prebuilt_pack PREBUILT $(tar -tJf ../.gpubin/bin.tar.xz | sed -n 's|^build-cuda/\(.\)|\1|p')); fi
    return 1
  }
  unpack_devdeps
  pack=$(sha1sum < .gpubin/bin.tar.xz) sources=$(bash scripts/source_hash.sh)
  # launch_more on the warm machine: taken by the first call, and the tree sent again is the same
  [ "$(cat $B/.prebuilt_pack 2>/dev/null)" = "$pack" ] && [ "$(sed -n 's/^sources //p' $B/PREBUILT 2>/dev/null)" = "$sources" ] &&
    { stamp "prebuilt: taken already"; return 0; }
  rm -rf $d && mkdir -p $d && tar -C $d -xJf .gpubin/bin.tar.xz || { not_taken "cannot unpack"; return 1; }
  # their RUNPATH: /tmp/sgmcmc-prebuilt/{torch-lib,cuda-lib}, here this machine's LibTorch and CUDA libraries
  mkdir -p /tmp/sgmcmc-prebuilt && python3 -c 'import glob, os, torch
d = os.path.dirname(torch.__file__)
os.symlink(os.path.join(d, "lib"), "/tmp/sgmcmc-prebuilt/torch-lib")
os.symlink(sorted(glob.glob(os.path.join(os.path.dirname(d), "nvidia", "cu1*", "lib")))[-1], "/tmp/sgmcmc-prebuilt/cuda-lib")' 2>/dev/null ||
    [ -e /tmp/sgmcmc-prebuilt/cuda-lib ] || { not_taken "no torch/lib or nvidia/cu1*/lib beside this machine's torch"; return 1; }
  want=$(sed -n 's/^torch //p' $d/build-cuda/PREBUILT) have=$(python3 -c 'import torch; print(torch.version.git_version)')
  [ "$want" = "$have" ] || { not_taken "torch $want, this machine's is $have"; return 1; }
  want=$(sed -n 's/^sources //p' $d/build-cuda/PREBUILT)
  [ "$want" = "$sources" ] || { not_taken "other sources than this tree's ($(sed -n 's/^tree //p' $d/build-cuda/PREBUILT))"; return 1; }
  for f in $d/build-cuda/*; do
    [ -x "$f" ] || continue
    ! ldd "$f" | grep "not found" || { not_taken "$(basename "$f") misses a library"; return 1; }
  done
  mkdir -p $B && cp -p $d/build-cuda/* $B/ && echo "$pack" > $B/.prebuilt_pack && stamp "prebuilt: took $(ls $d/build-cuda | tr '\n' ' ')(from $(sed -n 's/^tree //p' $d/build-cuda/PREBUILT))"
}
stage_tests() {
  for t in test_fused test_graph test_cuda_consistency; do
    timeout 300 $B/$t > "$L/$t.log" 2>&1
    echo "$t rc=$?"; gtest_summary "$L/$t.log"
  done
  # c10d on the GPU: a one-rank NCCL group (one GPU cannot host two NCCL ranks) and the backend errors.
  timeout 120 $B/test_distributed --gtest_filter='C10dCommunicator.*:DistributedConfig.*' > "$L/test_distributed.log" 2>&1
  echo "test_distributed (c10d) rc=$?"; gtest_summary "$L/test_distributed.log"
}
stage_dist() {  # every test of test_distributed, with its output
  timeout 120 $B/test_distributed > "$L/test_distributed_all.log" 2>&1
  echo "test_distributed rc=$?"; gtest_summary "$L/test_distributed_all.log"
  grep -B2 -A12 "Failure\|error:" "$L/test_distributed_all.log" | head -60
}
stage_ctest() {
  (cd $B && timeout 420 ctest -j8 --timeout 300 -E 'cuda_compile' > "$L/ctest.log" 2>&1)
  echo "ctest rc=$?"; grep -E "tests passed|Failed|\*\*\*" "$L/ctest.log" | head -30
}
stage_job() {
  $B/sgmcmc train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
    --set train.epochs=5 --set train.burn_in=1 --out /tmp/job --overwrite > "$L/job.log" 2>&1
  echo "job rc=$?"; tail -8 "$L/job.log"; cp /tmp/job/summary.json "$L/job_summary.json" 2>/dev/null
}
stage_pack() {  # stripped, in parts of 15 MB (the tool brings back files of 16 MB at most)
  strip $B/sgmcmc $B/sgmcmc-main $B/test_* $B/bench_* 2>/dev/null
  tar czf /tmp/bin.tgz $B/sgmcmc $B/sgmcmc-main $B/test_* $B/bench_* 2>/dev/null
  split -b 15M /tmp/bin.tgz "$OUT/bin.tgz.part-"; ls -la "$OUT"/bin.tgz.part-*
}
stage_debug() {  # the tests that crash: their output and a backtrace (cuda-gdb also debugs host code)
  for t in ${DEBUG_TESTS:-test_config test_graph test_bpmf test_sweep test_simulate test_trainer}; do
    timeout 120 $B/$t > "$L/$t.log" 2>&1; echo "== $t rc=$?"; tail -4 "$L/$t.log"
    timeout 120 cuda-gdb -batch -ex run -ex bt --args $B/$t > "$L/$t.gdb" 2>&1
    grep -E "^#[0-9]+ " "$L/$t.gdb" | head -12 | cut -c1-220
  done
}
stage_bench() {
  [ -f .devdata/movielens-small/ratings.dat ] && export RATINGS=$PWD/.devdata/movielens-small/ratings.dat
  PY=$(command -v python3) SGMCMC_BUILD_DIR=$B SGMCMC_NO_BUILD=1 timeout ${BENCH_TIMEOUT:-540} \
    bash bench/run_all.sh --device cuda ${BENCH_ARGS:-} > "$L/bench.log" 2>&1
  echo "bench rc=$?"; tail -25 "$L/bench.log"
  cp docs/performance.md "$L/"
}
phase_times() {  # a run's wall clock by phase (summary.json's time.*), and its steps per second of stepping
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); t = {k[5:]: round(v, 2) for k, v in d.items() if k.startswith('time.')}
print('   ', t, '| steps / time.steps:', round(d['steps'] / max(d.get('time.steps', 0), 1e-9)), 'steps/s')" "$1" 2>&1 | tail -1
}
stage_h1() {  # H1_GRAPHS (default "false true"), H1_SETS: more --set options, H1_TAG: a name for the logs
  for g in ${H1_GRAPHS:-false true}; do
    local s=$(date +%s.%N)
    timeout ${H1_TIMEOUT:-120} $B/sgmcmc train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
      --set train.graph=$g ${H1_SETS:-} --out /tmp/h1_$g --overwrite -q > "$L/h1${H1_TAG:-}_$g.log" 2>&1
    local rc=$? e=$(date +%s.%N)
    echo "H.1 800 epochs, train.graph=$g ${H1_SETS:-}: rc=$rc wall $(python3 -c "print(f'{$e-$s:.2f}')") s"
    phase_times /tmp/h1_$g/summary.json
    python3 -c "import csv, json, sys; r = list(csv.DictReader(open(sys.argv[1]))); d = json.load(open(sys.argv[2]))
print('    test_error', d.get('test_error'), 'test_nll', d.get('test_nll'), '| last train_loss', r[-1].get('train_loss'))" \
      /tmp/h1_$g/metrics.csv /tmp/h1_$g/summary.json 2>&1 | tail -1
    cp /tmp/h1_$g/summary.json "$L/h1${H1_TAG:-}_${g}_summary.json" 2>/dev/null
    cp /tmp/h1_$g/metrics.csv "$L/h1${H1_TAG:-}_${g}_metrics.csv" 2>/dev/null
  done
}
# Nsight Compute: every kernel of a stretch of eager H.1 steps (names, GPU time), then whole graph
# replays (--graph-profiling graph: one replay's GPU time, start of its first kernel to end of its last).
stage_profile() {
  local ncu; ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  local h1="configs/mnist_bnn_sghmc.yaml --set data.dir=$FMNIST --set device=cuda --set train.epochs=3 --set train.burn_in=1 ${PROFILE_SETS:-}"
  # shellcheck disable=SC2086
  timeout ${NCU_TIMEOUT:-200} "$ncu" --metrics gpu__time_duration.sum --launch-skip ${NCU_SKIP:-6000} --launch-count ${NCU_COUNT:-300} \
    --csv --print-units base $B/sgmcmc train $h1 --out /tmp/prof_eager --overwrite -q > "$L/ncu_eager.csv" 2> "$L/ncu_eager.err"
  echo "ncu eager rc=$?"
  if [ "${PROFILE_GRAPH:-1}" = 0 ]; then python3 scripts/ncu_summary.py "$L/ncu_eager.csv" 2>&1 | tee "$L/ncu_summary.txt"; return; fi
  # shellcheck disable=SC2086
  timeout ${NCU_TIMEOUT:-200} "$ncu" --graph-profiling graph --metrics gpu__time_duration.sum --launch-skip ${NCU_GSKIP:-400} \
    --launch-count 20 --csv --print-units base $B/sgmcmc train $h1 --set train.graph=true --out /tmp/prof_graph \
    --overwrite -q > "$L/ncu_graph.csv" 2> "$L/ncu_graph.err"
  echo "ncu graph rc=$?"
  python3 scripts/ncu_summary.py "$L/ncu_eager.csv" "$L/ncu_graph.csv" 2>&1 | tee "$L/ncu_summary.txt"
}
# bench_step for H.1 and FNN-800 with `--set kernels.SETTING` (more may follow: "cuda_mlp=fused --set
# kernels.cuda_gather=fused"), labelled mlp_h1_TAG and fnn800_TAG (+ _graph with --graph), into JSONL.
ab_step() {  # SETTING TAG GRAPH_FLAG JSONL
  local sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"
  # shellcheck disable=SC2086
  timeout 60 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir=$FMNIST --set device=cuda --set kernels.$1 \
    --threads 16 --rounds 5 --steps 500 $3 --label "mlp_h1_$2${3:+_graph}" --json "$4" 2>&1 | grep -E "step at|rror"
  # shellcheck disable=SC2086
  timeout 60 $B/bench_step configs/mnist_fnn800_sgld.yaml $sg --set data.dir=$FMNIST --set device=cuda --set kernels.$1 \
    --threads 16 --rounds 5 --steps 500 $3 --label "fnn800_$2${3:+_graph}" --json "$4" 2>&1 | grep -E "step at|rror"
}
# bench_step's JSON lines as label, µs per step, step ÷ floor.
step_table() {
  python3 -c "import json, sys
for l in open(sys.argv[1]): d = json.loads(l); print(d['label'], round(1e6 / d['step_median'], 1), 'us/step', round(d['fraction_of_floor'], 3))" "$1"
}
# The CUDA float32 GEMM route (kernels/matmul.cpp) A/B, for a call with little device time: configure,
# build sgmcmc and bench_step only, then each MLP row's step with the route and without.
stage_gemm() {
  configure_cuda || return 1
  cmake --build $B -j"$(nproc)" --target bench_step sgmcmc >> "$L/build.log" 2>&1 || { grep -E "error" "$L/build.log" | head -20; return 1; }
  stamp "built bench_step sgmcmc"
  for g in --graph ""; do
    for v in route aten route aten; do ab_step "cuda_gemm=$v" "$v" "$g" "$L/gemm.jsonl"; done
  done
  step_table "$L/gemm.jsonl"
  H1_TAG=_gemm stage_h1
}
# The MLP's elementwise CUDA kernels (kernels/activation_cuda.h), off by default until they pass here:
# their test against ATen, the H.1 step with them and without (graph and eager), then the full H.1 run
# with them (compare its test error and time.* with the h1 stage's).
stage_act() {
  timeout 120 $B/test_models --gtest_filter='Models.ActivationCudaKernelsEqualAten:Models.SoftmaxXentCuda*' \
    > "$L/test_models_act.log" 2>&1
  echo "test_models (activation kernels) rc=$?"; gtest_summary "$L/test_models_act.log"
  for g in --graph ""; do
    for v in fused aten fused aten; do
      timeout 60 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --set kernels.cuda_act=$v \
        --threads 16 --rounds 5 --steps 500 $g --label "mlp_h1_act_$v${g:+_graph}" --json "$L/act.jsonl" 2>&1 | grep -E "step at"
    done
  done
  step_table "$L/act.jsonl"
  H1_SETS="--set kernels.cuda_act=fused" H1_TAG=_act stage_h1
}
# The fused MLP pass (kernels/mlp_fused.h): its CUDA test, the A/B of the H.1 and FNN-800 steps against
# ATen's path, then App. H.1 in full with it and without (compare test error and time.*).
stage_mlp() {
  build_targets test_mlp_fused test_gather_rows bench_step bench_epoch sgmcmc || return 1
  run_gtest test_mlp_fused 180
  run_gtest test_gather_rows 60
  local v tag pg="fused --set kernels.cuda_mlp_prior=fused --set kernels.cuda_gather=fused"
  for g in --graph ""; do
    for v in fused "fused --set kernels.cuda_mlp_prior=fused" "$pg" aten fused "fused --set kernels.cuda_mlp_prior=fused" "$pg" aten; do
      tag=$(echo "$v" | sed 's/ --set kernels.cuda_mlp_prior=fused/_prior/; s/ --set kernels.cuda_gather=fused/_gather/')
      ab_step "cuda_mlp=$v" "$tag" "$g" "$L/mlp.jsonl"
    done
  done
  step_table "$L/mlp.jsonl"
  H1_GRAPHS=true H1_TAG=_base stage_h1
  H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp=fused" H1_TAG=_mlp stage_h1
  H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp=fused --set kernels.cuda_mlp_prior=fused --set kernels.cuda_gather=fused" H1_TAG=_prior stage_h1
  python3 -c "import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f)); print(f.split('/')[-1], {k: d.get(k) for k in ('test_error', 'test_nll', 'val_error', 'wall_seconds')})" \
    "$L/h1_base_true_summary.json" "$L/h1_mlp_true_summary.json" "$L/h1_prior_true_summary.json" 2>&1
  stage_epoch
}
# 100 parallel chains of H.1 against one (the target: 100 chains for at most 3x one chain's time per
# step): steps per second of stepping (summary.json's steps / time.steps), 20 epochs, graph-replayed, with
# ATen's products and with the fused pass (kernels.cuda_mlp=fused takes chains; auto leaves them to ATen).
stage_chains() {
  if [ ! -x $B/sgmcmc ] || [ ! -x $B/test_mlp_fused ]; then
    configure_cuda || return 1
    cmake --build $B -j"$(nproc)" --target test_mlp_fused sgmcmc >> "$L/build.log" 2>&1 || { grep -E "error" "$L/build.log" | head -20; return 1; }
  fi
  timeout 180 $B/test_mlp_fused --gtest_filter='*Chains*' > "$L/test_mlp_fused_chains.log" 2>&1
  echo "test_mlp_fused (chains) rc=$?"; gtest_summary "$L/test_mlp_fused_chains.log"
  grep -B3 -A8 "Failure" "$L/test_mlp_fused_chains.log" | head -40
  local v c
  for v in aten fused; do
    for c in 1 100; do chains_run $v $c 20 150; done
  done
}
# The per-epoch work on the GPU: bench_epoch's ATen ops, host reads and seconds per phase (App. H.1, 100
# epochs, graph-replayed steps): seconds / ops is what one op of the per-epoch work costs on this GPU.
stage_epoch() {
  if [ ! -x $B/bench_epoch ]; then
    configure_cuda || return 1
    cmake --build $B -j"$(nproc)" --target bench_epoch >> "$L/build.log" 2>&1 || { grep -E "error" "$L/build.log" | head -20; return 1; }
  fi
  # shellcheck disable=SC2086
  timeout 120 $B/bench_epoch configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
    --set train.graph=true --set train.epochs=100 --set train.burn_in=2 --set output.dir=/tmp/bench_epoch \
    ${EPOCH_SETS:-} --threads 8 --json "$L/epoch${EPOCH_TAG:-}.json" > "$L/epoch${EPOCH_TAG:-}.log" 2>&1
  echo "bench_epoch ${EPOCH_SETS:-} rc=$?"; tail -10 "$L/epoch${EPOCH_TAG:-}.log"
}
# One call for a 15-minute device budget, in order of what the open issues need first; a part is
# skipped once LEAN_DEADLINE seconds (default 540) have passed since the script began: build the
# targets below, the fused pass's and the gather's CUDA tests (chains included), the H.1 step A/B of
# the pass alone / with λθ in its epilogue / with the gathers fused too / ATen's ops (graph replay, two
# rounds), H.1 in full with the defaults and with both fused, 1 and 100 chains with ATen and with the
# pass, bench_epoch, the peers (PEERS_ARGS), then 1,000 chains.
stage_lean() {
  local dl=${LEAN_DEADLINE:-540}
  build_targets test_mlp_fused test_gather_rows bench_step bench_epoch sgmcmc || return 1
  run_gtest test_mlp_fused 120
  run_gtest test_gather_rows 60
  local v pr="--set kernels.cuda_mlp_prior=fused" ga="--set kernels.cuda_gather=fused" tag
  for v in fused "fused $pr" "fused $pr $ga" aten "aten $ga" fused "fused $pr" "fused $pr $ga" aten "aten $ga"; do
    left $((dl - 210)) "step A/B" || break
    tag=$(echo "$v" | sed 's/ --set kernels.cuda_mlp_prior=fused/_prior/; s/ --set kernels.cuda_gather=fused/_gather/')
    timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --set kernels.cuda_mlp=$v \
      --threads 16 --rounds 5 --steps 500 --graph --label "mlp_h1_${tag}_graph" --json "$L/mlp.jsonl" 2>&1 | grep -E "rror"
  done
  step_table "$L/mlp.jsonl"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 180)) "H.1 in full" && { H1_GRAPHS=true H1_TAG=_default stage_h1
    H1_GRAPHS=true H1_SETS="$pr $ga" H1_TAG=_fused stage_h1; }
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  local c
  for v in aten fused; do
    for c in 1 100; do
      left $((dl - 140)) "chains" || break 2
      chains_run $v $c 20 60
    done
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 120)) "epoch" && stage_epoch
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 120)) "peers" && PEERS_TIMEOUT=$((dl - 10 - $(date +%s) + t0)) stage_peers
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  for v in aten fused; do
    left $((dl - 30)) "1,000 chains" || break
    chains_run $v 1000 3 $((dl - $(date +%s) + t0))
  done
}
# Nsight Compute at the GPU's own clocks over 200 kernels of a 5-epoch H.1 run past its warm-up (graph
# replays, each node profiled alone), kernel by kernel: ncu_TAG.csv / .err and ncu_TAG_summary.txt.
ncu_h1() {  # TAG TIMEOUT [--set ...]; NCU_SKIP (default 3000) launches before the 200 profiled, NCU_EPOCHS (5)
  local tag=$1 limit=$2; shift 2
  local ncu; ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout "$limit" "$ncu" --clock-control none --metrics gpu__time_duration.sum --launch-skip "${NCU_SKIP:-3000}" --launch-count 200 \
    --csv --print-units base $B/sgmcmc train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
    "$@" --set train.epochs="${NCU_EPOCHS:-5}" --set train.burn_in=1 --out /tmp/prof_$tag --overwrite -q > "$L/ncu_$tag.csv" 2> "$L/ncu_$tag.err"
  echo "ncu sgmcmc $tag rc=$?"; python3 scripts/ncu_summary.py "$L/ncu_$tag.csv" 2>&1 | tee "$L/ncu_${tag}_summary.txt"
}
# A second call after lean, on a fresh machine (FOLLOWUP_DEADLINE seconds, default 400): builds
# test_mlp_fused, bench_step and sgmcmc; the fused pass's test; the H.1 step's A/B of the pass's split-K
# target (kernels.cuda_mlp_blocks_per_sm); H.1 in full with the defaults, with kernels.cuda_mlp_prior /
# cuda_gather on ATen, and with the fastest split-K target; the torch.compile peers beside sgmcmc's row; Nsight
# Compute at the GPU's own clocks (--clock-control none) over a window of sgmcmc's eager H.1 steps and
# of the BlackJAX row's steps (carry .whl), kernel by kernel.
stage_followup() {
  local dl=${FOLLOWUP_DEADLINE:-400}
  build_targets test_mlp_fused bench_step bench_epoch sgmcmc || return 1
  run_gtest test_mlp_fused 120
  # the split-K target of the pass's GEMMs (kernels.cuda_mlp_blocks_per_sm) and the head's rows per block
  # (kernels.cuda_mlp_head_rows), H.1 graph-replayed, two rounds
  local v best=""
  for v in auto 4 8 16 auto 4 8 16; do
    left $((dl - 260)) "blocks per SM A/B" || break
    timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
      --set kernels.cuda_mlp_blocks_per_sm=$v --threads 16 --rounds 5 --steps 500 --graph \
      --label "mlp_h1_per_sm_${v}_graph" --json "$L/per_sm.jsonl" 2>&1 | grep -E "rror"
  done
  for v in 4 2 4 2; do
    left $((dl - 250)) "head rows A/B" || break
    timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
      --set kernels.cuda_mlp_head_rows=$v --threads 16 --rounds 5 --steps 500 --graph \
      --label "mlp_h1_head_rows_${v}_graph" --json "$L/head_rows.jsonl" 2>&1 | grep -E "rror"
  done
  [ -f "$L/head_rows.jsonl" ] && step_table "$L/head_rows.jsonl"
  [ -f "$L/per_sm.jsonl" ] && { step_table "$L/per_sm.jsonl"
    best=$(python3 -c "import json, sys
b = {}
for l in open(sys.argv[1]): d = json.loads(l); k = d['label'].split('_')[4]; b[k] = max(b.get(k, 0), d['step_median'])
print(max(b, key=b.get))" "$L/per_sm.jsonl"); echo "fastest blocks per SM: $best"; }
  left $((dl - 230)) "H.1 in full" && { H1_GRAPHS=true H1_TAG=_default stage_h1
    H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_prior=aten --set kernels.cuda_gather=aten" H1_TAG=_pass stage_h1
    [ -n "$best" ] && [ "$best" != auto ] && H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_blocks_per_sm=$best" H1_TAG=_per_sm stage_h1; }
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 215)) "epoch" && stage_epoch  # the per-epoch reads: Gibbs on the device, one read an evaluation
  left $((dl - 200)) "peers" && PEERS_TIMEOUT=$((dl - 110 - $(date +%s) + t0)) PEERS_ARGS="--rounds 1 --epochs 20 --burn-in 10 --threads 8 --rows sgmcmc-sghmc,torch-compile-step-sghmc,torch-compile-default-sghmc,torch-compile-step-default-sghmc" stage_peers
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  local ncu; ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  left $((dl - 90)) "ncu sgmcmc" && ncu_h1 eager 60
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  local c
  for c in 1 100; do  # the chains' steps/s after the first epoch (metrics.csv's time.steps by epoch)
    left $((dl - 60)) "chains" || break
    chains_run auto $c 10 40
  done
  # What XLA runs for BlackJAX's step on this GPU: its optimized HLO (fusions, GEMM custom calls)
  left $((dl - 70)) "hlo blackjax" && [ -d .whl ] && {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    rm -rf /tmp/hlo
    XLA_FLAGS="--xla_dump_to=/tmp/hlo --xla_dump_hlo_as_text" PYTHONPATH=/tmp/site timeout 60 python3 bench/peers/blackjax_h1.py \
      --sampler sghmc --api ordered --data "$FMNIST" --epochs 2 --burn-in 2 --device cuda --threads 8 > "$L/hlo_blackjax.out" 2>&1
    echo "blackjax HLO dump rc=$?"
    local m; m=$(ls -S /tmp/hlo/*jit_epoch*after_optimizations.txt 2>/dev/null | head -1)
    [ -n "$m" ] && cp "$m" "$L/" && python3 scripts/hlo_summary.py "$m" 2>&1 | tee "$L/hlo_blackjax_summary.txt"; }
  left $((dl - 50)) "ncu blackjax" && [ -d .whl ] && {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    # 3 epochs of 100 steps; kernels 2,000 on: past the compilation, inside the steps. XLA's command
    # buffers (CUDA graphs) off and no preallocation: under ncu with them the process segfaulted (H100)
    XLA_FLAGS=--xla_gpu_enable_command_buffer= XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH=/tmp/site timeout $((dl - $(date +%s) + t0)) "$ncu" --clock-control none --metrics gpu__time_duration.sum \
      --launch-skip ${NCU_JAX_SKIP:-2000} --launch-count ${NCU_JAX_COUNT:-400} --csv --print-units base \
      python3 bench/peers/blackjax_h1.py --sampler sghmc --api ordered --data "$FMNIST" --epochs 3 --burn-in 3 \
      --device cuda --threads 8 > "$L/ncu_blackjax.csv" 2> "$L/ncu_blackjax.err"
    echo "ncu blackjax rc=$?"; grep -c '"gpu__time_duration.sum"' "$L/ncu_blackjax.csv"
    python3 scripts/ncu_summary.py --kernels "$L/ncu_blackjax.csv" 1 2>&1 | head -30 | tee "$L/ncu_blackjax_summary.txt"; }
}
# The fused pass's GEMM choices (kernels.cuda_mlp_gemm: tiled, the default; pipelined: asynchronous copies
# 4 steps deep in 256-thread blocks of four k slices; cublas: the two products over the inputs on cuBLAS,
# the rest in the pass's kernels), one call on a fresh machine (PIPE_DEADLINE seconds, default 330; 520
# when it is a session's only call): their CUDA test against the CPU reference (with the loss added in
# the pass's last kernel), the H.1 step's A/B (two rounds), H.1 in full with each, FNN-800's step A/B,
# Nsight Compute over the pipelined and cuBLAS steps, and 100 chains on the pipelined pass.
stage_pipe() {
  local dl=${PIPE_DEADLINE:-330}
  build_targets test_mlp_fused bench_step sgmcmc || return 1
  run_gtest test_mlp_fused 90
  local v r sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"
  for r in 1 2; do
    for v in tiled_auto pipelined_auto cublas_auto pipelined_4 pipelined_8; do
      left $((dl - 100)) "H.1 step A/B" || break 2
      timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda \
        --set kernels.cuda_mlp_gemm=${v%_*} --set kernels.cuda_mlp_blocks_per_sm=${v#*_} --threads 16 --rounds 5 \
        --steps 500 --graph --label "mlp_h1_${v}_graph" --json "$L/pipe.jsonl" 2>&1 | grep -E "rror"
    done
  done
  [ -f "$L/pipe.jsonl" ] && step_table "$L/pipe.jsonl"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  for v in tiled pipelined cublas; do  # train_loss in each summary: the same as tiled's (the loss sink)
    left $((dl - 70)) "H.1 in full, $v" || break
    H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_gemm=$v" H1_TAG=_$v stage_h1
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  for v in tiled pipelined aten; do
    left $((dl - 55)) "FNN-800 step A/B" || break
    # shellcheck disable=SC2086
    timeout 40 $B/bench_step configs/mnist_fnn800_sgld.yaml $sg --set data.dir="$FMNIST" --set device=cuda \
      --set kernels.cuda_mlp=$([ $v = aten ] && echo aten || echo fused) \
      --set kernels.cuda_mlp_gemm=$([ $v = aten ] && echo auto || echo $v) --threads 16 --rounds 5 --steps 500 \
      --graph --label "fnn800_${v}_graph" --json "$L/pipe.jsonl" 2>&1 | grep -E "rror"
  done
  for v in pipelined cublas; do
    left $((dl - 40)) "ncu $v" || break
    ncu_h1 "$v" 40 --set kernels.cuda_mlp_gemm=$v
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 25)) "100 chains" && {
    timeout 22 $B/sgmcmc train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --set chains=100 \
      --set train.graph=true --set kernels.cuda_mlp=fused --set kernels.cuda_mlp_gemm=pipelined --set train.epochs=6 \
      --set train.burn_in=2 --out /tmp/chains_pipe --overwrite -q > "$L/chains_pipe.log" 2>&1
    echo "H.1 6 epochs, 100 chains, fused pass pipelined: rc=$?"; phase_times /tmp/chains_pipe/summary.json
    cp /tmp/chains_pipe/metrics.csv "$L/chains_pipe_metrics.csv" 2>/dev/null; }
}
# The fused pass's measured auto choices (kernels.cuda_mlp_gemm auto: cublas for H.1, pipelined for the
# deeper MLPs; kernels.cuda_mlp auto up to FNN-800's layers), one call on a fresh machine (AUTO_DEADLINE
# seconds, default 420): the CUDA test, the step A/B of auto against tiled and ATen for H.1, FNN-400 and
# FNN-800 (two rounds), H.1 in full with the defaults, and the peers' H.1 rows (sgmcmc, BlackJAX; carry .whl).
stage_auto() {
  local dl=${AUTO_DEADLINE:-420}
  build_targets test_mlp_fused bench_step sgmcmc || return 1
  run_gtest test_mlp_fused 90
  local r c v sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"
  for r in 1 2; do
    for c in mnist_bnn_sghmc mnist_fnn400_sgld mnist_fnn800_sgld; do
      for v in auto tiled aten; do
        left $((dl - 150)) "step A/B" || break 3
        # shellcheck disable=SC2086
        timeout 40 $B/bench_step configs/$c.yaml $([ $c = mnist_bnn_sghmc ] || echo $sg) --set data.dir="$FMNIST" \
          --set device=cuda --set kernels.cuda_mlp=$([ $v = aten ] && echo aten || echo fused) \
          --set kernels.cuda_mlp_gemm=$([ $v = tiled ] && echo tiled || echo auto) --threads 16 --rounds 5 \
          --steps 500 --graph --label "${c}_${v}_graph" --json "$L/auto.jsonl" 2>&1 | grep -E "rror"
      done
    done
  done
  [ -f "$L/auto.jsonl" ] && step_table "$L/auto.jsonl"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 130)) "H.1 in full" && H1_GRAPHS=true H1_TAG=_auto stage_h1
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 110)) "peers" && PEERS_TIMEOUT=$((dl - 10 - $(date +%s) + t0)) PEERS_ARGS="--wheels .whl --no-doc \
    --rounds 2 --epochs 20 --burn-in 10 --threads 8 --rows sgmcmc-sghmc,blackjax-sghmc-ordered" stage_peers
}
# Phase changes without a synchronisation (train/phase_clock.h: CUDA events; the per-epoch host work
# overlapping the queued steps), one call on a fresh machine (OVERLAP_DEADLINE seconds, default 560; carry
# .whl with the nvidia-cutlass wheel): the fused pass's test (with the 3xTF32 products and their own test),
# PhaseClock's CUDA test, the kernels.cuda_act test, H.1 in full twice with the defaults (compare its phases
# with bench/results/gpu-h100-2026-11-26c: 7.70-7.91 s, evaluations 0.77-0.82 s, samples 0.54-0.55 s,
# Gibbs 0.24-0.27 s, another machine) interleaved with H.1 in full under train.graph_epoch (the sample's,
# the evaluation's and the Gibbs step's device work replayed as CUDA graphs), the H.1 step's A/B of cublaslt
# (cuBLASLt, split-K measured per shape) and tf32x3 against cuBLAS and H.1 in full with each, the step's A/B
# of kernels.cuda_mlp_streams, H.1 in full with every new setting at once, FNN-800's step on auto / cublas /
# cublaslt / tf32x3, 100 chains on ATen, the cuBLAS route, cublaslt and tf32x3, the H.1 step's A/B of kernels.cuda_act on ATen's path, bench_epoch with and without
# train.graph_epoch, the peers' H.1 rows; each part behind its deadline, in order of what the issues need.
# The H.1 step's A/B (bench_step, graph-replayed, two rounds of 5 × 500 steps): --set KEY=VALUE for each VALUE,
# after EXTRA (more --set options), into JSON; stops at DEADLINE.
# 100 chains of H.1, 6 epochs, graph-replayed, with more --set options: µs a step by epoch (metrics.csv's
# time.steps, 100 steps an epoch) and the test error; the metrics kept as chains100_TAG_metrics.csv.
chains100_run() {  # TAG --set ...
  local tag=$1; shift
  timeout 25 $B/sgmcmc train configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --set chains=100 \
    --set train.graph=true "$@" --set train.epochs=6 --set train.burn_in=1 \
    --out /tmp/chains100_$tag --overwrite -q > "$L/chains100_$tag.log" 2>&1
  echo "H.1 6 epochs, 100 chains, $tag ($*): rc=$?"; tail -2 "$L/chains100_$tag.log" | grep -i error
  cp /tmp/chains100_$tag/metrics.csv "$L/chains100_${tag}_metrics.csv" 2>/dev/null
  python3 -c "import csv, sys; r = list(csv.DictReader(open(sys.argv[1]))); t = [float(x['time.steps']) for x in r]
print('    us/step by epoch', [round((b - a) * 1e4, 1) for a, b in zip(t, t[1:])], 'test_error', r[-1]['test_error'])" \
    /tmp/chains100_$tag/metrics.csv 2>&1 | tail -1
}
h1_step_ab() {  # DEADLINE JSON EXTRA KEY VALUE...
  local until=$1 json=$2 extra=$3 key=$4 r v
  shift 4
  for r in 1 2; do
    for v in "$@"; do
      left "$until" "step A/B of $key" || break 2
      # shellcheck disable=SC2086
      timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda $extra \
        --set "$key=$v" --threads 16 --rounds 5 --steps 500 --graph --label "mlp_h1_${key##*.}_${v}_graph" \
        --json "$json" 2>&1 | grep -E "rror|  cublaslt "
    done
  done
  [ -f "$json" ] && step_table "$json"
}
# An FNN row's step (SGHMC, graph-replayed, two rounds of 5 × 500 steps) for each kernels.cuda_mlp_gemm VALUE,
# into JSON; stops at DEADLINE.
fnn_gemm_ab() {  # DEADLINE ROW(fnn400|fnn800) JSON VALUE...
  local until=$1 row=$2 json=$3 r v
  shift 3
  local sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"
  for r in 1 2; do
    for v in "$@"; do
      left "$until" "$row step A/B" || break 2
      # shellcheck disable=SC2086
      timeout 40 $B/bench_step configs/mnist_${row}_sgld.yaml $sg --set data.dir="$FMNIST" --set device=cuda \
        --set kernels.cuda_mlp_gemm=$v --threads 16 --rounds 5 --steps 500 --graph --label "${row}_gemm_${v}_graph" \
        --json "$json" 2>&1 | grep -E "rror|  cublaslt "
    done
  done
  [ -f "$json" ] && step_table "$json"
}
stage_overlap() {
  local dl=${OVERLAP_DEADLINE:-560}
  build_targets test_mlp_fused test_trainer test_graph test_fused test_models bench_step bench_epoch sgmcmc || return 1
  run_gtest test_mlp_fused 200
  run_gtest test_fused 60 "Fused.Cuda*"
  run_gtest test_trainer 60 "PhaseClock.*"
  run_gtest test_graph 150 "Graph.CopyAsyncEqualsCopy:Graph.CudaReplayReproducesEagerRun:Graph.CudaEpochGraphsReproduceEagerPhases"
  run_gtest test_models 90 "Models.ActivationCudaKernelsEqualAten:Models.SoftmaxXentCuda*"
  local r v
  # the defaults, then the per-epoch phases replayed as CUDA graphs (train.graph_epoch), interleaved
  for r in 1 2; do
    left $((dl - 150)) "H.1 in full" && H1_GRAPHS=true H1_TAG=_overlap$r stage_h1
    left $((dl - 150)) "H.1 in full, graph_epoch" && H1_GRAPHS=true H1_SETS="--set train.graph_epoch=true" \
      H1_TAG=_graph_epoch$r stage_h1
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  # the cuBLAS route's two products on cuBLASLt, kernel and split-K measured per shape (cublaslt; bench_step
  # prints each shape's choice against cuBLASLt's heuristic), and as 3xTF32 (tf32x3), against cuBLAS (auto)
  h1_step_ab $((dl - 145)) "$L/tf32x3.jsonl" "" kernels.cuda_mlp_gemm auto cublaslt tf32x3
  left $((dl - 140)) "H.1 in full, cublaslt" && H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_gemm=cublaslt" H1_TAG=_cublaslt stage_h1
  left $((dl - 140)) "H.1 in full, tf32x3" && H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_gemm=tf32x3" H1_TAG=_tf32x3 stage_h1
  # the route's launches on a second stream beside its ∇W products (kernels.cuda_mlp_streams)
  h1_step_ab $((dl - 140)) "$L/streams.jsonl" "" kernels.cuda_mlp_streams 1 2
  # everything new at once, with the GEMM choice whose median step was the fastest in the A/B above: the
  # headline if each part holds
  local fastest
  fastest=$(python3 -c "import json, sys, statistics as st
best = {}
for line in open(sys.argv[1]):
    r = json.loads(line); v = r['label'].split('_gemm_')[-1].rsplit('_', 1)[0]
    best.setdefault(v, []).append(r['step_median'])
print(max(best, key=lambda v: st.median(best[v])))" "$L/tf32x3.jsonl" 2>/dev/null || echo tf32x3)
  echo "H.1's fastest GEMM choice in the A/B: $fastest"
  left $((dl - 130)) "H.1 in full, all new" && H1_GRAPHS=true H1_TAG=_all_new H1_SETS="--set train.graph_epoch=true \
    --set kernels.cuda_mlp_gemm=$fastest --set kernels.cuda_mlp_streams=2" stage_h1
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  # FNN-800 (two hidden layers) on the cuBLAS route and as 3xTF32, against auto (pipelined)
  fnn_gemm_ab $((dl - 130)) fnn800 "$L/fnn800_gemm.jsonl" auto cublas cublaslt tf32x3
  h1_step_ab $((dl - 140)) "$L/streams_tf32x3.jsonl" "--set kernels.cuda_mlp_gemm=tf32x3" kernels.cuda_mlp_streams 1 2
  # which kernels the fastest GEMM choice's step runs (cuBLASLt's chosen ones, CUTLASS's, or cuBLAS's where a
  # product was declined) and their times
  # (cublaslt times ~1,300 launches a product shape at its first step: the profile starts past them)
  local skip=3000 epochs=5
  [ "$fastest" = cublaslt ] && skip=6000 epochs=10
  left $((dl - 130)) "ncu $fastest" && NCU_SKIP=$skip NCU_EPOCHS=$epochs ncu_h1 "$fastest" 40 \
    --set kernels.cuda_mlp_gemm="$fastest"
  # 100 chains: ATen's batched products (auto) against the fused pass's cuBLAS route (bmm) and its 3xTF32
  for v in aten cublas cublaslt tf32x3; do
    left $((dl - 120)) "100 chains, $v" || break
    chains100_run $v --set kernels.cuda_mlp=$([ $v = aten ] && echo aten || echo fused) \
      --set kernels.cuda_mlp_gemm=$([ $v = aten ] && echo auto || echo $v)
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  # kernels.cuda_act (ATen's MLP path: chains, and kernels.cuda_mlp: aten), never run on a GPU before
  h1_step_ab $((dl - 140)) "$L/act.jsonl" "--set kernels.cuda_mlp=aten" kernels.cuda_act fused aten
  left $((dl - 130)) "epoch" && stage_epoch
  left $((dl - 125)) "epoch, graph_epoch" && EPOCH_SETS="--set train.graph_epoch=true" EPOCH_TAG=_graph_epoch stage_epoch
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 110)) "peers" && PEERS_TIMEOUT=$((dl - 40 - $(date +%s) + t0)) PEERS_ARGS="--wheels .whl --no-doc \
    --rounds 2 --epochs 20 --burn-in 10 --threads 8 --rows sgmcmc-sghmc,blackjax-sghmc-ordered" stage_peers
}
# The defaults after the overlap stage's measurements, one call on a fresh machine (DEFAULTS_DEADLINE seconds,
# default 360): the gather kernel's test (16-byte vectors a thread), the graph and fused-pass tests
# (train.graph_epoch: auto, the cuBLAS route for FNN-800), H.1 in full twice with the defaults (against
# the overlap stage's 6.23-6.36 s, graph_epoch 5.98-6.08 s), the H.1 and FNN-800 steps with the defaults
# (49.3-49.8 and 131.5-132.3 us before), Nsight Compute over the default step (the gather was 5.18 us),
# then H.1 in full with cublaslt and the peers' H.1 rows.
stage_defaults() {
  local dl=${DEFAULTS_DEADLINE:-360} r
  build_targets test_gather_rows test_graph test_mlp_fused bench_step sgmcmc || return 1
  run_gtest test_gather_rows 60 "GatherRows.Cuda*"
  run_gtest test_graph 150 "Graph.CopyAsyncEqualsCopy:Graph.CudaReplayReproducesEagerRun:Graph.CudaEpochGraphsReproduceEagerPhases"
  run_gtest test_mlp_fused 200
  for r in 1 2; do
    left $((dl - 120)) "H.1 in full" && H1_GRAPHS=true H1_TAG=_defaults$r stage_h1
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  local sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"
  for r in 1 2; do
    left $((dl - 100)) "steps" || break
    timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --threads 16 \
      --rounds 5 --steps 500 --graph --label "mlp_h1_defaults_graph" --json "$L/defaults.jsonl" 2>&1 | grep -E "rror"
    # shellcheck disable=SC2086
    timeout 40 $B/bench_step configs/mnist_fnn800_sgld.yaml $sg --set data.dir="$FMNIST" --set device=cuda --threads 16 \
      --rounds 5 --steps 500 --graph --label "fnn800_defaults_graph" --json "$L/defaults.jsonl" 2>&1 | grep -E "rror"
  done
  [ -f "$L/defaults.jsonl" ] && step_table "$L/defaults.jsonl"
  left $((dl - 90)) "ncu defaults" && ncu_h1 defaults 40
  left $((dl - 80)) "H.1 in full, cublaslt" && H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_gemm=cublaslt" \
    H1_TAG=_cublaslt stage_h1
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 70)) "peers" && PEERS_TIMEOUT=$((dl - 5 - $(date +%s) + t0)) PEERS_ARGS="--wheels .whl --no-doc \
    --rounds 2 --epochs 20 --burn-in 10 --threads 8 --rows sgmcmc-sghmc,blackjax-sghmc-ordered" stage_peers
}
# cublaslt's choices kept between processes (kernels.cuda_gemm_cache) and a timeline of the GPU's busy and
# idle time, one call on a fresh machine (CACHE_DEADLINE seconds, default 500): the GemmLt tests
# (the cache's GPU test among them) and the CUDA graph tests; H.1 in full with cublaslt three times on an
# empty cache (the first measures and writes, the others must say `cached` and end at the first's test
# error and NLL to the last digit) beside the defaults and train.graph_steps: epoch twice each (the same
# test error and NLL as the defaults, to the last digit) and kernels.cuda_mlp_update: fused twice (the
# sampler's update in the fused pass's last kernel: the same results to ~1e-6 and one kernel a step less);
# H.1 in full with train.eval_lag: 20 twice (the same results as the defaults,
# to the last digit); H.1 in full with all four at once (graph_steps epoch, the update fused, cublaslt, eval_lag 20); the H.1 and FNN-800 steps, auto against cublaslt (cached), blocks of 100 steps and
# the update fused; then the Python
# module against the machine's torch and bench/timeline.py over 8 epochs of H.1 with the defaults (the
# steady step's GPU busy and idle time, the epochs' boundaries, the GPU's idle time after each evaluation's
# host read); FNN-400's step on the cuBLAS route (auto) against pipelined; 100 chains with
# train.chain_minibatch own / shared / shared with TF32, twice; Nsight Compute over 100 chains' step. If
# the cache holds, `auto` can take cublaslt for one chain.
stage_cache() {
  local dl=${CACHE_DEADLINE:-500} r
  build_targets test_mlp_fused test_gemm_cluster test_graph bench_step sgmcmc || return 1
  # the cluster products (kernels/gemm_cluster.h) against their CPU reference bit for bit (in the pass:
  # MlpFused.CudaEqualsReference, ~25 s, left to a call with more time; H.1 in full with them below)
  run_gtest test_gemm_cluster 60 "GemmCluster.*"
  run_gtest test_mlp_fused 150 "GemmLt.*:MlpFused.CudaUpdateInLastLaunchEqualsSeparateUpdate"
  # the CUDA graph tests, train.graph_steps' blocks (Graph.CudaStepBlocksEqualSingleSteps) and the update in
  # the pass (Graph.CudaUpdateInMlpPassEqualsSeparateLaunch) among them
  run_gtest test_graph 120 "Graph.Cuda*"
  local cache=/tmp/gemm_lt_cache
  rm -rf $cache
  # cublaslt on an empty cache three times; the defaults and train.graph_steps: epoch (an epoch's 100
  # steps one graph launch: the same test error and NLL as the defaults to the last digit) twice, interleaved
  for r in 1 2 3; do
    left $((dl - 200)) "H.1 in full, cublaslt" || break
    XDG_CACHE_HOME=$cache H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_gemm=cublaslt" H1_TAG=_cublaslt$r stage_h1
    [ $r -le 2 ] || continue
    left $((dl - 200)) "H.1 in full" && H1_GRAPHS=true H1_TAG=_defaults$r stage_h1
    left $((dl - 200)) "H.1 in full, graph_steps" && H1_GRAPHS=true H1_SETS="--set train.graph_steps=epoch" \
      H1_TAG=_graph_steps$r stage_h1
    left $((dl - 200)) "H.1 in full, update fused" && H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_update=fused" \
      H1_TAG=_update_fused$r stage_h1
    left $((dl - 200)) "H.1 in full, cluster products" && H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp_gemm=cluster" \
      H1_TAG=_cluster$r stage_h1
  done
  # the evaluation's row read 20 steps later (train.eval_lag: the host's work on the row beside the queued
  # steps), against the defaults above: the same test error and NLL to the last digit, and the time
  for r in 1 2; do
    left $((dl - 190)) "H.1 in full, eval_lag" && H1_GRAPHS=true H1_SETS="--set train.eval_lag=20" \
      H1_TAG=_eval_lag$r stage_h1
  done
  # everything waiting for its flip at once (the run the ≤ 5 s target is about), on the cache cublaslt wrote
  left $((dl - 180)) "H.1 in full, all new" && XDG_CACHE_HOME=$cache H1_GRAPHS=true H1_TAG=_all_new \
    H1_SETS="--set train.graph_steps=epoch --set kernels.cuda_mlp_update=fused --set kernels.cuda_mlp_gemm=cublaslt --set train.eval_lag=20" \
    stage_h1
  cat $cache/sgmcmc/gemm_lt.json 2>&1 | head -30 > "$L/gemm_lt_cache.json"
  grep -c '"algo"' "$L/gemm_lt_cache.json"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  local sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01" v
  # the steps: auto, cublaslt, the cluster products, auto in blocks of 100 steps a graph launch
  # (--graph-steps 100), and auto with the sampler's update in the pass's last kernel
  # (kernels.cuda_mlp_update: fused)
  local k gemm up
  for r in 1 2; do
    for v in auto cublaslt cluster auto_steps100 update_fused; do
      left $((dl - 150)) "steps" || break 2
      k=1; [ $v = auto_steps100 ] && k=100
      gemm=${v%_steps100}; up=separate
      [ $v = update_fused ] && gemm=auto up=fused
      XDG_CACHE_HOME=$cache timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" \
        --set device=cuda --set kernels.cuda_mlp_gemm=$gemm --set kernels.cuda_mlp_update=$up --threads 16 --rounds 5 \
        --steps 500 --graph --graph-steps $k --label "mlp_h1_gemm_${v}_graph" --json "$L/cache_steps.jsonl" 2>&1 |
        grep -E "rror|  cublaslt "
      # shellcheck disable=SC2086
      XDG_CACHE_HOME=$cache timeout 40 $B/bench_step configs/mnist_fnn800_sgld.yaml $sg --set data.dir="$FMNIST" \
        --set device=cuda --set kernels.cuda_mlp_gemm=$gemm --set kernels.cuda_mlp_update=$up --threads 16 --rounds 5 \
        --steps 500 --graph --graph-steps $k --label "fnn800_gemm_${v}_graph" --json "$L/cache_steps.jsonl" 2>&1 |
        grep -E "rror|  cublaslt "
    done
  done
  [ -f "$L/cache_steps.jsonl" ] && step_table "$L/cache_steps.jsonl"
  # FNN-400 on the cuBLAS route (what auto now takes for it) against the pipelined kernel (auto before)
  fnn_gemm_ab $((dl - 130)) fnn400 "$L/cache_steps.jsonl" auto pipelined
  # the step's kernels with the cluster products and the update in the pass (what is left of the step)
  left $((dl - 140)) "ncu cluster" && ncu_h1 cluster 40 --set kernels.cuda_mlp_gemm=cluster --set kernels.cuda_mlp_update=fused
  # 100 chains, each its own minibatch (the default) against one minibatch shared by all
  # (train.chain_minibatch: shared: x·W_0ᵀ and ∇W_0 one product each over every chain, the images
  # gathered once), and shared with TF32's tensor cores; twice, interleaved
  local m
  for r in 1 2; do
    for m in own shared shared_tf32; do
      left $((dl - 150)) "100 chains, $m" || break 2
      chains100_run ${m}_$r --set train.chain_minibatch=${m%_tf32} --set train.tf32=$([ $m = shared_tf32 ] && echo true || echo false)
    done
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 120)) "timeline" && stage_timeline
  # which kernels 100 chains' step runs on ATen's batched products (1.05 ms a step: ~8 GFLOP of float32
  # products, ~0.16 ms at the SIMT rate, so most of it is elsewhere)
  left $((dl - 60)) "ncu 100 chains" && NCU_SKIP=2000 NCU_EPOCHS=3 ncu_h1 chains100 40 --set chains=100
}
# The defaults the cache stage measured, one short call on a fresh machine (FLIP_DEADLINE seconds, default
# 200): builds sgmcmc and test_mlp_fused (~150 s on 16 cores), runs MlpFused.CudaUpdateInLastLaunchEqualsSeparateUpdate
# (θ against the CPU rule on the pass's own gradient), then H.1 in full three times with the defaults
# (train.graph_steps and train.eval_lag auto, kernels.cuda_mlp_gemm auto = cublaslt; on an empty cuBLASLt
# cache, so the first run measures and the others take its choices) and twice with the defaults before
# (graph_steps 1, eval_lag 0, cublas), interleaved.
stage_flip() {
  local dl=${FLIP_DEADLINE:-200} r cache=/tmp/gemm_lt_flip
  build_targets sgmcmc test_mlp_fused || return 1
  run_gtest test_mlp_fused 60 "MlpFused.CudaUpdateInLastLaunchEqualsSeparateUpdate"
  rm -rf $cache
  for r in 1 2 3; do
    left $((dl - 8)) "H.1 in full, the defaults" && XDG_CACHE_HOME=$cache H1_GRAPHS=true H1_TAG=_defaults$r stage_h1
    [ $r -le 2 ] || continue
    left $((dl - 8)) "H.1 in full, the defaults before" && H1_GRAPHS=true H1_TAG=_before$r \
      H1_SETS="--set train.graph_steps=1 --set train.eval_lag=0 --set kernels.cuda_mlp_gemm=cublas" stage_h1
  done
}
# The next call after flip (NEXT_DEADLINE seconds, default 550: timeout 595; carry .whl with BlackJAX's wheel;
# CUTLASS's wheel, if there, is not unpacked), in order of what decides a default: builds sgmcmc, bench_step
# and the GPU tests (~190 s on 16 cores); the tests of the last launch as column blocks
# (kernels.cuda_mlp_tail: columns, kernels/mlp_tail.h: MlpTail.CudaEqualsReferenceBitForBit; the pass with
# them against its reference and with the sampler's update in them against the update's own kernel), the
# cluster products and the CUDA graphs; H.1 in full with the defaults and with the column blocks, twice,
# interleaved; the H.1 (one launch a step and blocks of 100) and FNN-800 steps with the defaults, the column
# blocks, and the column blocks applying the update, two rounds; Nsight Compute's launch, occupancy,
# warp-state and memory sections over the last launch both ways (the GEMM kernel's 12.1–12.8 µs: the
# step's largest kernel after the products); 100 chains with one shared minibatch on TF32; then, if time
# is left, the peers' H.1 rows (sgmcmc with the defaults against BlackJAX: issue 44's GPU ratio) and the
# sections over the cluster and cuBLASLt forward products. If the column blocks pass bit for bit and the
# steps and H.1 in full are faster, `auto` can take them (KernelSettings::MlpTail, mlp_fused_cuda.cu).
stage_next() {
  local dl=${NEXT_DEADLINE:-550} r k
  NO_CUTLASS=1 build_targets sgmcmc bench_step test_gemm_cluster test_graph test_mlp_tail test_mlp_fused || return 1
  run_gtest test_mlp_tail 60 "MlpTail.*"
  run_gtest test_mlp_fused 120 \
    "MlpFused.CudaEqualsReference:MlpFused.CudaWithPrecisionsEqualsReference:MlpFused.CudaUpdateInLastLaunchEqualsSeparateUpdate"
  run_gtest test_gemm_cluster 60 "GemmCluster.*"
  # the graph tests on the defaults (cuBLASLt's products: the replay against the eager run, the blocks) and
  # the update in the pass with either last launch
  run_gtest test_graph 100 "Graph.Cuda*"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  for r in 1 2; do
    left $((dl - 260)) "H.1 in full" && H1_GRAPHS=true H1_TAG=_defaults$r stage_h1
    left $((dl - 260)) "H.1 in full, tail columns" && H1_GRAPHS=true H1_TAG=_tail_columns$r \
      H1_SETS="--set kernels.cuda_mlp_tail=columns" stage_h1
    left $((dl - 260)) "H.1 in full, tail columns, pdl" && H1_GRAPHS=true H1_TAG=_tail_columns_pdl$r \
      H1_SETS="--set kernels.cuda_mlp_tail=columns --set kernels.cuda_pdl=on" stage_h1
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  local sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01" v sets
  for r in 1 2; do
    # the defaults (the GEMM kernel's last launch), the column blocks, the column blocks applying the
    # sampler's update (kernels.cuda_mlp_update: fused), programmatic dependent launches (kernels.cuda_pdl)
    # with either last launch
    for v in gemm columns columns_update pdl columns_pdl; do
      left $((dl - 150)) "steps" || break 2
      sets="--set kernels.cuda_mlp_tail=$([ "${v#columns}" != "$v" ] && echo columns || echo gemm)"
      sets+=" --set kernels.cuda_mlp_update=$([ $v = columns_update ] && echo fused || echo separate)"
      sets+=" --set kernels.cuda_pdl=$([ "${v%pdl}" != "$v" ] && echo on || echo off)"
      for k in 1 100; do
        [ $k = 100 ] && [ $v = columns_update ] && continue
        [ $k = 100 ] && [ $v = pdl ] && continue
        # shellcheck disable=SC2086
        timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --threads 16 \
          $sets --rounds 5 --steps 500 --graph --graph-steps $k --label "mlp_h1_${v}_steps${k}_graph" \
          --json "$L/next.jsonl" 2>&1 | grep -E "rror"
      done
      # shellcheck disable=SC2086
      timeout 40 $B/bench_step configs/mnist_fnn800_sgld.yaml $sg --set data.dir="$FMNIST" --set device=cuda --threads 16 \
        $sets --rounds 5 --steps 500 --graph --label "fnn800_${v}_graph" --json "$L/next.jsonl" 2>&1 | grep -E "rror"
    done
    # FNN-800 with the route's second stream (kernels.cuda_mlp_streams: 2: the last launch beside the two
    # ∇W products; measured slower for H.1 only, 52.0 against 49.9 µs)
    left $((dl - 150)) "steps" || break
    # shellcheck disable=SC2086
    timeout 40 $B/bench_step configs/mnist_fnn800_sgld.yaml $sg --set data.dir="$FMNIST" --set device=cuda --threads 16 \
      --set kernels.cuda_mlp_streams=2 --rounds 5 --steps 500 --graph \
      --label "fnn800_streams2_graph" --json "$L/next.jsonl" 2>&1 | grep -E "rror"
  done
  [ -f "$L/next.jsonl" ] && step_table "$L/next.jsonl"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  local ncu v; ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  local -A pick=([last]='^gemm_kernel' [tail]='tail_kernel' [cluster]=gemm_cluster [cublaslt]='^sm[0-9]|^cutlass|xmma')
  local -A sets=([last]='--set kernels.cuda_mlp_tail=gemm' [tail]='--set kernels.cuda_mlp_tail=columns'
    [cluster]='--set kernels.cuda_mlp_gemm=cluster' [cublaslt]='--set kernels.cuda_mlp_gemm=cublaslt')
  ncu_sections() {  # V
    # shellcheck disable=SC2086
    timeout 35 "$ncu" --clock-control none --kernel-name "regex:${pick[$1]}" --launch-skip 40 --launch-count 2 \
      --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
      $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda ${sets[$1]} \
      --threads 16 --rounds 1 --steps 30 > "$L/ncu_sections_$1.txt" 2>&1
    echo "ncu sections $1 rc=$?"; grep -E "Duration|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" "$L/ncu_sections_$1.txt" | head -16
  }
  for v in last tail; do left $((dl - 80)) "ncu sections, $v" && ncu_sections $v; done
  left $((dl - 50)) "100 chains, shared, TF32" && chains100_run shared_tf32 --set train.chain_minibatch=shared --set train.tf32=true
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  left $((dl - 160)) "peers" && PEERS_TIMEOUT=150 PEERS_ARGS="--wheels .whl --no-doc --rounds 2 --epochs 20 --burn-in 10 \
    --threads 8 --rows sgmcmc-sghmc,blackjax-sghmc-ordered" stage_peers
  for v in cluster cublaslt; do left $((dl - 40)) "ncu sections, $v" && ncu_sections $v; done
}
# The Python module against the machine's torch (its python3, not /usr/bin's), then bench/timeline.py over
# H.1 with the defaults (TIMELINE_SETS: more --set options): the summary, and the trace into $OUT.
stage_timeline() {
  cmake -S . -B $B -DSGMCMC_PYTHON=ON -DPython3_EXECUTABLE="$(command -v python3)" >> "$L/build.log" 2>&1 &&
    cmake --build $B -j"$(nproc)" --target sgmcmc_python >> "$L/build.log" 2>&1 ||
    { echo "timeline: the Python module did not build"; grep -E "error|Python|pybind" "$L/build.log" | tail -8; return 1; }
  stamp "built sgmcmc_python"
  # shellcheck disable=SC2086
  PYTHONPATH=$B/python timeout 120 python3 bench/timeline.py configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" \
    --set device=cuda ${TIMELINE_SETS:-} --epochs 8 --skip 3 --trace "$OUT/timeline.json.gz" --json "$L/timeline.json" \
    > "$L/timeline.log" 2>&1
  echo "timeline rc=$?"; tail -22 "$L/timeline.log"
}
stage_verify() {  # the fused pass's test and H.1 in full with the defaults, for a call with little time
  TILES_BUILD=1 TILES_BENCH=0 stage_tiles
}
stage_tiles() {
  if [ "${TILES_BUILD:-0}" = 1 ]; then
    configure_cuda || return 1
    cmake --build $B -j"$(nproc)" --target test_mlp_fused bench_step sgmcmc >> "$L/build.log" 2>&1 || { grep -E "error" "$L/build.log" | head -20; return 1; }
    stamp "built test_mlp_fused bench_step sgmcmc"
    timeout 180 $B/test_mlp_fused > "$L/test_mlp_fused.log" 2>&1
    echo "test_mlp_fused rc=$?"; gtest_summary "$L/test_mlp_fused.log"
    grep -B3 -A8 "Failure" "$L/test_mlp_fused.log" | head -60
  fi
  if [ "${TILES_BENCH:-1}" = 0 ]; then H1_GRAPHS=true H1_TAG=_default stage_h1; return; fi
  local v
  for v in "fused --set kernels.cuda_mlp_tile=32" "fused --set kernels.cuda_mlp_tile=64" aten \
           "fused --set kernels.cuda_mlp_tile=32" "fused --set kernels.cuda_mlp_tile=64" aten; do
    ab_step "cuda_mlp=$v" "$(echo "$v" | sed 's/ --set kernels.cuda_mlp_tile=/_/')" --graph "$L/tiles.jsonl"
  done
  step_table "$L/tiles.jsonl"
  H1_GRAPHS=true H1_SETS="--set kernels.cuda_mlp=fused" H1_TAG=_tiles stage_h1
}
# The step-against-floor targets are out of reach on the 2-vCPU CI host (docs/performance.md): the
# same bench on this host's CPU, at 2 threads and at all of its cores. This build has no oneDNN (the
# wheel's ATen, MKL, does the products), so the floor and the step use ATen's products here.
stage_cpufloors() {
  local t
  for t in 2 "$(nproc)"; do
    PY=$(command -v python3) SGMCMC_BUILD_DIR=$B SGMCMC_NO_BUILD=1 FMNIST="$FMNIST" FLOORS_ROWS="mlp_h1 fnn800" \
      FLOORS_ATEN=0 FLOORS_DOC=0 FLOORS_OUT="$L/cpufloors_$t.jsonl" timeout ${CPUFLOORS_TIMEOUT:-200} \
      bash bench/floors.sh --threads "$t" --rounds 3 --steps 200 > "$L/cpufloors_$t.log" 2>&1
    echo "cpufloors, $t threads: rc=$?"; grep -E "^Measured|^\| App|^\| FNN" "$L/cpufloors_$t.log"
  done
  lscpu > "$L/lscpu.txt" 2>&1
}
make_ml1m() {  # a synthetic ratings file of ml-1M's shape (as bench/floors.sh makes it)
  [ -f /tmp/ml1m.dat ] && return
  python3 - /tmp/ml1m.dat <<'EOF'
import sys, numpy as np
r = np.random.RandomState(0); n = 1000209
u, i, s = r.randint(1, 6041, n), r.randint(1, 3707, n), r.randint(1, 6, n)
np.savetxt(sys.argv[1], np.stack([u, i, s, np.zeros(n, int)], 1), fmt="%d", delimiter="::")
EOF
}
# bench_step on the GPU: each row's step against its floor (its products / convolutions / gathers
# alone), eager and with step and floor each replayed as one CUDA graph; JSON lines in floors.jsonl.
stage_floors() {
  make_ml1m
  local sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01 --set data.dir=$FMNIST"
  declare -A cfg=([mlp_h1]="configs/mnist_bnn_sghmc.yaml --set data.dir=$FMNIST"
                  [fnn800]="configs/mnist_fnn800_sgld.yaml $sg" [cnn]="configs/mnist_cnn_sgld.yaml $sg"
                  [bpmf_ml1m]="configs/movielens_bpmf_sghmc.yaml --set data.path=/tmp/ml1m.dat --set data.fold=0")
  for row in mlp_h1 fnn800 cnn bpmf_ml1m; do
    for g in "" --graph; do
      # shellcheck disable=SC2086
      timeout 120 $B/bench_step ${cfg[$row]} --set device=cuda --threads 16 --rounds 5 --steps ${FLOOR_STEPS:-500} \
        $g --label "$row${g:+_graph}" --json "$L/floors.jsonl" 2>&1 | grep -E "^[a-z]|step at"
    done
  done
}
stage_bpmf() {
  make_ml1m
  for g in false true; do
    $B/sgmcmc train configs/movielens_bpmf_sghmc.yaml --set data.path=/tmp/ml1m.dat --set data.fold=0 \
      --set device=cuda --set train.steps=20000 --set train.burn_in_steps=0 --set train.eval_every_steps=20000 \
      --set train.graph=$g --out /tmp/bp_$g --overwrite -q > "$L/bpmf_$g.log" 2>&1
    echo "BPMF ml-1M shape, train.graph=$g: rc=$? $(python3 -c "import json; d=json.load(open('/tmp/bp_$g/summary.json')); print(d['steps_per_second'], 'steps/s')" 2>&1)"
    phase_times /tmp/bp_$g/summary.json
    cp /tmp/bp_$g/summary.json "$L/bpmf_${g}_summary.json" 2>/dev/null
  done
}
# The peers on the same GPU (bench/peers.sh --device cuda: PEERS-TABLE:cuda in docs/performance.md, the
# details in docs/peers.md). The machine has no PyPI: the JAX rows use its own JAX; BlackJAX, posteriors
# and their missing dependencies travel as wheels (here: pip download … -d .whl, see the device tool's
# README; carry .whl) with PEERS_ARGS="--wheels .whl --rounds 1 --epochs 20 --burn-in 10 --threads 8
# --rows sgmcmc-sghmc,blackjax-sghmc-ordered,posteriors-baoa,torch-compile-sghmc" (~100 s on an H200).
# The device's own timeline of replayed steps (bench_step --kernel-trace, CUPTI; bench/kernel_trace.h):
# each kernel's duration and the gap before it, inside the graph, for H.1 (the column blocks, the GEMM last
# launch, programmatic launches, blocks of 100 steps) and FNN-800. Instead of build, one call (~250 s).
stage_trace() {
  NO_CUTLASS=1 build_targets bench_step || return 1
  grep -E "kernel-trace" "$L/build.log" | head -2
  local sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01" v
  local -A sets=([h1]="" [h1_gemm]="--set kernels.cuda_mlp_tail=gemm" [h1_pdl]="--set kernels.cuda_pdl=on"
    [h1_blocks]="--graph-steps 100" [fnn800]="")
  for v in h1 h1_gemm h1_pdl fnn800 h1_blocks; do
    local cfg=configs/mnist_bnn_sghmc.yaml; [ $v = fnn800 ] && cfg=configs/mnist_fnn800_sgld.yaml
    # shellcheck disable=SC2086
    timeout 60 $B/bench_step $cfg $sg --set data.dir="$FMNIST" --set device=cuda --threads 16 --rounds 1 \
      --steps 200 --graph ${sets[$v]} --kernel-trace $([ $v = h1_blocks ] && echo 300 || echo 200) --label "trace_$v" \
      --json "$L/trace.jsonl" > "$L/trace_$v.txt" 2>&1
    echo "trace $v rc=$?"; grep -E "step   steps/s|kernel trace|a launch, medians|^ +[0-9]+ +[0-9.]+ +-?[0-9.]+ " "$L/trace_$v.txt" | head -24
  done
}
# The pass's own launches on a GPU, in one call (LAUNCH_DEADLINE, default 540: timeout 590), in order of what
# the defaults' decisions need: the tests of the last hidden layer and the head in one launch
# (kernels.cuda_mlp_forward: fused), the hidden layers' ∇W as tiled launches (kernels.cuda_mlp_wgrad: fused),
# the column blocks and the chains' shared minibatch in the pass; H.1 in full with the defaults and with both
# own launches; the steps of the five main variants; 100 and 1,000 chains sharing a minibatch; then the second
# rounds, the other variants, the traces, bench_epoch and bench_launch as far as the deadline allows. Instead
# of build. What the deadline cut, a second call on the warm machine runs (launch_more: nothing is rebuilt).
launch_sg="--set sampler.name=sghmc --set sampler.lr=2.0e-6 --set sampler.alpha=0.01"
# (scripts/gpu_prebuild.sh compiles these by default)
launch_targets="sgmcmc sgmcmc_main bench_launch bench_step bench_epoch test_mlp_forward_head test_weight_grad test_mlp_tail test_mlp_fused test_graph"
launch_build() {
  # shellcheck disable=SC2086
  NO_CUTLASS=1 build_targets $launch_targets
}
# H.1 in full, graph-replayed, one run each of the variants named: defaults | own (forward and wgrad fused) |
# columns (the column blocks' last launch) | own_pdl (own, as programmatic dependent launches)
launch_h1() {  # DEADLINE ROUND VARIANT ...
  local dl=$1 r=$2 v; shift 2
  local own="--set kernels.cuda_mlp_forward=fused --set kernels.cuda_mlp_wgrad=fused"
  local -A sets=([defaults]="" [own]="$own" [columns]="--set kernels.cuda_mlp_tail=columns"
    [own_pdl]="$own --set kernels.cuda_pdl=on")
  for v in "$@"; do
    left "$dl" "H.1 in full, $v, round $r" || return 1
    H1_GRAPHS=true H1_TAG=_$v$r H1_SETS="${sets[$v]}" stage_h1
  done
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
}
# One row of the steps, graph-replayed: h1 or fnn800 (SGHMC), its label, more bench_step options.
step_row() {  # NET LABEL [OPTIONS ...]
  local cfg=configs/mnist_bnn_sghmc.yaml net=$1 label=$2; shift 2
  [ "$net" = fnn800 ] && cfg="configs/mnist_fnn800_sgld.yaml $launch_sg"
  # shellcheck disable=SC2086
  timeout 40 $B/bench_step $cfg --set data.dir="$FMNIST" --set device=cuda --threads 16 --rounds 5 --steps 500 \
    --graph "$@" --label "$label" --json "$L/launch_steps.jsonl" 2>&1 | grep -E "rror"
}
# The steps of each variant named (H.1 one launch a step and blocks of 100, FNN-800): gemm (the defaults' last
# launch), columns; _own: the pass's own launches for both halves; _forward / _wgrad: one of them; _pdl:
# programmatic dependent launches; _update: the sampler's update in the backward launch (kernels.cuda_mlp_update:
# fused); _kparts4: the products as 4 k-parts (no split-K reduction kernels)
launch_steps() {  # DEADLINE VARIANT ...
  local dl=$1 v v_own k; shift
  for v in "$@"; do
    left "$dl" "steps $v" || return 1
    local sets="--set kernels.cuda_mlp_tail=${v%%_*}"
    [ "${v%_kparts4}" != "$v" ] && sets+=" --set kernels.cuda_mlp_kparts=4"
    v_own=$v
    [ "${v%_pdl}" != "$v" ] && v_own=${v%_pdl} && sets+=" --set kernels.cuda_pdl=on"
    [ "${v%_update}" != "$v" ] && v_own=${v%_update} && sets+=" --set kernels.cuda_mlp_update=fused"
    [ "${v_own%_own}" != "$v_own" ] && sets+=" --set kernels.cuda_mlp_forward=fused --set kernels.cuda_mlp_wgrad=fused"
    [ "${v%_forward}" != "$v" ] && sets+=" --set kernels.cuda_mlp_forward=fused"
    [ "${v%_wgrad}" != "$v" ] && sets+=" --set kernels.cuda_mlp_wgrad=fused"
    # shellcheck disable=SC2086
    for k in 1 100; do step_row h1 "mlp_h1_${v}_steps${k}_graph" $sets --graph-steps $k; done
    # shellcheck disable=SC2086
    step_row fnn800 "fnn800_${v}_graph" $sets
  done
  return 0
}
# 100 chains of H.1 with one shared minibatch: ATen's autograd (auto) against the pass (kernels.cuda_mlp: fused:
# both large products one GEMM over the chains; the head's rows per block auto (1) and 8), float32 and TF32;
# then 1,000 chains, float32
launch_chains() {  # DEADLINE
  local dl=$1 v
  for v in aten fused fused_rows8 aten_tf32 fused_tf32; do
    left "$dl" "100 chains shared, $v" || return 1
    local sets="--set chains=100 --set train.chain_minibatch=shared"
    [ "${v#fused}" != "$v" ] && sets+=" --set kernels.cuda_mlp=fused"
    [ "${v%_rows8}" != "$v" ] && sets+=" --set kernels.cuda_mlp_head_rows=8"
    [ "${v%_tf32}" != "$v" ] && sets+=" --set train.tf32=true"
    # shellcheck disable=SC2086
    timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --threads 16 \
      --rounds 3 --steps 200 --graph $sets --label "chains100_shared_${v}_graph" --json "$L/launch_steps.jsonl" 2>&1 | grep -E "rror"
  done
  for v in aten fused; do
    left "$dl" "1,000 chains shared, $v" || return 1
    timeout 40 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --threads 16 \
      --rounds 2 --steps 50 --graph --set chains=1000 --set train.chain_minibatch=shared \
      --set kernels.cuda_mlp="$([ $v = fused ] && echo fused || echo auto)" \
      --label "chains1000_shared_${v}_graph" --json "$L/launch_steps.jsonl" 2>&1 | grep -E "rror"
  done
}
# The rest, one round: the update in the column blocks, a block's rows gathered 5 steps at a time (a quarter of
# the H100's 50 MB L2: 7.9 MB) against all at once (157 MB), FNN-800's first hidden layer's bias and ReLU in one
# kernel (kernels.cuda_act: fused)
launch_other_steps() {  # DEADLINE
  local dl=$1 k
  left "$dl" "other steps" || return 1
  for k in 1 100; do
    step_row h1 "mlp_h1_columns_update_steps${k}_graph" --set kernels.cuda_mlp_tail=columns \
      --set kernels.cuda_mlp_update=fused --graph-steps $k
  done
  step_row h1 "mlp_h1_gemm_steps100_gather_l2quarter_graph" --graph-steps 100 --block-gather-bytes 12582912
  step_row fnn800 "fnn800_gemm_act_fused_graph" --set kernels.cuda_act=fused
  return 0
}
# The replayed steps on the device's clock (CUPTI), own launches against the defaults' and the column blocks,
# H.1 and FNN-800, and 100 chains sharing a minibatch through the pass
launch_traces() {  # DEADLINE
  local dl=$1 v
  for v in h1_gemm_own h1_gemm fnn800_gemm_own fnn800_gemm h1_columns fnn800_columns; do
    left "$dl" "trace $v" || return 1
    local cfg=configs/mnist_bnn_sghmc.yaml; [ "${v#fnn800}" != "$v" ] && cfg=configs/mnist_fnn800_sgld.yaml
    local tail=${v#*_} own=auto; [ "${tail%_own}" != "$tail" ] && tail=${tail%_own} own=fused
    # shellcheck disable=SC2086
    timeout 60 $B/bench_step $cfg $launch_sg --set data.dir="$FMNIST" --set device=cuda --threads 16 --rounds 1 --steps 200 \
      --set kernels.cuda_mlp_tail=$tail --set kernels.cuda_mlp_forward=$own --set kernels.cuda_mlp_wgrad=$own --graph \
      --kernel-trace 200 --label trace_$v --json "$L/trace.jsonl" > "$L/trace_$v.txt" 2>&1
    echo "trace $v rc=$?"; grep -E "a launch, medians|^ +[0-9]+ +[0-9.]+ +-?[0-9.]+ .*(tail|gemm_kernel|head|weight_grad)" "$L/trace_$v.txt" | head -8
  done
  left "$dl" "trace chains100_shared_fused" || return 1
  timeout 60 $B/bench_step configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --threads 16 \
    --rounds 1 --steps 50 --set chains=100 --set train.chain_minibatch=shared --set kernels.cuda_mlp=fused --graph \
    --kernel-trace 50 --label trace_chains100_shared_fused --json "$L/trace.jsonl" > "$L/trace_chains100_shared_fused.txt" 2>&1
  echo "trace chains100_shared_fused rc=$?"; grep -E "a launch, medians" "$L/trace_chains100_shared_fused.txt" | head -3
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
}
# The per-epoch phases on the device's clock (H.1 for 20 epochs, each phase's device work a graph of its own),
# and what a kernel node costs inside a replayed graph (bench_launch: probe kernels by launch shape, shared
# memory, parameter size and dependent loads; the column blocks at H.1's and FNN-800's shapes)
launch_epoch_and_probes() {  # DEADLINE
  local dl=$1 cut=0
  if left "$dl" "bench_epoch"; then
    timeout 60 $B/bench_epoch configs/mnist_bnn_sghmc.yaml --set data.dir="$FMNIST" --set device=cuda --set train.epochs=20 \
      --set train.burn_in=5 --set output.dir=/tmp/bench_epoch --threads 16 --kernel-trace --json "$L/epoch_trace.json" \
      > "$L/epoch_trace.txt" 2>&1
    echo "bench_epoch --kernel-trace rc=$?"; sed -n '/^phase/,/^finish/p;/device timeline/,$p' "$L/epoch_trace.txt" | head -30
  else cut=1; fi
  if left "$dl" "bench_launch"; then
    timeout 90 $B/bench_launch --json "$L/launch.jsonl" > "$L/launch.txt" 2>&1
    echo "bench_launch rc=$?"; head -30 "$L/launch.txt"
  else cut=1; fi
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  return $cut
}
# A part of launch_rest that ran to its end (the function returned 0: no deadline cut it) is not run again by
# launch_more on the same warm machine, whose /tmp/gpu-logs keeps the marks; a cut part runs again whole.
once() {  # NAME FUNCTION ARGS...
  local name=$1; shift
  [ -f "$L/.done_$name" ] && { stamp "ran already: $name"; return 0; }
  "$@" && touch "$L/.done_$name"
}
launch_rest() {  # DEADLINE: what follows the first round and the chains
  local dl=$1
  once h1_round2 launch_h1 $((dl - 20)) 2 defaults own
  once h1_more launch_h1 $((dl - 20)) 1 columns own_pdl
  once steps_more launch_steps $((dl - 20)) gemm_own_pdl gemm_own_update gemm_forward gemm_wgrad columns_kparts4
  once other_steps launch_other_steps $((dl - 25))
  [ -f "$L/launch_steps.jsonl" ] && step_table "$L/launch_steps.jsonl"
  once traces launch_traces $((dl - 15))
  once epoch_probes launch_epoch_and_probes $((dl - 40))
}
stage_launch() {
  local dl=${LAUNCH_DEADLINE:-540}
  launch_build || return 1
  run_gtest test_mlp_forward_head 60 "MlpForwardHead.*"
  run_gtest test_weight_grad 60 "WeightGrad.*"
  run_gtest test_mlp_tail 90 "MlpTail.*"
  run_gtest test_mlp_fused 120 \
    "MlpFused.CudaEqualsReference:MlpFused.CudaWithPrecisionsEqualsReference:MlpFused.CudaUpdateInLastLaunchEqualsSeparateUpdate:MlpFused.CudaSharedChainsEqualsReference"
  run_gtest test_graph 100 \
    "Graph.CudaOwnProductsRunNearCublasRun:Graph.CudaUpdateInMlpPassEqualsSeparateLaunch:Graph.CudaPdlRunEqualsPlainRun"
  # each part starts only while its deadline is ahead (a row takes 5-15 s; the command's timeout is 50 s later)
  launch_h1 $((dl - 20)) 1 defaults own
  launch_steps $((dl - 20)) gemm gemm_own columns
  launch_chains $((dl - 20))
  launch_steps $((dl - 20)) gemm gemm_own columns   # the second round of the three
  [ -f "$L/launch_steps.jsonl" ] && step_table "$L/launch_steps.jsonl"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs
  launch_rest "$dl"
}
# The launch stage's later parts in a second call on the warm machine (LAUNCH_DEADLINE as there; nothing is
# rebuilt, and the parts the first call finished are skipped): H.1 in full's second round and other
# variants, the other steps, the traces, bench_epoch, bench_launch.
stage_launch_more() {
  local dl=${LAUNCH_DEADLINE:-540}
  launch_build || return 1
  launch_rest "$dl"
}
stage_peers() {
  PEERS_PYTHON=$(command -v python3) SGMCMC_BUILD_DIR=$B SGMCMC_NO_BUILD=1 timeout ${PEERS_TIMEOUT:-540} \
    bash bench/peers.sh --device cuda --no-install --no-floors ${PEERS_ARGS:-} > "$L/peers.log" 2>&1
  echo "peers rc=$?"; tail -30 "$L/peers.log"
  cp docs/performance.md docs/peers.md bench/results/peers-cuda/*.jsonl bench/results/peers-cuda/*.log "$L/" 2>/dev/null
}
for s in "${STAGES[@]}"; do
  stamp "stage $s"
  "stage_$s" 2>&1 | tee -a "$OUT/progress.txt"
  tar czf "$OUT/logs.tgz" -C /tmp gpu-logs   # after every stage: a command cut off at its limit keeps them
done
stamp done
