#!/usr/bin/env bash
# Install, build, and run every test: the C++ suite (ctest), the VM's C++ tests under
# ThreadSanitizer, and the Python suite (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

build_dir=$(ls -d build/cp*/ | head -n 1)
echo "== ctest ($build_dir)"
ctest --test-dir "$build_dir" --output-on-failure

echo "== VM tests under ThreadSanitizer (scripts/tsan.sh)"
bash scripts/tsan.sh

echo "== pytest"
python3 -m pytest -q tests/python
