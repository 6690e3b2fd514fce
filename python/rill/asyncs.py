"""Async threads (docs/architecture.md §3.7): give a Python thread a VM thread of its own.

    t = rill.asyncs.Thread()
    with rill.asyncs.thread(t):
        ...   # every op this Python thread issues here runs on t's VM worker

Instructions on different VM threads still respect their data dependences; a sync
point inside the block (item(), print) waits only for what it reads, so it does not
drain the work another thread keeps queueing on thread 0.
"""
import contextlib

from . import _C

__all__ = ["Thread", "thread"]


class Thread:
    """A reserved VM thread id (the lowest free one above 0, at most RILL_VM_WORKER_THREAD_LIMIT).

    Its instructions run on its own worker thread, or on the thread waiting for them when that worker is
    not at them (Note [A waiter runs the queue] in src/rill/vm/scheduler.cpp). The id is freed by close() or when
    the object is collected.
    """

    def __init__(self):
        self._id = _C._asyncs_reserve()

    @property
    def id(self):
        """The VM thread id, or None once closed."""
        return self._id

    def close(self):
        """Free the id (instructions already sent to it still run)."""
        if self._id is not None:
            _C._asyncs_release(self._id)
            self._id = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __repr__(self):
        return f"rill.asyncs.Thread(id={self._id})" if self._id is not None else "rill.asyncs.Thread(closed)"


@contextlib.contextmanager
def thread(t):
    """Send every instruction this Python thread issues inside the block to t's VM thread. Nests."""
    if not isinstance(t, Thread):
        raise TypeError(f"rill.asyncs.thread() expects a rill.asyncs.Thread, got {type(t).__name__}")
    if t.id is None:
        raise RuntimeError("rill.asyncs.thread(): this Thread was closed; create a new rill.asyncs.Thread()")
    outer = _C._asyncs_current()
    _C._asyncs_set(t.id)
    try:
        yield t
    finally:
        _C._asyncs_set(outer)
