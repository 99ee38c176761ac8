#!/usr/bin/env bash
# One hash of the sources a build compiles (CMake files, C++ and CUDA under src/, bench/, tests/), the same on
# any machine that holds the same tree, git or not: scripts/gpu_prebuild.sh records it with the programs it
# packs, and gpu_session.sh takes them only where its tree hashes the same.
set -euo pipefail
cd "$(dirname "$0")/.."
find CMakeLists.txt src bench tests \( -name CMakeLists.txt -o -name '*.cmake' -o -name '*.cpp' -o -name '*.h' \
  -o -name '*.cu' -o -name '*.cuh' -o -name '*.in' \) -type f -print0 | LC_ALL=C sort -z | xargs -0 sha1sum | sha1sum | cut -c1-40
