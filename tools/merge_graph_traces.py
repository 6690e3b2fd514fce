#!/usr/bin/env python3
"""Merge the per-rank graph traces of a rill.distributed job into one Chrome trace (chrome://tracing, Perfetto).

    RILL_GRAPH_TRACE=run.json python3 -m rill.distributed.run --nproc 2 script.py   # run.rank0.json, run.rank1.json
    python3 tools/merge_graph_traces.py run.rank*.json -o run.json

Each rank becomes a process of its own ("rank r"), its threads (the compute thread, each transfer's) tracks of
it, and every rank's times are shifted onto the earliest rank's clock (otherData.start_ns: CLOCK_MONOTONIC, the
same for the ranks of one host), so a pipeline's stages line up and its bubbles show.
"""
import argparse
import json


def load(paths):
    """[(rank, start_ns, events)] of the files, in rank order."""
    out = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        other = data.get("otherData", {})
        out.append((int(other.get("rank", len(out))), int(other.get("start_ns", 0)), data["traceEvents"]))
    return sorted(out, key=lambda r: r[0])


def merge(ranks):
    """One trace-event list: each rank's events with pid = its rank and ts on the earliest clock."""
    origin = min(start for _, start, _ in ranks)
    events = []
    for rank, start, evs in ranks:
        shift_us = (start - origin) / 1000.0
        for e in evs:
            e = dict(e, pid=rank)
            if "ts" in e:
                e["ts"] = float(e["ts"]) + shift_us
            events.append(e)
    return events


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("traces", nargs="+")
    p.add_argument("-o", "--out", required=True)
    args = p.parse_args()
    events = merge(load(args.traces))
    with open(args.out, "w") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)
    print(f"{len(events)} events of {len(args.traces)} ranks -> {args.out}")


if __name__ == "__main__":
    main()
