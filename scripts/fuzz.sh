#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (CMake preset "fuzz", build dir build-fuzz) and runs each
# for RUNS executions (default 1,000,000) from its seed corpus in fuzz/corpus/<target>/.
#   usage: scripts/fuzz.sh [RUNS] [target...]       targets: idx ratings config
# New interesting inputs go to build-fuzz/corpus-<target>/ (the seed corpus is not modified);
# a crash leaves build-fuzz/crash-* and a non-zero exit. See docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-1000000}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(idx ratings config)
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang (apt-get install -y clang libclang-rt-14-dev)" >&2; exit 2; }
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
for t in "${TARGETS[@]}"; do
  mkdir -p "build-fuzz/corpus-$t"
  echo "== fuzz_$t: $RUNS runs"
  # -rss_limit_mb: a reader that allocated what a header claims would hit it (a finding).
  # ASAN detect_leaks=0: libtorch's process-lifetime allocations (see scripts/test_sanitize.sh).
  ASAN_OPTIONS=detect_leaks=0 "build-fuzz/fuzz/fuzz_$t" "build-fuzz/corpus-$t" "fuzz/corpus/$t" \
    -runs="$RUNS" -max_len=4096 -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 \
    -artifact_prefix="build-fuzz/" -print_final_stats=1
done
