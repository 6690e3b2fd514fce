"""Features of OneFlow's runtime that PyTorch has no name for.

``delay_tick(x, delay_num)``: ``x`` itself, given out ``delay_num`` micro-batches late in graph mode. Inside an
``nn.Graph`` whose config splits the batch into micro-batches (``set_gradient_accumulation_steps(m)``), what reads
the result runs for micro-batch ``i`` only once micro-batch ``i + delay_num`` of ``x`` has been made, or once all
``m`` have (the end of the data releases what it holds). Its gradient is the gradient itself. In eager mode, with
no micro-batches to wait for, it returns a view of ``x``. Note [The delay tick] in src/rill/runtime/actor.cpp.

``sleep(x, seconds)``: a copy of ``x`` made after sleeping ``seconds``, whose gradient sleeps as long: a kernel of
a fixed duration, for measuring a pipeline's schedule without the cores confounding it (bench/pipeline.py).
"""
from rill import _C

__all__ = ["delay_tick", "sleep"]


def delay_tick(x, delay_num):
    """``x``, given out ``delay_num`` micro-batches late in graph mode (a view of ``x`` in eager mode)."""
    return _C._delay_tick(x, delay_num)


def sleep(x, seconds):
    """A copy of ``x``, made after sleeping ``seconds`` (in [0, 60]); its gradient sleeps as long."""
    return _C._sleep(x, float(seconds))
