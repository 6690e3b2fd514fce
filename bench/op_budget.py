#!/usr/bin/env python3
"""Per-op instruction budget of rill's eager path, from callgrind (docs/performance.md).

Wall-clock timings on this 2-core machine move with its load; instruction counts do not. This runs a small
workload under `valgrind --tool=callgrind --separate-threads=yes` twice, with N and with 0 timed
iterations, and divides the difference by N: instructions per iteration on the submitting (client) thread
and on the VM's scheduler thread, split into the stages of an op.

    cmake -S . -B build/cg -G Ninja -DRILL_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 && ninja -C build/cg
    python3 bench/op_budget.py --build build/cg                # x = x + y and (v * 2).sum().item()
    python3 bench/op_budget.py --build build/cg --workload add --iters 5000

valgrind cannot decode AVX-512, so the extension under test is a build without -march=native (the one
above); the counts are of that build's code. Spinning threads (the online wait of Note [Staying online])
would add instructions that do no work, so the VM threads run with RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS=0.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

WORKLOADS = {
    "add": ("x = x + y, 1 element",
            "y = rill.ones(1)\nx = rill.ones(1)\n", "x = x + y", "rill.synchronize()"),
    "item": ("(v * 2).sum().item(), 1,000 elements",
             "v = rill.rand(1000)\n", "(v * 2).sum().item()", ""),
}

SCRIPT = """import sys, rill
def main(n):
{setup}
    for _ in range(200):
        {body}
    {sync}
    for _ in range(n):
        {body}
    {sync}
main(int(sys.argv[1]))
"""

# Stages of an op on the client thread: (label, inclusive-cost function patterns). Later stages are nested in
# earlier ones (autograd wraps eager wraps submit), so each row reports its own inclusive count and the table
# says which row contains which.
CLIENT_STAGES = [
    ("autograd layer (should_record, record; eager below)", r"^rill::autograd::(binary|binary_scalar|reduce|unary)\("),
    ("  eager call (inference, tensors, instruction)", r"^rill::eager::call1\("),
    ("    inference-cache lookup", r"^rill::ops::infer_cached\("),
    ("    output tensor creation", r"^rill::Tensor::empty\("),
    ("    instruction build + hand-off (vm::submit)", r"^rill::vm::submit\("),
    ("      of which: queue push (Scheduler::submit)", r"^rill::vm::Scheduler::submit\("),
    ("    where-issued capture", r"^rill::vm::capture_location\("),
    ("item(): read submission", r"^rill::vm::submit_read\("),
    ("item(): wait", r"^rill::vm::wait_for\("),
    ("GIL release + re-take", r"^(PyEval_SaveThread|PyEval_RestoreThread)$"),
    ("malloc + free (all callers)", r"^(malloc|free)$"),
]
VM_STAGES = [
    ("admit: dependences + dispatch (all below)", r"^rill::vm::Scheduler::admit\("),
    ("  kernel run (Instruction::run)", r"^rill::vm::Instruction::run\(\)"),
    ("  retire (unlink, complete, delete)", r"^rill::vm::Scheduler::retire\("),
    ("  link dependences", r"^rill::vm::link_dependences\("),
    ("malloc + free (all callers)", r"^(malloc|free)$"),
]
THREAD_KINDS = [("scheduler thread", "rill::vm::Scheduler::loop()"), ("worker thread", "rill::vm::Worker::loop()"),
                ("intra-op pool thread", "rill::parallel::")]


def inclusive_costs(path):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    costs, total = {}, 0
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)$", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        name = re.sub(r"\s*\[[^\]]*\]$", "", m.group(2)).strip()
        if name == "PROGRAM TOTALS":
            total = n
            continue
        if ":" in name and not name.startswith("rill::") and not name.startswith("std::"):
            name = name.split(":", 1)[1]  # file:function
        costs[name] = costs.get(name, 0) + n
    return total, costs


def run_callgrind(python, pkg, script, n, workdir):
    env = dict(os.environ, PYTHONPATH=pkg, RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS="0")
    d = os.path.join(workdir, str(n))
    os.makedirs(d)
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", python, script, str(n)],
                   cwd=d, env=env, check=True, capture_output=True)
    threads = {}
    for path in glob.glob(os.path.join(d, "callgrind.out.*-*")):
        threads[int(path.rsplit("-", 1)[1])] = inclusive_costs(path)
    return threads


def stage_rows(before, after, stages, n):
    rows = []
    for label, pattern in stages:
        rx = re.compile(pattern)
        a = sum(v for k, v in after[1].items() if rx.search(k))
        b = sum(v for k, v in before[1].items() if rx.search(k))
        rows.append((label, (a - b) / n))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build/cg", help="build folder holding python/_C*.so (no -march=native)")
    p.add_argument("--workload", choices=sorted(WORKLOADS), nargs="+", default=sorted(WORKLOADS))
    p.add_argument("--iters", type=int, default=5000)
    args = p.parse_args(argv)
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    so = glob.glob(os.path.join(root, args.build, "python", "_C*.so"))
    if not so:
        sys.exit(f"no extension under {args.build}/python; build it first (see this file's docstring)")
    python = os.path.realpath(sys.executable)
    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "pkg")
        shutil.copytree(os.path.join(root, "python", "rill"), os.path.join(pkg, "rill"),
                        ignore=shutil.ignore_patterns("_C*.so", "__pycache__"))
        shutil.copy(so[0], os.path.join(pkg, "rill"))
        for name in args.workload:
            title, setup, body, sync = WORKLOADS[name]
            script = os.path.join(tmp, f"{name}.py")
            with open(script, "w") as f:
                f.write(SCRIPT.format(setup="".join("    " + line + "\n" for line in setup.splitlines()),
                                      body=body, sync=sync or "pass"))
            work = os.path.join(tmp, name)
            before = run_callgrind(python, pkg, script, 0, work)
            after = run_callgrind(python, pkg, script, args.iters, work)
            print(f"\n== {title}: instructions per iteration ({args.iters} iterations, callgrind)")
            for tid in sorted(after):
                if tid not in before:
                    continue
                per_iter = (after[tid][0] - before[tid][0]) / args.iters
                if per_iter < 50:
                    continue
                kind = "client (Python) thread" if tid == 1 else next(
                    (k for k, fn in THREAD_KINDS if any(name.startswith(fn) for name in after[tid][1])),
                    f"thread {tid} (not rill's)")
                print(f"{kind:40s} {per_iter:10.0f}")
                for label, v in stage_rows(before[tid], after[tid], CLIENT_STAGES if tid == 1 else VM_STAGES,
                                           args.iters):
                    if abs(v) >= 5:
                        print(f"  {label:56s} {v:8.0f}")


if __name__ == "__main__":
    main()
