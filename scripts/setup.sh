#!/usr/bin/env bash
# Installs what sgmcmc needs on Debian bookworm (idempotent; quiet when everything is present).
#   usage: scripts/setup.sh [--with-data]   (run as root, or with sudo available)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libtorch-dev libyaml-cpp-dev libcxxopts-dev
      libgtest-dev libgmock-dev zlib1g-dev libopenblas0-pthread libgloo-dev)
if [[ "${1:-}" == "--with-data" ]]; then pkgs+=(dataset-fashion-mnist); fi
if [[ "${SGMCMC_SETUP_PLOTS:-0}" == "1" ]]; then pkgs+=(python3-matplotlib); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
