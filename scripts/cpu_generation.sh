#!/usr/bin/env bash
# Prints " (Zen 4, family 25 model 17)" or " (family F model M)" for the CPU of /proc/cpuinfo: the
# VMs that run our benchmarks are all "AMD EPYC" to lscpu, but Zen 4 (AVX-512 on 256-bit units) and
# Zen 5 (full 512-bit units) differ by ~2x in the AVX-512 kernels, so every timing table names it.
set -euo pipefail
fam=$(sed -n 's/^cpu family[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -1)
mod=$(sed -n 's/^model[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -1)
[ -n "$fam" ] && [ -n "$mod" ] || exit 0
vendor=$(sed -n 's/^vendor_id[[:space:]]*: *//p' /proc/cpuinfo | head -1)
gen=""
if [ "$vendor" = AuthenticAMD ]; then
  case "$fam" in
    23) gen="Zen 1/2" ;;
    25) if (((mod >= 16 && mod <= 31) || (mod >= 96 && mod <= 127) || mod >= 160)); then gen="Zen 4"; else gen="Zen 3"; fi ;;
    26) gen="Zen 5" ;;
  esac
fi
echo " (${gen:+$gen, }family $fam model $mod)"
