#!/usr/bin/env bash
# Install what rill needs on a fresh Debian machine, then build and install rill
# (editable: re-running this script rebuilds only what changed).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
missing=()
for pkg in libopenblas-serial-dev libdnnl-dev libgtest-dev g++ gdb openmpi-bin libopenmpi-dev libprotobuf-dev protobuf-compiler; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
# Debian's own python3 (not a pyenv or venv one) gets pip and the headers the extension
# builds against from apt-get too.
if [ "$(python3 -c 'import sys; print(sys.base_prefix)')" = /usr ]; then
  python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
  [ -f "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ] || missing+=(python3-dev)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Debian marks its python3 as externally managed (PEP 668); this script is the machine's
# installer, so let pip install beside apt's packages there.
if python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")))'; then
  export PIP_BREAK_SYSTEM_PACKAGES=1
fi

echo "== pip install -r requirements-dev.txt"
python3 -m pip install -q -r requirements-dev.txt

echo "== building rill (Release, C++ tests on)"
python3 -m pip install -q --no-build-isolation -e . \
  -Ccmake.define.RILL_BUILD_TESTS=ON
python3 -c "import rill; print('rill', rill.__version__, 'built and importable')"
