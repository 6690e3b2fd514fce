"""Features of OneFlow's runtime that PyTorch has no name for.

``delay_tick(x, delay_num)``: ``x`` itself, given out ``delay_num`` micro-batches late in graph mode. Inside an
``nn.Graph`` whose config splits the batch into micro-batches (``set_gradient_accumulation_steps(m)``), what reads
the result runs for micro-batch ``i`` only once micro-batch ``i + delay_num`` of ``x`` has been made, or once all
``m`` have (the end of the data releases what it holds). Its gradient is the gradient itself. In eager mode, with
no micro-batches to wait for, it returns a view of ``x``. Note [The delay tick] in src/rill/runtime/actor.cpp.
"""
from rill import _C

__all__ = ["delay_tick"]


def delay_tick(x, delay_num):
    """``x``, given out ``delay_num`` micro-batches late in graph mode (a view of ``x`` in eager mode)."""
    return _C._delay_tick(x, delay_num)
