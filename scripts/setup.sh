#!/usr/bin/env bash
# Install what rill needs on a fresh Debian machine, then build and install rill
# (editable: re-running this script rebuilds only what changed).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
missing=()
for pkg in libopenblas-serial-dev libdnnl-dev libgtest-dev g++; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "== pip install -r requirements-dev.txt"
python3 -m pip install -q -r requirements-dev.txt

echo "== building rill (Release, C++ tests on)"
python3 -m pip install -q --no-build-isolation -e . \
  -Ccmake.define.RILL_BUILD_TESTS=ON
python3 -c "import rill; print('rill', rill.__version__, 'built and importable')"
