#!/usr/bin/env bash
# Builds the library, the binary and every test with AddressSanitizer + UndefinedBehaviorSanitizer
# (CMake preset "asan", build dir build-asan) and runs the test suite under them.
#   usage: scripts/test_sanitize.sh [ctest args...]      e.g. scripts/test_sanitize.sh -R 'idx|ratings'
# A full rebuild (~15 min on 2 cores), so it is a separate command, not part of .ci/run.
#
# Sanitizer options (the same as the "asan" test preset):
#  - detect_leaks=0: LibTorch (not instrumented) keeps process-lifetime allocations (operator
#    registry, thread pools, CPU caching allocator) that LeakSanitizer reports at exit; our own
#    ownership is RAII and the leak reports would all be in libtorch frames.
#  - detect_odr_violation=0: libtorch and its dependencies are linked as shared libraries that
#    define some of the same globals (protobuf/onnx symbols); not our code.
#  - UBSan halts on the first report; scripts/ubsan.supp lists suppressions, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_odr_violation=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$PWD/scripts/ubsan.supp"
cmake --preset asan
cmake --build --preset asan
cd build-asan
ctest --output-on-failure -j"$(nproc)" --timeout 1800 "$@"
