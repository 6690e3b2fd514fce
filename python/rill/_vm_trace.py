"""rill.vm_trace: record the VM's instructions on a timeline (docs/architecture.md §7, docs/odb.md)."""
import contextlib
import os

from . import _C


@contextlib.contextmanager
def vm_trace(path):
    """Record every VM instruction issued inside the block and write a Chrome trace-event file.

    Each instruction gets its submission (client thread), dispatch (scheduler), and run (start
    to end, on the thread that ran it); open the file in https://ui.perfetto.dev or
    chrome://tracing, or summarise it with ``python3 tools/vm_trace_summary.py path``. Leaving
    the block waits for the VM, then writes the file. ``RILL_VM_TRACE=path`` traces a whole run
    instead. Traces do not nest.
    """
    path = os.fspath(path)
    _C._vm_trace_start(path)
    try:
        yield path
    finally:
        _C._vm_trace_stop()
