#!/usr/bin/env bash
# Install, build, and run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 examples/quickstart.py
python3 examples/train_digits.py --out runs
