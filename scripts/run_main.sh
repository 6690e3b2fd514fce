#!/usr/bin/env bash
# Install, build, and run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 examples/quickstart.py
python3 examples/train_digits.py --out runs
# the same MLP and CNN trained in graph mode (rill.nn.Graph)
python3 examples/train_digits.py --graph --out runs
# the same MLP with DistributedDataParallel over 2 processes (Open MPI), checked against one process
python3 -m rill.distributed.run --nproc 2 examples/train_digits_ddp.py --check --out runs
