"""DistributedDataParallel: data parallelism over a rill.distributed process group, as torch's DDP.

Note [Gradients reduced during backward]
At construction the parameters and buffers are broadcast from the group's first rank, so every replica
starts equal. The parameters that require grad are then split into buckets of about bucket_cap_mb, in
reverse registration order (roughly the order backward produces their gradients) and one dtype per bucket.
Each parameter gets a post-accumulate-grad hook: when the last gradient of a bucket has been added to its
.grad, the bucket is flattened into one tensor and all-reduced with ReduceOp.AVG, and the averages are copied
back into the .grad tensors. These are ops like any other, queued on the VM, and the all-reduce runs on the
comm stream (Note [The comm stream] in src/rill/comm/collectives.cpp), so the hook returns at once and
backward goes on computing the earlier layers' gradients while the later layers' buckets are on the wire;
the optimizer's reads of .grad wait for the copies, through the VM's dependences. Buckets are launched in
bucket order on every rank (a bucket that is ready waits for the ones before it), which keeps the ranks'
collectives in one order.

A parameter that gets no gradient in an iteration would leave its bucket incomplete: with
find_unused_parameters=True the forward pass walks the autograd graph from the outputs and counts the
parameters it does not reach as ready (their share of the bucket is zeros); without it, the next forward
raises, as PyTorch does. Inside no_sync() the hooks do nothing, so gradients accumulate locally; the first
backward after it reduces the accumulated sums.
"""
import contextlib
import weakref

import rill
import rill.distributed as dist
from rill.nn.modules.module import Module


def _leaves_reached(outputs):
    """The leaf tensors (by id) whose AccumulateGrad the autograd graph of outputs reaches."""
    seen, found = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.name() == "AccumulateGrad":
            found.add(node.variable._impl_id)
            continue
        stack.extend(fn for fn, _ in node.next_functions if fn is not None)
    return found


def _tensors_in(obj):
    if isinstance(obj, rill.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors_in(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors_in(o)]
    return []


class _Bucket:
    def __init__(self, params):
        self.params = params
        self.ready = 0


class DistributedDataParallel(Module):
    """Wraps module: forward runs it; backward averages the gradients over the process group (Note
    [Gradients reduced during backward]). Every rank must build the same module."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("[DistributedDataParallel] Default process group has not been initialized, please "
                               "make sure to call init_process_group.")
        if device_ids not in (None, [], ["cpu"]) or output_device not in (None, "cpu"):
            raise ValueError("[DistributedDataParallel] device_ids and output_device are for GPU modules; rill's "
                             "DDP replicates CPU modules, so leave them None")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.require_backward_grad_sync = True
        self._world = dist.get_world_size(process_group)
        self._root = dist.get_process_group_ranks(process_group)[0] if process_group is not None else 0
        self._sync_module_states()
        params = [p for p in module.parameters() if p.requires_grad]
        self._buckets = self._make_buckets(params)
        self._next_bucket = 0
        self._expect_reduction = False
        # The hooks hold the DDP weakly: the parameters' C++ hook lists would otherwise close a reference cycle
        # Python's collector cannot see.
        me = weakref.ref(self)

        def ready(b):
            def hook(_):
                ddp = me()
                if ddp is not None:
                    ddp._grad_ready(b)
            return hook

        self._hooks = [p.register_post_accumulate_grad_hook(ready(b))
                       for b, bucket in enumerate(self._buckets) for p in bucket.params]

    # --- construction ---------------------------------------------------------------------------------------

    def _sync_module_states(self):
        with rill.no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(t.detach(), src=self._root, group=self.process_group)

    def _make_buckets(self, params):
        cap = self.bucket_cap_mb * 1024 * 1024
        buckets, current, size, dtype = [], [], 0, None
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            if current and (size + nbytes > cap or p.dtype != dtype):
                buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(p)
            size += nbytes
            dtype = p.dtype
        if current:
            buckets.append(_Bucket(current))
        return buckets

    # --- forward and the hooks ------------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        if self._expect_reduction and self.require_backward_grad_sync:
            # Some gradients arrived (a backward ran) but not all buckets were reduced.
            started = any(bucket.ready for bucket in self._buckets)
            unfinished = [b for b in range(self._next_bucket, len(self._buckets))]
            if started and unfinished:
                names = {id(p): n for n, p in self.module.named_parameters()}
                missing = [names.get(id(p), "?") for b in unfinished for p in self._buckets[b].params]
                raise RuntimeError(
                    "Expected to have finished reduction in the prior iteration before starting a new one. This "
                    "error indicates that your module has parameters that were not used in producing loss. You can "
                    "enable unused parameter detection by passing the keyword argument "
                    "`find_unused_parameters=True` to `rill.nn.parallel.DistributedDataParallel`, or make sure all "
                    f"forward outputs take part in the loss. Parameters that got no gradient: {missing}")
        if self.broadcast_buffers and self.require_backward_grad_sync:
            with rill.no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b.detach(), src=self._root, group=self.process_group)
        for bucket in self._buckets:
            bucket.ready = 0
        self._next_bucket = 0
        out = self.module(*inputs, **kwargs)
        self._expect_reduction = rill.is_grad_enabled() and bool(self._buckets) and self.require_backward_grad_sync
        if self._expect_reduction and self.find_unused_parameters:
            reached = _leaves_reached(_tensors_in(out))
            for b, bucket in enumerate(self._buckets):
                for p in bucket.params:
                    if p._impl_id not in reached:
                        self._mark_ready(b)
        return out

    def _grad_ready(self, b):
        if self.require_backward_grad_sync and self._expect_reduction:
            self._mark_ready(b)

    def _mark_ready(self, b):
        self._buckets[b].ready += 1
        while self._next_bucket < len(self._buckets):
            b = self._buckets[self._next_bucket]
            if b.ready < len(b.params):
                break
            self._reduce(b)
            self._next_bucket += 1

    def _reduce(self, bucket):
        with rill.no_grad():
            grads = [p.grad if p.grad is not None else rill.zeros_like(p) for p in bucket.params]
            flat = rill.cat([g.reshape(-1) for g in grads]) if len(grads) > 1 else grads[0].reshape(-1).clone()
            dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group)
            offset = 0
            for p, g in zip(bucket.params, grads):
                n = g.numel()
                part = flat[offset:offset + n].view(g.shape)
                if p.grad is None:
                    p.grad = part.clone()
                else:
                    p.grad.copy_(part)
                offset += n

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward does not reduce: gradients accumulate on each rank until the first backward after
        the block."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    def join(self, *args, **kwargs):
        raise NotImplementedError("[DistributedDataParallel.join] uneven inputs are not supported; give every rank "
                                  "the same number of batches (DistributedSampler does)")
