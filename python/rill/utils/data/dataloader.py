"""DataLoader: batches from a dataset, in this process or in forked worker processes.

Workers are forked (rill's VM is fork-safe: a child starts a fresh VM at its first op). Each worker gets
batches of indices on its own queue, fetches and collates the samples, and sends the batch back through a
shared result queue (tensors pickle through numpy, rill/_tensor_extras.py); the main process hands batches
out in sampler order. A worker's exception is re-raised in the main process with the worker's traceback.
"""
import itertools
import multiprocessing
import queue
import random
import traceback

import numpy as np

import rill
from rill._generator import _seed_from_global
from rill.utils.data._collate import default_collate, default_convert
from rill.utils.data.dataset import IterableDataset
from rill.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler

_worker_info = None


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __repr__(self):
        return "WorkerInfo(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k != "dataset") + ")"


def get_worker_info():
    """The WorkerInfo of the current DataLoader worker process, or None in the main process."""
    return _worker_info


class _ExceptionWrapper:
    def __init__(self, exc, where):
        self.exc_type = type(exc)
        self.msg = f"Caught {type(exc).__name__} {where}.\nOriginal {traceback.format_exc()}"

    def reraise(self):
        try:
            err = self.exc_type(self.msg)
        except Exception:  # noqa: BLE001 - an exception type that takes other arguments
            err = RuntimeError(self.msg)
        raise err


class _IterableStop:
    pass


def _fetch_map(dataset, indices, auto_collation, collate_fn):
    if auto_collation:
        getitems = getattr(dataset, "__getitems__", None)
        data = getitems(indices) if callable(getitems) else [dataset[i] for i in indices]
        return collate_fn(data)
    return collate_fn(dataset[indices])


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, batch_size, drop_last):
        self.it = iter(dataset)
        self.auto_collation, self.collate_fn = auto_collation, collate_fn
        self.batch_size, self.drop_last = batch_size, drop_last
        self.ended = False

    def fetch(self):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        data = []
        for _ in range(self.batch_size):
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < self.batch_size):
            raise StopIteration
        return self.collate_fn(data)


def _worker_loop(dataset, index_queue, result_queue, collate_fn, auto_collation, batch_size, drop_last, seed,
                 init_fn, worker_id, num_workers, is_iterable):
    global _worker_info
    try:
        random.seed(seed)
        rill.manual_seed(seed)
        np.random.seed(seed % (2 ** 32))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _IterableFetcher(dataset, auto_collation, collate_fn, batch_size, drop_last) \
                if is_iterable else None
        except Exception as e:  # noqa: BLE001
            init_error = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
        while True:
            task = index_queue.get()
            if task is None:
                break
            idx, indices = task
            if init_error is not None:
                result_queue.put((idx, init_error))
                init_error = None
                continue
            try:
                if is_iterable:
                    try:
                        data = fetcher.fetch()
                    except StopIteration:
                        data = _IterableStop()
                else:
                    data = _fetch_map(dataset, indices, auto_collation, collate_fn)
            except Exception as e:  # noqa: BLE001 - sent to the main process
                data = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
            result_queue.put((idx, data))
    except KeyboardInterrupt:
        pass
    finally:
        result_queue.close()
        result_queue.join_thread()


class _SingleProcessIter:
    def __init__(self, loader):
        self.loader = loader
        # drawn (and unused here) as PyTorch's iterators do, so the draws after it match PyTorch's
        self.base_seed = _seed_from_global(loader.generator)
        self.is_iterable = isinstance(loader.dataset, IterableDataset)
        if self.is_iterable:
            self.fetcher = _IterableFetcher(loader.dataset, loader._auto_collation, loader.collate_fn,
                                            loader.batch_size, loader.drop_last)
        else:
            self.sampler_iter = iter(loader._index_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        if self.is_iterable:
            return self.fetcher.fetch()
        indices = next(self.sampler_iter)
        return _fetch_map(self.loader.dataset, indices, self.loader._auto_collation, self.loader.collate_fn)

    def __len__(self):
        return len(self.loader)


class _MultiProcessIter:
    _POLL_S = 1.0

    def __init__(self, loader):
        self.loader = loader
        self.is_iterable = isinstance(loader.dataset, IterableDataset)
        self.num_workers = loader.num_workers
        self.timeout = loader.timeout
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context("fork")
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        base_seed = _seed_from_global(loader.generator)
        self.result_queue = ctx.Queue()
        self.index_queues, self.workers = [], []
        for wid in range(self.num_workers):
            iq = ctx.Queue()
            w = ctx.Process(target=_worker_loop,
                            args=(loader.dataset, iq, self.result_queue, loader.collate_fn, loader._auto_collation,
                                  loader.batch_size, loader.drop_last, base_seed + wid, loader.worker_init_fn, wid,
                                  self.num_workers, self.is_iterable),
                            daemon=True)
            w.start()
            self.index_queues.append(iq)
            self.workers.append(w)
        self.worker_active = [True] * self.num_workers
        self.sampler_iter = None if self.is_iterable else iter(loader._index_sampler)
        self.send_idx = 0
        self.rcvd_idx = 0
        self.task_info = {}  # idx -> (worker id,) while pending, (worker id, data) once received
        self.worker_cycle = itertools.cycle(range(self.num_workers))
        self.shutdown = False
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def _try_put_index(self):
        if self.is_iterable:
            indices = None
        else:
            try:
                indices = next(self.sampler_iter)
            except StopIteration:
                return
        for _ in range(self.num_workers):
            wid = next(self.worker_cycle)
            if self.worker_active[wid]:
                break
        else:
            return
        self.index_queues[wid].put((self.send_idx, indices))
        self.task_info[self.send_idx] = (wid,)
        self.send_idx += 1

    def _get_data(self):
        waited = 0.0
        while True:
            try:
                return self.result_queue.get(timeout=self._POLL_S)
            except queue.Empty:
                waited += self._POLL_S
                dead = [w for w in self.workers if not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
                if self.timeout and waited >= self.timeout:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") from None

    def __next__(self):
        while True:
            # step over tasks that will yield nothing: answered "exhausted", or pending on a retired worker
            while self.rcvd_idx < self.send_idx:
                info = self.task_info.get(self.rcvd_idx)
                if info is None or (len(info) == 1 and not self.worker_active[info[0]]) or \
                        (len(info) == 2 and isinstance(info[1], _IterableStop)):
                    self.task_info.pop(self.rcvd_idx, None)
                    self.rcvd_idx += 1
                    continue
                break
            else:
                self._shutdown_workers()
                raise StopIteration
            info = self.task_info[self.rcvd_idx]
            if len(info) == 2:
                del self.task_info[self.rcvd_idx]
                self.rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get_data()
            if idx not in self.task_info:  # the answer to a task already stepped over
                continue
            wid = self.task_info[idx][0]
            if isinstance(data, _IterableStop):  # that worker's dataset copy is exhausted: retire it
                if self.worker_active[wid]:
                    self.worker_active[wid] = False
                    self.index_queues[wid].put(None)
                self.task_info[idx] = (wid, data)
                self._try_put_index()  # keep the other workers busy
                continue
            if idx != self.rcvd_idx:
                self.task_info[idx] = (wid, data)
                continue
            del self.task_info[idx]
            self.rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return data

    def _shutdown_workers(self):
        if self.shutdown:
            return
        self.shutdown = True
        for wid, q in enumerate(self.index_queues):
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self.workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.terminate()
        for q in self.index_queues:
            q.cancel_join_thread()
            q.close()
        self.result_queue.cancel_join_thread()
        self.result_queue.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class DataLoader:
    """Iterates over batches of dataset: DataLoader(dataset, batch_size=1, shuffle=False, sampler=None,
    batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
    worker_init_fn=None, multiprocessing_context=None, generator=None, prefetch_factor=None,
    persistent_workers=False). pin_memory is accepted and does nothing (CPU only)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.generator = generator

        if isinstance(dataset, IterableDataset):
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None and not isinstance(dataset, IterableDataset):
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (isinstance(self.dataset, IterableDataset)
                                                  and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError when the dataset has no len, as in PyTorch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

