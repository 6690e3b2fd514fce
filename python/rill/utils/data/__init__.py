"""rill.utils.data: datasets, samplers, collation and DataLoader (with forked workers), as torch.utils.data."""
from rill.utils.data._collate import default_collate, default_convert  # noqa: F401
from rill.utils.data.dataloader import DataLoader, get_worker_info  # noqa: F401
from rill.utils.data.dataset import (  # noqa: F401
    ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split,
)
from rill.utils.data.sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
)
from rill.utils.data.distributed import DistributedSampler  # noqa: F401
