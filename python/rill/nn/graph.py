"""rill.nn.Graph: a whole step (forward, backward, optimizer) traced once into a job, compiled to a plan and run by
an actor runtime on every later call (DESIGN.md §6, src/rill/graph/).

    class TrainGraph(rill.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model                      # the same Parameters as eager: no copy
            self.loss_fn = rill.nn.CrossEntropyLoss()
            self.add_optimizer(opt, lr_sch=sched)
        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss

    g = TrainGraph(); loss = g(x, y)                # an eager tensor, returned at once
"""
import contextlib
import gc
import logging
from collections import OrderedDict

import rill
import rill.graph
from rill import _C
from rill import _global
from rill.nn.modules.module import Module

_log = logging.getLogger("rill.nn.Graph")


class GraphConfig:
    """How a graph is compiled: gradient accumulation, and which optional passes run."""

    def __init__(self):
        self._accumulation = 1
        self._ssp = False
        self._disabled = set()
        self._disabled_key = ()  # disabled_passes as a tuple, for each call's plan key

    def enable_pass(self, name, mode=True):
        """Turn an optional pass of the job on (every one is on by default) or off, by name; `optional_passes()`
        lists them. A change compiles a new plan at the next call."""
        known = GraphConfig.optional_passes()
        if name not in known:
            raise ValueError(f"[nn.Graph] no optional pass is named {name!r}; the passes a config can turn off are: "
                             f"{', '.join(known)}")
        (self._disabled.discard if mode else self._disabled.add)(name)
        self._disabled_key = tuple(self.disabled_passes)

    @staticmethod
    def optional_passes():
        """The passes `enable_pass` can turn off, in the order they run."""
        return list(_C._graph_optional_passes())

    @property
    def disabled_passes(self):
        """The optional passes turned off, in the order they run."""
        return [p for p in GraphConfig.optional_passes() if p in self._disabled]

    def set_gradient_accumulation_steps(self, steps):
        """Run forward and backward on `steps` micro-batches (inputs split along dim 0) per call, then one
        optimizer step on the mean gradient."""
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise ValueError(f"[nn.Graph] gradient accumulation steps must be an int >= 1, got {steps!r}")
        self._accumulation = steps

    @property
    def gradient_accumulation_steps(self):
        return self._accumulation

    def enable_ssp(self, mode=True):
        """Stale synchronous pipelining (Note [SSP] in src/rill/graph/passes/ssp.cpp): each of a call's
        `gradient_accumulation_steps` micro-batches becomes a training step of its own (the optimizer and its
        scheduler step after each, on that micro-batch's gradient, and the call returns the mean loss), and
        pipeline stage s of p runs its forward and backward on weights that may lack the last p - s - 1 updates,
        so the stages do not wait for each other's updates. Give each call many micro-batches: the pipeline
        fills and drains once per call. `stats()["ssp"]` reports how stale each step's weights were."""
        self._ssp = bool(mode)

    @property
    def ssp(self):
        return self._ssp


class GraphModule:
    """A module's settings inside an nn.Graph: `self.block.to(rill.nn.graph.GraphModule).set_stage(stage_id,
    placement)` in Graph.__init__ makes block pipeline stage stage_id, on placement (docs/global.md, "Pipelines")."""

    _wraps_module = True

    def __init__(self, module):
        self._module = module

    def set_stage(self, stage_id, placement=None):
        """Run the module's ops, forward and backward, on placement as pipeline stage stage_id (0, 1, ...): its
        parameters and buffers become global tensors there (broadcast from the placement's first rank) unless
        they already are, and the values crossing stages are sent between the stages' ranks."""
        if not isinstance(stage_id, int) or isinstance(stage_id, bool) or stage_id < 0:
            raise ValueError(f"[GraphModule.set_stage] stage_id must be an int >= 0, got {stage_id!r}")
        if not isinstance(placement, rill.placement):
            raise TypeError("[GraphModule.set_stage] give the stage's placement: set_stage(stage_id, "
                            "rill.placement('cpu', ranks=[...]))")
        m = self._module
        for t in list(m.parameters()) + list(m.buffers()):
            if t.is_global and t.placement != placement:
                raise ValueError(f"[GraphModule.set_stage] a tensor of the module is already global on "
                                 f"{t.placement}, not on stage {stage_id}'s {placement}")
        _global.module_to_global(m, placement, (rill.sbp.broadcast,) * len(placement.hierarchy), keep_global=True)
        object.__setattr__(m, "_graph_stage", (stage_id, placement))
        return self

    @property
    def stage_id(self):
        stage = getattr(self._module, "_graph_stage", None)
        return None if stage is None else stage[0]


def _ssp_stats(compiled):
    """stats()["ssp"]: per pipeline stage of this rank, the bound on the staleness of its weights (the updates a
    step's copy may lack), the most any step's copy lacked since the compile, and for each step (micro-batch) of
    the last call the most its copies lacked; and per variable, each step's."""
    _C.synchronize()  # the records are the last launch's
    out = {"bound": {}, "max_staleness": {}, "staleness": {}, "variables": {}}
    for r in compiled.ssp():
        s = r["stage"]
        out["bound"][s] = r["bound"]
        out["max_staleness"][s] = max(out["max_staleness"].get(s, 0), r["max_staleness"])
        last = out["staleness"].setdefault(s, [0] * len(r["staleness"]))
        out["staleness"][s] = [max(a, b) for a, b in zip(last, r["staleness"])]
        out["variables"][r["variable"]] = r["staleness"]
    return out


class _OptimizerSlot:
    """An optimizer of the graph and how its lr reaches the plan (Note [Schedules inside a graph] in
    rill/optim/lr_scheduler.py): from an epoch variable the graph steps itself (scheduler with a closed form),
    or from lr tensors the host fills from param_groups before each call."""

    def __init__(self, optimizer, scheduler):
        from rill.optim import lr_scheduler
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.graph_lr = lr_scheduler.graph_lr_fn(scheduler) if scheduler is not None else None
        self.lrs = [rill.tensor(float(g["lr"]), dtype=rill.float64) for g in optimizer.param_groups]
        self.filled = [float(g["lr"]) for g in optimizer.param_groups]  # what each lr tensor holds
        self.epoch = None  # 0-d float64 variable: the epoch whose lr the next call uses
        if self.graph_lr is not None:
            self.epoch = rill.tensor(float(scheduler.last_epoch), dtype=rill.float64)
            self.graph_epoch = scheduler.last_epoch  # what the variable holds once the calls so far have run
        elif scheduler is not None and type(scheduler) not in _host_logged:
            _host_logged.add(type(scheduler))
            _log.info("[nn.Graph] %s has no closed form the graph can compute: it steps on the host after each "
                      "call, and each call reads the lr it set", type(scheduler).__name__)

    def key(self):
        """What the traced schedule bakes in (a plan per value)."""
        return self.scheduler._graph_key() if self.graph_lr is not None else None

    def before_call(self):
        if self.graph_lr is None:  # a fill only when the lr changed: each is an op the launch waits for
            for k, (group, lr) in enumerate(zip(self.optimizer.param_groups, self.lrs)):
                value = float(group["lr"])
                if value != self.filled[k]:
                    lr.fill_(value)
                    self.filled[k] = value
        elif self.scheduler.last_epoch != self.graph_epoch:  # stepped outside the graph, or loaded
            self.epoch.fill_(float(self.scheduler.last_epoch))
            self.graph_epoch = self.scheduler.last_epoch

    def after_call(self, steps):
        """The call ran `steps` optimizer steps (one, or one per micro-batch under SSP)."""
        for _ in range(steps if self.scheduler is not None else 0):
            self.scheduler.step()  # the host object's state follows the graph's
        if self.graph_lr is not None:
            self.graph_epoch += steps

    def trace_step(self):
        """Trace the update (and the schedule's step) of this optimizer into the job's optimizer scope."""
        from rill.optim import _fused
        if self.graph_lr is None:
            _fused.fused_step(self.optimizer, self.lrs)
            return
        _fused.fused_step(self.optimizer, self.graph_lr(self.epoch))
        with rill.no_grad():
            self.epoch.copy_(self.epoch + 1)


_host_logged = set()  # scheduler classes already logged as stepping on the host


class _StageHooks:
    """While tracing: each staged module's forward runs with the thread's trace stage set to its stage."""

    def __init__(self, modules):
        self.modules = modules
        self.handles = []

    def __enter__(self):
        for m in self.modules:
            stage = m._graph_stage[0] + 1
            saved = []

            def enter(module, args, stage=stage, saved=saved):
                saved.append(_C._set_trace_stage(stage))

            def leave(module, args, output, saved=saved):
                _C._set_trace_stage(saved.pop())

            self.handles.append(m.register_forward_pre_hook(enter))
            self.handles.append(m.register_forward_hook(leave))
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        _C._set_trace_stage(0)
        return False


def _world_size():
    import rill.distributed as dist
    return dist.get_world_size()


class _GlobalOutputs:
    """A global graph's outputs: each call's local outputs (those on this rank) made global tensors of their
    placements, with the SBP the sbp pass gave each (a partial sum is reduced first: an output is split or
    broadcast); an output on other ranks only is a global tensor whose local tensor here is empty."""

    def __init__(self, outputs, bound, traced_shapes):
        self.outputs = outputs  # per output: ((ranks, group, mesh, dim_groups), sbp)
        self.bound = bound      # the traced indices of this rank's outputs, in the launch's order
        self.shapes = traced_shapes

    @staticmethod
    def of(compiled, traced_shapes):
        outputs = compiled.global_outputs()
        return None if outputs is None else _GlobalOutputs(*outputs, traced_shapes)

    def wrap(self, local_outputs):
        mine = dict(zip(self.bound, local_outputs))
        out = []
        for i, ((ranks, group, mesh, dim_groups), sbp) in enumerate(self.outputs):
            local = mine.get(i)
            if local is None:
                local = rill.empty(0, dtype=self.shapes[i][1])
            ranks = ranks or list(range(_world_size()))  # on every rank
            out.append(_C._make_global(local, list(self.shapes[i][0]), ranks, group, sbp, mesh, dim_groups))
        return out


def _flatten(obj, what):
    """The tensors of a nested tuple/list/dict, and a function that rebuilds the structure from new tensors."""
    if isinstance(obj, rill.Tensor):
        return [obj], lambda ts: ts[0]
    if isinstance(obj, (tuple, list)):
        parts = [_flatten(o, what) for o in obj]
        counts = [len(p[0]) for p in parts]

        def rebuild(ts):
            out, i = [], 0
            for (_, f), n in zip(parts, counts):
                out.append(f(ts[i:i + n]))
                i += n
            return type(obj)(out)
        return [t for p in parts for t in p[0]], rebuild
    if isinstance(obj, dict):
        keys = list(obj)
        tensors, rebuild_values = _flatten([obj[k] for k in keys], what)
        return tensors, lambda ts: dict(zip(keys, rebuild_values(ts)))
    if obj is None:
        return [], lambda ts: None
    raise TypeError(f"[nn.Graph] {what} must be tensors (or tuples, lists and dicts of them), got "
                    f"{type(obj).__name__}")


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic GC off while a graph traces and compiles: it would rescan the trace's thousands of new tensors
    again and again (a 48-block model then compiles in superlinear time); nothing made while tracing is garbage in
    a cycle worth collecting."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class Graph:
    """Subclass it, assign the modules it uses, define build(), and call it like the eager step it replaces."""

    def __init__(self):
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_module_list", None)
        self.config = GraphConfig()
        self._optimizers = []   # _OptimizerSlot per add_optimizer
        self._plans = {}        # input signature -> _CompiledGraph
        self._compiles = 0
        self._last = None
        self._last_info = None  # how the latest plan was compiled (rill.graph.compile_job)

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
            object.__setattr__(self, "_module_list", None)
        object.__setattr__(self, name, value)

    def build(self, *args):
        """The step to compile: override it."""
        raise NotImplementedError(f"[nn.Graph] {type(self).__name__} must define build(self, ...)")

    def add_optimizer(self, optimizer, *, lr_sch=None):
        """Run optimizer's update as part of the graph, and lr_sch's step: inside the graph for the schedulers
        with a closed form (StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR, ConstantLR,
        PolynomialLR and chains of the multiplicative ones), on the host after each call for the others."""
        from rill.optim import _fused, lr_scheduler
        _fused.check_supported(optimizer)
        if lr_sch is not None:
            lr_scheduler.check_graph_schedule(lr_sch)
        self._optimizers.append(_OptimizerSlot(optimizer, lr_sch))

    # --- calling ---------------------------------------------------------------------------------------------
    def _signature(self, tensors, args, infos):
        shapes = tuple((t.shape, t.dtype, info and (tuple(info[0]), info[2], tuple(info[4])))
                       for t, info in zip(tensors, infos))
        if self._module_list is None:  # every module under the graph's, once (train()/eval() flip their flags)
            object.__setattr__(self, "_module_list", [m for root in self._modules.values() for m in root.modules()])
        modes = tuple(m.training for m in self._module_list)
        schedules = tuple(slot.key() for slot in self._optimizers)
        return (shapes, modes, self.config.gradient_accumulation_steps, self.config._disabled_key, len(args),
                schedules, self.config.ssp)

    def __call__(self, *args):
        if all(isinstance(a, rill.Tensor) for a in args):  # the common call, without _flatten's rebuild closures
            tensors = list(args)
        else:
            tensors, _ = _flatten(list(args), "graph inputs")
        infos = [_C._global_info(t) for t in tensors]  # (ranks, group, sbp, local, ...) of a global input
        tensors = [t if info else t.contiguous() for t, info in zip(tensors, infos)]
        key = self._signature(tensors, args, infos)
        compiled = self._plans.get(key)
        if compiled is None:
            reason = "first call" if not self._plans else f"new input signature {key[0]}, modes or configuration"
            _log.info("[nn.Graph] compiling %s: %s", type(self).__name__, reason)
            compiled, rebuild, shapes, info = self._compile(args, tensors)
            self._plans[key] = (compiled, rebuild, _GlobalOutputs.of(compiled, shapes), info)
        for slot in self._optimizers:
            slot.before_call()
        compiled, rebuild, global_outputs, info = self._plans[key]
        if global_outputs is not None:
            tensors = [info[3] if info else t for t, info in zip(tensors, infos)]
        outputs = compiled.launch(tensors)
        if global_outputs is not None:
            outputs = global_outputs.wrap(outputs)
        steps = self.config.gradient_accumulation_steps if self.config.ssp else 1
        for slot in self._optimizers:
            slot.after_call(steps)
        self._last = compiled
        self._last_info = info
        return rebuild(outputs)

    def _named_state(self):
        """(tensor, name) for every parameter, buffer and optimizer state tensor the graph may bind."""
        for prefix, module in self._modules.items():
            for name, p in module.named_parameters():
                yield p, f"{prefix}.{name}"
            for name, b in module.named_buffers():
                yield b, f"{prefix}.{name}"
        for i, slot in enumerate(self._optimizers):
            for j, lr in enumerate(slot.lrs):
                yield lr, f"optimizer{i}.group{j}.lr"
            if slot.epoch is not None:
                yield slot.epoch, f"optimizer{i}.lr_scheduler.epoch"
            for k, (p, state) in enumerate(slot.optimizer.state.items()):
                for key, value in state.items():
                    if isinstance(value, rill.Tensor):
                        yield value, f"optimizer{i}.param{k}.{key}"

    def _compile(self, args, tensors):
        with _gc_paused():
            return self._trace_and_compile(args, tensors)

    def _trace_and_compile(self, args, tensors):
        tracer, job, rebuild, shapes = self._trace(args, tensors)
        part, info = rill.graph.compile_job(job)  # here, or over the ranks (rill/graph/__init__.py)
        compiled = tracer.load(part)
        self._compiles += 1
        return compiled, rebuild, shapes, info

    def _check_ssp(self, pieces):
        if not self._optimizers or pieces < 2:
            raise ValueError(f"[nn.Graph] SSP runs each micro-batch of a call as a training step of its own: give "
                             f"{type(self).__name__} an optimizer (add_optimizer) and several micro-batches per call "
                             f"(config.set_gradient_accumulation_steps(m), m > 1; it is {pieces})")
        for slot in self._optimizers:
            if slot.scheduler is not None and slot.graph_lr is None:
                raise ValueError(f"[nn.Graph] under SSP the lr scheduler steps inside the graph, after each "
                                 f"micro-batch, and {type(slot.scheduler).__name__} has no closed form the graph can "
                                 f"compute; use one that has (add_optimizer's doc lists them) or turn SSP off")

    def _traced_job(self, *args):
        """Trace build on args into the job nn.Graph would compile (an _C._GraphJob), without compiling it: what
        rill.graph.compile_bench compiles for the ranks of a simulated world."""
        tensors, _ = _flatten(list(args), "graph inputs")
        tensors = [t if t.is_global else t.contiguous() for t in tensors]
        with _gc_paused():
            return self._trace(args, tensors)[1]

    def _trace(self, args, tensors):
        """Trace build on tensors (args' tensors): (tracer, the finished job, rebuild, the results' shapes)."""
        # Inputs are bound by identity: the contiguous copies stand for the user's tensors inside build.
        _, rebuild_args = _flatten(list(args), "graph inputs")
        pieces = self.config.gradient_accumulation_steps
        if self.config.ssp:
            self._check_ssp(pieces)
        if pieces > 1:
            # build() is traced on one micro-batch: the job's shapes are a piece's, the plan splits each input.
            for i, t in enumerate(tensors):
                if t.ndim == 0 or t.shape[0] % pieces:
                    raise ValueError(f"[nn.Graph] input {i} of shape {tuple(t.shape)} cannot be split into "
                                     f"gradient_accumulation_steps = {pieces} micro-batches along dim 0; make the "
                                     f"batch size a multiple of {pieces}")
            tensors = [_global.micro_batch(t, pieces) if t.is_global else t[:t.shape[0] // pieces].clone()
                       for t in tensors]
        traced_args = rebuild_args(tensors)
        from rill.optim import _fused
        for slot in self._optimizers:
            _fused.prepare_state(slot.optimizer)
        tracer = _C._GraphTracer(type(self).__name__)
        for t, name in self._named_state():
            tracer.name_variable(t, name)
        staged = self._stages(tracer)
        params = [p for slot in self._optimizers for g in slot.optimizer.param_groups for p in g["params"]]
        params += [p for m in self._modules.values() for p in m.parameters()]
        saved = {id(p): (p, p.grad) for p in params}
        for p, _ in saved.values():
            p.grad = None  # the trace's gradients are blobs of the job, not eager tensors
        for t in tensors:
            tracer.add_input(t, pieces)
        from rill._generator import core_random_ops
        random_ops = core_random_ops()
        random_ops.__enter__()  # the trace's random ops are the core's (Note in rill/_generator.py)
        try:
            tracer.start()
            with staged:
                result = self.build(*traced_args)
            if self._optimizers:
                tracer.set_scope("optimizer")
                for slot in self._optimizers:
                    slot.trace_step()
            outs, rebuild = _flatten(result, "build()'s results")
            for t in outs:
                tracer.add_output(t)
            shapes = [(tuple(t.shape), t.dtype) for t in outs]
            train = bool(self._optimizers)
            job = tracer.finish_compile(train=train,
                                        gradient_accumulation_steps=self.config.gradient_accumulation_steps,
                                        disabled_passes=self.config.disabled_passes, ssp=self.config.ssp)
        finally:
            random_ops.__exit__(None, None, None)
            tracer.stop()
            for p, grad in saved.values():
                p.grad = grad
        return tracer, job, rebuild, shapes

    def _stages(self, tracer):
        """The pipeline stages of the graph's modules (GraphModule.set_stage): their placements told to the
        tracer, and a context that tags the ops each staged module traces with its stage (Note [Stages of a trace]
        in src/rill/eager/trace.h)."""
        modules = [m for root in self._modules.values() for m in root.modules() if hasattr(m, "_graph_stage")]
        for m in modules:
            stage_id, placement = m._graph_stage
            tracer.set_stage_placement(stage_id, *_global._placement_args(placement))
        return _StageHooks(modules)

    # --- tools -----------------------------------------------------------------------------------------------
    @staticmethod
    def write_trace():
        """Wait for the graph calls issued so far and write the actors' events of every graph in the process to
        the file RILL_GRAPH_TRACE names (a Chrome trace; the process's exit writes it too). Returns the number of
        events written: 0 when RILL_GRAPH_TRACE was unset when the graphs compiled."""
        rill.synchronize()
        return _C._graph_trace_write()

    def stats(self):
        """Counters of the latest compiled plan: compiles, job_ops, infer_computed, infer_cache_hits, compile_s,
        plan_tasks, planned_peak_bytes (the plan's one chunk, dead buffers reused), memory_lower_bound_bytes (the
        most bytes live at once in the plan's order: no placement needs less), fused_kernels (the elementwise
        chains fuse_elementwise made one op each), fused_ops (the ops inside them), launches; and how the plan was
        compiled (rill.graph): compile_mode ("local", or over the ranks "naive" or "separate"), compile_cpu_s (this
        rank's CPU seconds spent compiling), plan_bytes (its plan, serialized), master_bytes_sent (on rank 0, what
        it sent the other ranks); under SSP (config.enable_ssp), ssp: how stale each stage's weights were."""
        out = {"compiles": self._compiles, "fused_kernels": 0, "fused_ops": 0}
        if self._last is not None:
            out.update(self._last.stats())
            out.update(self._last_info)
            if self.config.ssp:
                out["ssp"] = _ssp_stats(self._last)
        return out

    def plan(self):
        """This rank's latest compiled plan as Python data: rank, pieces, and tasks (id, kind, name, op, in_regsts,
        out_regsts), regsts (id, kind, lbn, producer, consumers, count, desc, mem_block_id, mem_offset,
        alias_of), mem_blocks (id, chunk_id, offset, size) and chunks (id, size), with their ids (Note [Separate
        compilation] in src/rill/graph/separate.cpp)."""
        self._check_compiled()
        return self._last.plan_dict()

    def job(self):
        """The latest compiled job as Python data (ops with their types, attrs, blobs and descs)."""
        self._check_compiled()
        return self._last.job_dict()

    def job_bytes(self):
        """The latest compiled job, serialized (protobuf, src/rill/graph/job.proto)."""
        self._check_compiled()
        return self._last.job_bytes()

    def plan_str(self):
        self._check_compiled()
        return self._last.plan_str()

    def _check_compiled(self):
        if self._last is None:
            raise RuntimeError(f"[nn.Graph] {type(self).__name__} has not been called yet: it compiles on its first "
                               "call")

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        if self._last is not None:
            lines.append("  job:")
            lines.extend("    " + line for line in self._last.job_str().splitlines())
        lines.append(")")
        return "\n".join(lines)

    def state_dict(self):
        """The modules', optimizers' and schedulers' state (what rill.save writes)."""
        out = OrderedDict()
        for name, m in self._modules.items():
            out[name] = m.state_dict()
        for i, slot in enumerate(self._optimizers):
            out[f"_optimizer{i}"] = slot.optimizer.state_dict()
            if slot.scheduler is not None:
                out[f"_lr_scheduler{i}"] = slot.scheduler.state_dict()
        return out

    def load_state_dict(self, state):
        for name, m in self._modules.items():
            m.load_state_dict(state[name])
        for i, slot in enumerate(self._optimizers):
            slot.optimizer.load_state_dict(state[f"_optimizer{i}"])
            if slot.scheduler is not None and f"_lr_scheduler{i}" in state:
                slot.scheduler.load_state_dict(state[f"_lr_scheduler{i}"])
        self._plans.clear()  # the plans bound the old state tensors
