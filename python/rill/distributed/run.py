"""Launch a rill.distributed job on this host: ``python -m rill.distributed.run --nproc N script.py args``.

It runs ``mpirun -n N python script.py args`` with what a root or container environment needs:
allow-run-as-root when run as root, ``--oversubscribe`` when N exceeds the cores, shared-memory transport
without the single-copy mechanism containers forbid, and no core binding (each rank sizes its threads from
its share of the cores: Note [Ranks on few cores] in docs/distributed.md). The exit status is mpirun's: a rank
that fails or dies ends the job with a non-zero status and a message naming it. For several hosts or Slurm,
call mpirun or srun yourself (README, "Several processes").
"""
import argparse
import os
import shutil
import sys


def mpirun_command(nproc, target, args, module=False, hosts=None, hostfile=None, extra=()):
    """The mpirun command line and the environment for it."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("[rill.distributed.run] mpirun not found: apt-get install openmpi-bin libopenmpi-dev")
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    cmd = [mpirun, "-n", str(nproc), "--bind-to", "none"]
    if hosts:
        cmd += ["-H", hosts]
    if hostfile:
        cmd += ["--hostfile", hostfile]
    if not hosts and not hostfile and nproc > len(os.sched_getaffinity(0)):
        cmd.append("--oversubscribe")
    cmd += list(extra)
    cmd += [sys.executable] + (["-m", target] if module else [target]) + list(args)
    return cmd, env


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m rill.distributed.run",
        description="Run N processes of a rill.distributed script on this host (through mpirun).")
    parser.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int, default=1,
                        help="number of processes (ranks)")
    parser.add_argument("-H", "--hosts", default=None, help="mpirun's -H, e.g. a:2,b:2 (ssh to the other hosts)")
    parser.add_argument("--hostfile", default=None, help="mpirun's --hostfile")
    parser.add_argument("--mpirun-arg", action="append", default=[], help="one more argument for mpirun")
    parser.add_argument("-m", dest="module", action="store_true", help="run the target as a module (python -m)")
    parser.add_argument("target", help="the script (or, with -m, the module)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    a = parser.parse_args(argv)
    if a.nproc < 1:
        parser.error(f"--nproc must be at least 1, got {a.nproc}")
    cmd, env = mpirun_command(a.nproc, a.target, a.args, a.module, a.hosts, a.hostfile, a.mpirun_arg)
    sys.stdout.flush()
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
