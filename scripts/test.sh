#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test.   usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-data
/usr/bin/python3 scripts/check_docs.py  # docs: code fences, relative links, no chronicle in prose
bash scripts/build.sh
cd "${SGMCMC_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" --timeout 900
