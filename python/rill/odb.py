"""odb: walk through rill's runtime in gdb (docs/architecture.md §7, docs/odb.md).

Freeze the VM pipeline from Python, then look at it from gdb (``source tools/odb/odb.py``,
then ``odb-vm``)::

    rill.odb.stop_vm_scheduler()     # the scheduler parks; new ops queue up behind it
    y = x + 1                        # queued, not run
    rill.odb.breakpoint(y)           # gdb stops here: odb-vm, odb-tensor $odb_tensor
    rill.odb.restart_vm_scheduler()  # the queued ops run

A stopped thread parks at a safe point (between two batches of instructions, holding no
lock); instructions queue up behind it and restarting drains them. While the scheduler is
stopped, a sync point that must wait for the VM (``item()``, ``numpy()``, ``print``,
``rill.synchronize()``) raises RuntimeError instead of waiting forever; one waiting on a
stopped worker waits (Ctrl-C interrupts it) and warns after a second. A fork restarts the
stopped threads for its drain and stops them again in the parent (the child's VM runs);
exit restarts them so queued work finishes.
"""
from . import _C

__all__ = ["stop_vm_scheduler", "restart_vm_scheduler", "stop_vm_worker", "restart_vm_worker", "stopped",
           "breakpoint", "tensor_address"]


def stop_vm_scheduler():
    """Stop the VM scheduler at its next safe point; returns once it is parked (starts the VM if needed)."""
    _C._odb_stop_scheduler()


def restart_vm_scheduler():
    """Restart a stopped scheduler: it schedules what queued up meanwhile. A no-op if it runs."""
    _C._odb_restart_scheduler()


def stop_vm_worker(thread_id):
    """Stop VM worker ``thread_id`` (0, or a ``rill.asyncs.Thread().id``) at its next safe point.

    Returns once it is parked, or at once if it has not started (it then parks before its first
    instruction). Thread 0's instructions run on the scheduler unless
    RILL_VM_COMPUTE_ON_WORKER_THREAD=1, so stopping worker 0 otherwise raises ValueError.
    """
    _C._odb_stop_worker(thread_id)


def restart_vm_worker(thread_id):
    """Restart a stopped VM worker: it runs what queued up meanwhile. A no-op if it runs."""
    _C._odb_restart_worker(thread_id)


def stopped():
    """``{"scheduler": bool, "workers": [ids]}``: the VM threads stopped now."""
    scheduler, workers = _C._odb_stopped()
    return {"scheduler": scheduler, "workers": list(workers)}


def breakpoint(tensor=None):
    """Call ``rill_odb_breakpoint``: under gdb with tools/odb/odb.py loaded, the program stops there.

    With a tensor, gdb's ``$odb_tensor`` points at it (``odb-tensor $odb_tensor``). Without a
    debugger it does nothing.
    """
    _C._odb_breakpoint(tensor)


def tensor_address(tensor):
    """The address of the tensor's ``rill::TensorImpl``, for ``odb-tensor ADDRESS`` in gdb."""
    return _C._odb_tensor_address(tensor)
