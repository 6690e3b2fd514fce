"""Run the whole conformance check and write expected.json (the ops and modules that do not pass, and why).

    python3 tests/python/conformance/update_expected.py          # rewrite expected.json, print the counts
    python3 tests/python/conformance/update_expected.py --counts # print the counts only

It also checks gradients of gradients (create_graph=True) on each OpInfo's first float64 samples, against PyTorch's.
Run it after adding or fixing an op or module: test_conformance.py fails while the file lists
something that now passes, or misses something that fails.
"""
import argparse
import sys
import time

import torch

import db_check

torch.set_num_threads(1)


def summary(kind, results):
    missing = sum(1 for r in results.values() if r == "missing")
    failing = sum(1 for r in results.values() if r not in (None, "missing"))
    passing = len(results) - missing - failing
    return f"{kind}: {passing} of {len(results)} pass, {missing} missing, {failing} fail"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", action="store_true", help="print the counts, leave expected.json as it is")
    parser.add_argument("--verbose", action="store_true", help="print each result and its time")
    args = parser.parse_args()
    ops, modules = db_check.load_databases()
    op_results, module_results = {}, {}
    for results, entries, check in ((op_results, ops, db_check.check_op),
                                    (module_results, modules, db_check.check_module)):
        for key, info in entries.items():
            start = time.perf_counter()
            results[key] = check(info)
            if args.verbose:
                print(f"{time.perf_counter() - start:7.3f}s {key}: {results[key] or 'pass'}", flush=True)
    gradgrad = {key: db_check.check_op_gradgrad(op) for key, op in ops.items()}
    gradgrad.update({name: db_check.check_module_gradgrad(info) for name, info in modules.items()})
    print(summary("OpInfo", op_results))
    print(summary("ModuleInfo", module_results))
    compared = {k: r for k, r in gradgrad.items() if k in db_check.GRADGRAD_CHECKED or r is not None}
    print(summary("Gradients of gradients (OpInfos and ModuleInfos with second-order terms)", compared))
    if not args.counts:
        db_check.write_expected({k: r for k, r in op_results.items() if r is not None},
                                {k: r for k, r in module_results.items() if r is not None},
                                {k: r for k, r in gradgrad.items() if r is not None})
        print(f"wrote {db_check.EXPECTED_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
