#!/usr/bin/env bash
# Installs what building and testing wick needs from Debian, when it is missing.
#   bash scripts/setup.sh          # a no-op when everything is installed
# Runs apt-get as root, or through sudo without a password prompt; when neither works it
# prints the command to run and fails.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache
  libopenblas-openmp-dev libdnnl-dev libcli11-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libbenchmark-dev
  libdlpack-dev pkg-config
  libopenmpi-dev openmpi-bin libgloo-dev
  dataset-fashion-mnist
  libsentencepiece-dev bible-kjv
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

if ((EUID == 0)); then
  as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "wick setup: these Debian packages are missing and this user can't install them:" >&2
  echo "  sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "wick setup: installing ${missing[*]}"
apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q)  # sudo drops the environment
if ! "${apt[@]}" update || ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then
  echo "wick setup: apt-get failed; install these packages and retry:" >&2
  echo "  apt-get install ${missing[*]}" >&2
  exit 1
fi
