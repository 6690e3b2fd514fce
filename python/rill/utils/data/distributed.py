"""DistributedSampler: each of num_replicas processes reads its own share of a dataset, as in PyTorch."""
import math

import numpy as np

from rill.utils.data.sampler import Sampler


class DistributedSampler(Sampler):
    """Yields the indices of replica `rank` out of `num_replicas`: every num_replicas-th index of one order of
    the dataset, starting at rank. shuffle=True draws that order from seed + epoch (call set_epoch each epoch,
    on every rank, so all ranks agree on it and it changes between epochs). The order is padded by repeating
    its start so every rank gets the same count, unless drop_last=True, which drops the tail instead."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            import rill.distributed as dist
            if not dist.is_initialized():
                raise RuntimeError("[DistributedSampler] pass num_replicas and rank, or call "
                                   "rill.distributed.init_process_group() first to take them from the process group")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"[DistributedSampler] num_replicas must be a positive int, got {num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"[DistributedSampler] invalid rank {rank!r}, rank should be in [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = n // num_replicas
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            pad = self.total_size - len(indices)
            while pad > 0:
                take = indices[:pad]
                indices += take
                pad -= len(take)
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use epoch in the shuffle seed, so each epoch has its own order (the same on every rank)."""
        self.epoch = epoch
