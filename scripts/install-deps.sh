#!/usr/bin/env bash
# Installs what mpscheck needs to build and test, from Debian 12's own packages (run as root).
# libopenblas0-pthread matters: without it LibTorch falls back to reference BLAS and every CPU
# baseline is ~60x too slow, which would make every reported speedup a lie.
set -euo pipefail
packages=(cmake g++ make ccache libtorch-dev libopenblas0-pthread libboost-dev libboost-program-options-dev
          libfmt-dev libgtest-dev nlohmann-json3-dev)
# The tests also run Python reproducers and export TorchScript models with Debian's PyTorch, and
# render the HTML report in a headless Chromium.
if [[ "${1:-}" == "--with-test-tools" ]]; then packages+=(python3-torch python3-torchvision chromium); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
