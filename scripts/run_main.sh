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
# the same MLP in graph mode over 2 processes (global tensors: data parallel), checked against one process, and a
# column-parallel + row-parallel Linear pair checked against the plain one
python3 -m rill.distributed.run --nproc 2 examples/train_digits_graph_parallel.py --check
# the same MLP as a 2-stage pipeline over 2 processes (4 micro-batches per step), checked against one process
python3 -m rill.distributed.run --nproc 2 examples/train_digits_pipeline.py --check
# the same pipeline with SSP: each of 8 micro-batches per call an Adam step, stage 0 on weights up to 1 update old
python3 -m rill.distributed.run --nproc 2 examples/train_digits_pipeline.py --ssp --micro-batches 8 --batch-size 256
