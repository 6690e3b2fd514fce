#!/usr/bin/env python3
"""Summarise a rill VM trace: per-op counts, mean queue wait, mean run time, thread utilisation.

    RILL_VM_TRACE=trace.json python3 script.py        # or: with rill.vm_trace("trace.json"): ...
    python3 tools/vm_trace_summary.py trace.json       # a table
    python3 tools/vm_trace_summary.py trace.json --json

The trace (Chrome trace-event JSON, written by src/rill/vm/trace.cpp) has, per instruction, a
"submit" and a "dispatch" instant event and a "run" complete event, tied by args.id. Queue wait
is submit to start of run; run time is start to end; a thread's utilisation is the time it spent
running instructions over the trace's span (first submission to last end).
"""
import argparse
import collections
import json
import sys


def load(path):
    """(instructions, thread names): one dict per instruction with name, submit, dispatch, start, end
    (microseconds), run_tid and submit_tid; thread names by tid."""
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {}
    by_id = collections.defaultdict(dict)
    for e in events:
        ph = e.get("ph")
        if ph == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
            continue
        cat = e.get("cat")
        if cat not in ("submit", "dispatch", "run"):
            continue
        rec = by_id[e["args"]["id"]]
        rec["name"] = e["name"]
        if cat == "submit":
            rec["submit"], rec["submit_tid"] = float(e["ts"]), e["tid"]
        elif cat == "dispatch":
            rec["dispatch"] = float(e["ts"])
        else:
            rec["start"], rec["end"], rec["run_tid"] = float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["tid"]
    instructions = []
    for id_, rec in sorted(by_id.items()):
        missing = {"submit", "dispatch", "start"} - rec.keys()
        if missing:
            raise ValueError(f"{path}: instruction {id_} ({rec.get('name')}) has no {', '.join(sorted(missing))} event")
        rec["id"] = id_
        instructions.append(rec)
    return instructions, names


def summarise(instructions, names):
    """A dict: instructions, span_us, ops {name: count, mean_queue_wait_us, mean_run_us, total_run_us},
    threads {name: runs, busy_us, utilisation}."""
    if not instructions:
        return {"instructions": 0, "span_us": 0.0, "ops": {}, "threads": {}}
    begin = min(i["submit"] for i in instructions)
    end = max(i["end"] for i in instructions)
    span = max(end - begin, 1e-9)
    ops = {}
    for name in sorted({i["name"] for i in instructions}):
        mine = [i for i in instructions if i["name"] == name]
        waits = [i["start"] - i["submit"] for i in mine]
        runs = [i["end"] - i["start"] for i in mine]
        ops[name] = {"count": len(mine), "mean_queue_wait_us": sum(waits) / len(mine),
                     "mean_run_us": sum(runs) / len(mine), "total_run_us": sum(runs)}
    threads = {}
    busy = collections.Counter()
    count = collections.Counter()
    for i in instructions:
        busy[i["run_tid"]] += i["end"] - i["start"]
        count[i["run_tid"]] += 1
    for tid in sorted(busy, key=lambda t: -busy[t]):
        name = names.get(tid, str(tid))
        threads[f"{name} ({tid})"] = {"runs": count[tid], "busy_us": busy[tid], "utilisation": busy[tid] / span}
    return {"instructions": len(instructions), "span_us": span, "ops": ops, "threads": threads}


def print_table(summary, out=sys.stdout):
    print(f"{summary['instructions']} instructions over {summary['span_us']:.1f} us", file=out)
    print(f"{'op':<24}{'count':>8}{'mean queue wait us':>20}{'mean run us':>14}{'total run us':>15}", file=out)
    for name, s in sorted(summary["ops"].items(), key=lambda kv: -kv[1]["total_run_us"]):
        print(f"{name:<24}{s['count']:>8}{s['mean_queue_wait_us']:>20.2f}{s['mean_run_us']:>14.2f}"
              f"{s['total_run_us']:>15.1f}", file=out)
    print(f"{'thread utilisation':<32}{'runs':>8}{'busy us':>14}{'busy':>8}", file=out)
    for name, t in summary["threads"].items():
        print(f"{name:<32}{t['runs']:>8}{t['busy_us']:>14.1f}{t['utilisation']:>8.1%}", file=out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", help="a trace written by RILL_VM_TRACE=path or rill.vm_trace(path)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    summary = summarise(*load(args.trace))
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        print_table(summary)


if __name__ == "__main__":
    main()
