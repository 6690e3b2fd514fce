"""SSP against the synchronous pipeline on digits: 2 stages over 2 processes, the same samples (20 epochs of
micro-batches of 32), test accuracy and training throughput.

    python3 bench/ssp.py                 # 3 runs of each row, alternating; medians
    python3 bench/ssp.py --repeats 5 --json

Each row runs examples/train_digits_pipeline.py --json under python -m rill.distributed.run --nproc 2:
  sync m=2   the synchronous 1F1B pipeline at m = p = 2 micro-batches per call, one Adam step per call;
  ssp m=8    SSP, 8 micro-batches per call, each an Adam step; stage 0 up to one update stale;
  sync m=8   and ssp m=2: the same call sizes swapped, to show what the call size alone does.
samples/s comes from the median epoch after the first (the compile); the ratios are to sync m=2.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "train_digits_pipeline.py")
ROWS = [("sync m=2", False, 2), ("ssp m=8", True, 8), ("sync m=8", False, 8), ("ssp m=2", True, 2)]
MICRO_BATCH = 32


def run(ssp, micro):
    cmd = [sys.executable, "-m", "rill.distributed.run", "--nproc", "2", EXAMPLE, "--json",
           "--micro-batches", str(micro), "--batch-size", str(MICRO_BATCH * micro)] + (["--ssp"] if ssp else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-3000:]}")
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON object per row")
    args = ap.parse_args()
    results = {name: [] for name, _, _ in ROWS}
    for _ in range(args.repeats):
        for name, ssp, micro in ROWS:
            results[name].append(run(ssp, micro))
    base = statistics.median(r["samples_per_s"] for r in results[ROWS[0][0]])
    base_acc = statistics.median(r["accuracy"] for r in results[ROWS[0][0]])
    if not args.json:
        print(f"{'row':10} {'accuracy':>9} {'vs sync m=2':>12} {'samples/s':>10} {'ratio':>6}  staleness (most, bound)")
    for name, ssp, micro in ROWS:
        rs = results[name]
        speed = statistics.median(r["samples_per_s"] for r in rs)
        acc = statistics.median(r["accuracy"] for r in rs)
        row = {"row": name, "ssp": ssp, "micro_batches": micro, "accuracy": acc,
               "accuracy_minus_sync_pp": 100 * (acc - base_acc), "samples_per_s": speed,
               "throughput_ratio": speed / base, "staleness": rs[-1]["staleness"]}
        if args.json:
            print(json.dumps(row))
        else:
            stale = ", ".join(f"stage {s}: {m}/{b}" for s, (m, b) in enumerate(row["staleness"] or []))
            print(f"{name:10} {acc:9.4f} {row['accuracy_minus_sync_pp']:+11.2f}pp {speed:10.0f} "
                  f"{row['throughput_ratio']:6.2f}  {stale}")


if __name__ == "__main__":
    main()
