"""rill.nn.parallel: DistributedDataParallel over rill.distributed."""
from rill.nn.parallel.distributed import DistributedDataParallel  # noqa: F401
