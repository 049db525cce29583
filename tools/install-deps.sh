#!/usr/bin/env bash
# Installs the Debian packages kvsim needs, only those that are missing. Nothing else is downloaded.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libboost-program-options-dev libboost-graph-dev libyaml-cpp-dev libeigen3-dev
      libre2-dev libhdf5-dev libgtest-dev libbenchmark-dev python3 python3-h5py python3-pandas python3-matplotlib
      openmpi-bin libopenmpi-dev
      chromium)  # headless, renders analysis/compare.py's report in tests/sweep/compare_report_test.cpp
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing missing packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
