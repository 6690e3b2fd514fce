"""odb: gdb commands for walking through rill's runtime (docs/architecture.md §7, docs/odb.md).

Load it from the repository root, in gdb:

    (gdb) source tools/odb/odb.py

or on the command line:

    RILL_VM_COMPUTE_ON_WORKER_THREAD=0 RILL_VM_THREAD_MIN_ONLINE_MICROSECONDS=0 \\
        gdb -x tools/odb/odb.py --args "$(python3 -c 'import sys; print(sys.executable)')" script.py

Commands (`help odb-vm` and so on for details):
    odb-b-all, odb-b-client, odb-b-scheduler, odb-b-worker
                      break on the VM anchors of a thread kind (Note [odb anchors] in
                      src/rill/vm/trace.h); each stop shows the frame that called the anchor
    odb-clear         delete odb's anchor breakpoints
    odb-vm [LIMIT]    the VM's threads and streams with their queued, ready and running
                      instructions
    odb-tensor EXPR   dtype, shape, strides, storage and pending accesses of a tensor
and pretty printers for rill's Shape/Strides, DType, Device, TensorMeta, Symbol<T>, Tensor.
A breakpoint on rill_odb_breakpoint is always set: `rill.odb.breakpoint(t)` in Python stops
there, with `$odb_tensor` pointing at t. At an anchor stop, `$odb_instruction` is the instruction
(`print *$odb_instruction`, `odb-tensor $odb_instruction->outputs[0]`).

Breaking on the anchors needs only their names (they are exported even from a stripped
build). odb-vm, odb-tensor and the printers read rill's types, so they need debug info:
the default build keeps it for the VM and core (CMake option RILL_ODB_DEBUG_INFO=ON), and
a RelWithDebInfo build has it everywhere. The readers know libstdc++'s layouts.
"""
import gdb

ANCHORS = {
    "client": "rill_odb_anchor_client",
    "scheduler": "rill_odb_anchor_scheduler",
    "worker": "rill_odb_anchor_worker",
}
# rill::vm::Range, in order (src/rill/vm/trace.h).
RANGES = ["submit", "sync-read", "read-done", "schedule", "dispatch", "run", "release"]
BREAKPOINT_FUNCTION = "rill_odb_breakpoint"
OBSERVER = "rill::vm::trace::observe"  # the VM's one observer hook, inlined into each caller
SCHEDULER_SYMBOL = "'rill::vm::(anonymous namespace)::g_scheduler'"
DEFAULT_LIMIT = 10


class OdbError(Exception):
    """A message for the user (no traceback)."""


# --- reading libstdc++ and rill values -------------------------------------------------------------------------

def _type(name):
    try:
        return gdb.lookup_type(name)
    except gdb.error:
        raise OdbError(f"odb: gdb knows no type {name}: this rill build has no debug info for it. Build with "
                       "-DRILL_ODB_DEBUG_INFO=ON (the default) or -DCMAKE_BUILD_TYPE=RelWithDebInfo "
                       "(pip: -Ccmake.build-type=RelWithDebInfo)")


def std_string(v):
    return v["_M_dataplus"]["_M_p"].string(length=int(v["_M_string_length"]))


def std_vector(v, start=0, limit=None):
    """Elements [start, start + limit) of a std::vector."""
    first, finish = v["_M_impl"]["_M_start"], v["_M_impl"]["_M_finish"]
    n = int(finish - first) if int(first) else 0
    stop = n if limit is None else min(n, start + limit)
    return [(first + k).dereference() for k in range(start, stop)]


def std_vector_len(v):
    first = v["_M_impl"]["_M_start"]
    return int(v["_M_impl"]["_M_finish"] - first) if int(first) else 0


def _deque_per_node(v):
    elem = v.type.strip_typedefs().template_argument(0)
    return 512 // elem.sizeof if elem.sizeof < 512 else 1  # libstdc++: 512-byte nodes


def std_deque_len(v):
    start, finish = v["_M_impl"]["_M_start"], v["_M_impl"]["_M_finish"]
    if not int(start["_M_cur"]):
        return 0
    nodes = int(finish["_M_node"] - start["_M_node"])
    return ((nodes - 1) * _deque_per_node(v) + int(finish["_M_cur"] - finish["_M_first"])
            + int(start["_M_last"] - start["_M_cur"])) if nodes else int(finish["_M_cur"] - start["_M_cur"])


def std_deque(v, start=0, limit=None):
    """Elements [start, start + limit) of a std::deque."""
    impl = v["_M_impl"]
    first, finish = impl["_M_start"], impl["_M_finish"]
    per_node = _deque_per_node(v)
    cur, last, node = first["_M_cur"], first["_M_last"], first["_M_node"]
    out = []
    if not int(cur):
        return out
    k = 0
    while cur != finish["_M_cur"] and (limit is None or len(out) < limit):
        if k >= start:
            out.append(cur.dereference())
        k += 1
        cur += 1
        if cur == last:
            node += 1
            cur = node.dereference()
            last = cur + per_node
    return out


class Pending:
    """A run of instructions spread over containers: [(elements(start, limit), length, start)], read lazily."""

    def __init__(self, *parts):
        self.parts = parts  # (reader, length, start)

    def __len__(self):
        return sum(max(0, n - start) for _read, n, start in self.parts)

    def first(self, limit):
        out = []
        for read, n, start in self.parts:
            if len(out) >= limit:
                break
            out += read(start, limit - len(out))
        return out


def vector_part(v, start=0):
    return (lambda s, lim: std_vector(v, s, lim), std_vector_len(v), start)


def deque_part(v, start=0):
    return (lambda s, lim: std_deque(v, s, lim), std_deque_len(v), start)


def shared_ptr(v):
    return v["_M_ptr"]


def unique_ptr(v):
    """The pointer inside a std::unique_ptr<T> (with the default deleter: just that pointer)."""
    target = v.type.strip_typedefs().template_argument(0).pointer()
    return v.address.cast(target.pointer()).dereference()


def atomic(v):
    """The value inside a std::atomic<T> (integral, bool or pointer)."""
    for path in (("_M_i",), ("_M_base", "_M_i"), ("_M_b", "_M_p")):
        try:
            x = v
            for f in path:
                x = x[f]
            return x
        except gdb.error:
            continue
    raise OdbError(f"odb: can't read the std::atomic {v.type}")


def ints(v):
    return [int(x) for x in std_vector(v)]


def dims(v):
    return "[" + ", ".join(str(x) for x in ints(v)) + "]"


# rill::DType's enumerators, in order (src/rill/core/dtype.h).
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def enum_name(v):
    """The enumerator's name ('kFloat32'), never through a pretty printer."""
    return v.format_string(raw=True).split("::")[-1]


def dtype_name(v):
    """'float32' for rill::DType::kFloat32."""
    k = int(v)
    return DTYPES[k] if 0 <= k < len(DTYPES) else f"dtype({k})"


def device_str(v):
    kind = enum_name(v["type"])
    index = int(v["index"])
    return "cpu" if kind == "kCPU" else f"cuda:{index}"


def meta_str(meta):
    """'float32[2, 3]' for a rill::TensorMeta."""
    return f"{dtype_name(meta['dtype'])}{dims(meta['shape'])}"


def impl_of(tensor):
    """The rill::TensorImpl* of a rill::Tensor value."""
    return shared_ptr(tensor["impl_"])


def tensor_meta_of_impl(impl):
    return impl["meta_"]["ptr_"].dereference()


def tensor_str(tensor):
    impl = impl_of(tensor)
    if not int(impl):
        return "undefined"
    return meta_str(tensor_meta_of_impl(impl.dereference()))


def instruction_name(ins):
    kind = enum_name(ins["kind"])
    if kind == "kKernel":
        op = ins["op"]
        return std_string(op["name"]) if int(op) else "kernel"
    if kind == "kSync":
        return "sync_all" if bool(ins["sync_all"]) else "sync"
    return "sync_read"


def instruction_str(ptr):
    """'add(float32[3], float32[3]) -> float32[3]  [thread 0, waits on 1]' for a rill::vm::Instruction*."""
    ptr = ptr.cast(_type("rill::vm::Instruction").pointer())
    ins = ptr.dereference()
    args = ", ".join(tensor_str(t) for t in std_vector(ins["inputs"]))
    outs = ", ".join(tensor_str(t) for t in std_vector(ins["outputs"]))
    text = f"{instruction_name(ins)}({args})"
    if outs:
        text += f" -> {outs}"
    notes = [f"thread id {int(ins['stream']['thread_id'])}"]
    pending = int(ins["pending"])
    if pending:
        notes.append(f"waits on {pending}")
    trace_id = int(ins["trace_id"])
    if trace_id:
        notes.append(f"trace id {trace_id}")
    return f"{text}  [{', '.join(notes)}]  (rill::vm::Instruction*){int(ptr):#x}"


# --- pretty printers ---------------------------------------------------------------------------------------------

class _Printer:
    def __init__(self, val, fn):
        self.val, self.fn = val, fn

    def to_string(self):
        try:
            return self.fn(self.val)
        except (gdb.error, gdb.MemoryError, OdbError) as e:
            return f"<unreadable: {e}>"


def _tensor_printer(v):
    impl = impl_of(v)
    return f"rill::Tensor {tensor_str(v)} (impl {int(impl):#x})" if int(impl) else "rill::Tensor undefined"


def _impl_printer(v):
    meta = tensor_meta_of_impl(v)
    return f"rill::TensorImpl {meta_str(meta)} offset {int(v['offset_'])} storage {int(shared_ptr(v['storage_'])):#x}"


def _meta_printer(v):
    return (f"{meta_str(v)} strides {dims(v['strides'])} {device_str(v['device'])}"
            + ("" if bool(v["contiguous"]) else " (non-contiguous)"))


def _symbol_printer(v):
    ptr = v["ptr_"]
    if not int(ptr):
        return "Symbol(null)"
    target = ptr.dereference()
    printer = gdb.default_visualizer(target)
    text = printer.to_string() if printer else str(target)
    return f"Symbol({text})"


def _lookup_printer(val):
    t = val.type
    if t.code == gdb.TYPE_CODE_REF:
        t = t.target()
    t = t.unqualified()
    name = str(t)  # typedef names first: rill::Shape is a std::vector<long>
    if name in ("rill::Shape", "rill::Strides"):
        return _Printer(val, dims)
    base = str(t.strip_typedefs())
    if base == "rill::DType":
        return _Printer(val, dtype_name)
    if base == "rill::Device":
        return _Printer(val, device_str)
    if base == "rill::TensorMeta":
        return _Printer(val, _meta_printer)
    if base == "rill::Tensor":
        return _Printer(val, _tensor_printer)
    if base == "rill::TensorImpl":
        return _Printer(val, _impl_printer)
    if base.startswith("rill::Symbol<"):
        return _Printer(val, _symbol_printer)
    return None


_lookup_printer.rill_odb = True


def _install_printer(objfile):
    if _lookup_printer not in objfile.pretty_printers:
        objfile.pretty_printers.insert(0, _lookup_printer)


def _on_new_objfile(event):
    _install_printer(event.new_objfile)


# --- breakpoints on the anchors --------------------------------------------------------------------------------

def _anchor_args(frame):
    """(range, instruction pointer) from the registers at an anchor's entry (both null when unknown)."""
    arch = frame.architecture().name()
    if "x86-64" in arch:
        regs = ("rdi", "rsi")
    elif "aarch64" in arch:
        regs = ("x0", "x1")
    else:
        return None, 0
    return int(frame.read_register(regs[0])) & 0xFFFFFFFF, int(frame.read_register(regs[1])) & 0xFFFFFFFFFFFFFFFF


def _thread_label():
    th = gdb.selected_thread()
    return f'gdb thread {th.num} "{th.name or "?"}"'


class AnchorBreakpoint(gdb.Breakpoint):
    """A breakpoint on one anchor; its stop prints the range and selects the caller's frame."""

    def __init__(self, kind):
        super().__init__(ANCHORS[kind], type=gdb.BP_BREAKPOINT)
        self.kind = kind
        self.silent = True  # odb prints its own line, then the caller's frame


class PythonBreakpoint(gdb.Breakpoint):
    """The breakpoint on rill_odb_breakpoint (rill.odb.breakpoint() in Python)."""

    def __init__(self):
        super().__init__(BREAKPOINT_FUNCTION, type=gdb.BP_BREAKPOINT)
        self.silent = True


def _odb_breakpoints():
    return [b for b in gdb.breakpoints() if b.location in ANCHORS.values()]


def _anchor_kind(bp):
    for kind, name in ANCHORS.items():
        if bp.location == name:
            return kind
    return None


def _on_anchor_stop(kind):
    frame = gdb.newest_frame()
    rng, instr = _anchor_args(frame)
    what = RANGES[rng] if rng is not None and 0 <= rng < len(RANGES) else "?"
    detail = ""
    if instr:
        try:
            detail = ": " + instruction_str(gdb.Value(instr))
        except (gdb.error, gdb.MemoryError, OdbError):
            detail = f": instruction {instr:#x}"
    print(f"odb: {kind} thread, {_thread_label()}, {what}{detail}")
    if instr:
        try:
            gdb.set_convenience_variable("odb_instruction",
                                         gdb.Value(instr).cast(_type("rill::vm::Instruction").pointer()))
        except OdbError:
            gdb.set_convenience_variable("odb_instruction", gdb.Value(instr))
    # The frame worth reading is the anchor's caller, past the inlined observer hook that calls every anchor
    # (rill::vm::trace::observe in src/rill/vm/trace.h); `finish` or `next` from there continue the range.
    caller, level = frame.older(), 1
    while caller is not None and (caller.name() or "").startswith(OBSERVER):
        caller, level = caller.older(), level + 1
    if caller is None:
        print("odb: no calling frame")
        return
    gdb.execute(f"frame {level}")


def _on_python_breakpoint_stop():
    frame = gdb.newest_frame()
    _rng, arg = _anchor_args(frame)  # first argument: the TensorImpl*, or 0
    arch = frame.architecture().name()
    reg = "rdi" if "x86-64" in arch else "x0"
    arg = int(frame.read_register(reg)) & 0xFFFFFFFFFFFFFFFF
    print(f"odb: stopped by rill.odb.breakpoint(), {_thread_label()}")
    if arg:
        try:
            value = gdb.Value(arg).cast(_type("rill::TensorImpl").pointer())
        except OdbError:
            value = gdb.Value(arg)
        gdb.set_convenience_variable("odb_tensor", value)
        print("odb: $odb_tensor is the tensor passed: odb-tensor $odb_tensor")


def _on_stop(event):
    if not isinstance(event, gdb.BreakpointEvent):
        return
    try:
        for bp in event.breakpoints:
            kind = _anchor_kind(bp)
            if kind:
                _on_anchor_stop(kind)
                return
            if bp.location == BREAKPOINT_FUNCTION:
                _on_python_breakpoint_stop()
                return
    except gdb.error as e:
        print(f"odb: {e}")


class _Command(gdb.Command):
    def __init__(self, name):
        super().__init__(name, gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        try:
            self.run(arg)
        except OdbError as e:
            print(e)


class BreakCommand(_Command):
    def __init__(self, name, kinds):
        self.kinds = kinds
        self.__doc__ = (f"Delete odb's breakpoints, then break on the {' and '.join(kinds)} anchor"
                        f"{'s' if len(kinds) > 1 else ''}; each stop shows the frame that called the anchor.")
        super().__init__(name)

    def run(self, arg):
        for b in _odb_breakpoints():
            b.delete()
        for k in self.kinds:
            bp = AnchorBreakpoint(k)
            print(f"odb: breakpoint {bp.number} on {ANCHORS[k]} ({k} threads)")


class ClearCommand(_Command):
    """Delete odb's anchor breakpoints."""

    def run(self, arg):
        for b in _odb_breakpoints():
            b.delete()


# --- odb-vm ------------------------------------------------------------------------------------------------------

def _scheduler():
    try:
        ptr = atomic(gdb.parse_and_eval(SCHEDULER_SYMBOL))
    except gdb.error:
        _type("rill::vm::Scheduler")  # raises the no-debug-info message
        raise OdbError("odb: can't find the VM (rill::vm::g_scheduler): is rill loaded?")
    return ptr if int(ptr) else None


def _gate_state(gate):
    stop = bool(atomic(gate["stop_"]))
    parked = bool(gate["parked_"])
    if parked:
        return "stopped by rill.odb (parked)"
    if stop:
        return "stop requested by rill.odb"
    return "running"


def _inbox(s):
    """The instructions a rill::vm::Scheduler has not admitted yet, oldest first."""
    return Pending(vector_part(s["taken_inbox_"], int(s["next_admit_"])), vector_part(s["inbox_"]))


def _anchor_stops():
    """{gdb thread number: 'range instruction'} for the threads stopped at an anchor's entry."""
    out = {}
    thread, frame = gdb.selected_thread(), gdb.selected_frame()
    try:
        for th in gdb.selected_inferior().threads():
            th.switch()
            f = gdb.newest_frame()
            if f.name() in ANCHORS.values():
                rng, instr = _anchor_args(f)
                what = RANGES[rng] if rng is not None and 0 <= rng < len(RANGES) else "?"
                out[th.num] = what + (" " + instruction_str(gdb.Value(instr)) if instr else "")
    finally:
        thread.switch()
        frame.select()
    return out


def _threads_by_name():
    out = {}
    for th in gdb.selected_inferior().threads():
        if th.name:
            out.setdefault(th.name, th.num)
    return out


def _print_list(title, pending, limit, indent="    "):
    count = len(pending)
    print(f"{indent}{title}: {count}")
    for p in pending.first(limit):
        try:
            print(f"{indent}  {instruction_str(p)}")
        except (gdb.error, gdb.MemoryError) as e:
            print(f"{indent}  {int(p):#x} <unreadable: {e}>")
    if count > limit:
        print(f"{indent}  ... and {count - limit} more")


class VmCommand(_Command):
    """Show the VM: its threads and streams, and for each the queued, ready and running instructions.

Usage: odb-vm [LIMIT]   (at most LIMIT instructions per list, default 10)
queued: submitted and not yet scheduled (the scheduler's inbox), or scheduled and waiting for
their dependences (a stream's FIFO); ready: dispatched to a worker, not started; running: on the
thread now."""

    def run(self, arg):
        limit = int(arg) if arg.strip() else DEFAULT_LIMIT
        sched_ptr = _scheduler()
        if sched_ptr is None:
            print("odb: the VM has not started (no op ran yet)")
            return
        s = sched_ptr.cast(_type("rill::vm::Scheduler").pointer()).dereference()
        names = _threads_by_name()
        at_anchor = _anchor_stops()
        print(f"rill VM (rill::vm::Scheduler*){int(sched_ptr):#x}: {int(atomic(s['in_flight_']))} instructions in "
              f"flight")
        num = names.get("rill-scheduler")
        where = f'gdb thread {num} "rill-scheduler"' if num else "rill-scheduler"
        print(f"scheduler, {where}: {_gate_state(s['gate_'])}")
        if num in at_anchor:
            print(f"    at its odb anchor: {at_anchor[num]}")
        _print_list("queued: submitted, not yet scheduled", _inbox(s), limit)
        completions = Pending(vector_part(s["taken_completions_"], int(s["next_retire_"])),
                              vector_part(s["completions_"]))
        _print_list("finished on a worker, not yet released", completions, limit)
        running = s["running_"]
        print(f"    running: {instruction_str(running) if int(running) else '-'}")
        workers = s["workers_"]
        fifos = s["fifo_"]
        count = int(fifos.type.range()[1]) + 1
        for tid in range(count):
            fifo = Pending(deque_part(fifos[tid]))
            worker = unique_ptr(workers[tid])
            gate = s["worker_gates_"][tid]
            stop_requested = bool(atomic(gate["stop_"]))
            if tid != 0 and not len(fifo) and not int(worker) and not stop_requested:
                continue
            inline = tid == 0 and not int(worker)
            runs_on = "the scheduler (inline)" if inline else f"rill-worker-{tid}"
            print(f"stream cpu:compute:{tid}, runs on {runs_on}")
            _print_list("queued: scheduled, waiting for dependences", fifo, limit)
            if int(worker):
                w = worker.dereference()
                name = f"rill-worker-{tid}"
                num = names.get(name)
                where = f'gdb thread {num} "{name}"' if num else name
                print(f"  worker {tid}, {where}: {_gate_state(gate)}")
                if num in at_anchor:
                    print(f"    at its odb anchor: {at_anchor[num]}")
                ready = Pending(deque_part(w["batch_"], int(w["batch_next_"])), deque_part(w["queue_"]))
                _print_list("ready: dispatched, not started", ready, limit)
                running = w["running_"]
                print(f"    running: {instruction_str(running) if int(running) else '-'}")
            elif stop_requested:
                print(f"  worker {tid}: not started yet; stopped by rill.odb, it will park before its first instruction")



# --- odb-tensor --------------------------------------------------------------------------------------------------

def _to_impl(value):
    """A rill::TensorImpl* from a Tensor, Tensor*, TensorImpl, TensorImpl*, shared_ptr<TensorImpl> or address."""
    impl_t = _type("rill::TensorImpl")
    t = value.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_REF:
        value = value.referenced_value()
        t = value.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_INT:
        return value.cast(impl_t.pointer())
    if t.code == gdb.TYPE_CODE_PTR:
        target = str(t.target().strip_typedefs().unqualified())
        if target == "rill::TensorImpl":
            return value
        if target == "rill::Tensor":
            return impl_of(value.dereference())
        return value.cast(impl_t.pointer())  # an address of another type: take it as a TensorImpl*
    name = str(t.unqualified())
    if name == "rill::Tensor":
        return impl_of(value)
    if name == "rill::TensorImpl":
        return value.address
    if name.startswith("std::shared_ptr<rill::TensorImpl"):
        return shared_ptr(value)
    raise OdbError(f"odb-tensor: {value.type} is not a tensor (give a rill::Tensor, a rill::TensorImpl* or an address "
                   "from rill.odb.tensor_address(t))")


class TensorCommand(_Command):
    """Show a tensor: dtype, shape, strides, storage address and size, and its pending accesses.

Usage: odb-tensor EXPR
EXPR: a rill::Tensor, rill::Tensor*, rill::TensorImpl(*), std::shared_ptr<rill::TensorImpl>, or an
address of a TensorImpl (rill.odb.tensor_address(t) in Python; $odb_tensor after
rill.odb.breakpoint(t))."""

    def run(self, arg):
        if not arg.strip():
            raise OdbError("odb-tensor: give a tensor expression, e.g. odb-tensor $odb_tensor")
        impl_ptr = _to_impl(gdb.parse_and_eval(arg))
        if not int(impl_ptr):
            print("odb-tensor: undefined tensor (null)")
            return
        impl = impl_ptr.dereference()
        meta = tensor_meta_of_impl(impl)
        print(f"tensor (rill::TensorImpl*){int(impl_ptr):#x}")
        print(f"  dtype {dtype_name(meta['dtype'])}, shape {dims(meta['shape'])}, strides {dims(meta['strides'])}, "
              f"offset {int(impl['offset_'])} elements, {device_str(meta['device'])}"
              + ("" if bool(meta["contiguous"]) else ", non-contiguous"))
        storage_ptr = shared_ptr(impl["storage_"])
        st = storage_ptr.dereference()
        data = int(atomic(st["data_"]))
        alloc = f"data {data:#x}" if data else "not allocated yet (its writer has not run)"
        external = ", external memory (numpy/DLPack)" if int(st["deleter_"]) else ""
        print(f"  storage (rill::Storage*){int(storage_ptr):#x}: {int(st['nbytes_'])} bytes, {alloc}{external}")
        print(f"  writes in flight: {int(atomic(st['writes_in_flight_']))}")
        acc = st["accesses_"]
        last = acc["last_write"]
        reads = std_vector(acc["reads"])
        print("  pending accesses (instructions in flight on this storage):")
        print(f"    last write: {instruction_str(last) if int(last) else '-'}")
        if not reads:
            print("    reads: -")
        for r in reads:
            print(f"    read: {instruction_str(r)}")
        # Instructions the scheduler has not admitted yet are in no access list: look for them in its inbox.
        sched = _scheduler()
        if sched is not None:
            inbox = _inbox(sched.cast(_type("rill::vm::Scheduler").pointer()).dereference())
            for ins_ptr in inbox.first(len(inbox)):
                ins = ins_ptr.cast(_type("rill::vm::Instruction").pointer()).dereference()
                for role, field in (("write", "outputs"), ("read", "inputs")):
                    if any(int(shared_ptr(impl_of(t).dereference()["storage_"])) == int(storage_ptr)
                           for t in std_vector(ins[field])):
                        print(f"    queued {role} (not yet scheduled): {instruction_str(ins_ptr)}")
                        break
        if int(shared_ptr(st["poison_"])):
            print("  poisoned: a kernel that writes it failed (the error is raised at the next sync point)")


# --- set up ------------------------------------------------------------------------------------------------------

def _setup():
    gdb.execute("set breakpoint pending on", to_string=True)
    # Sourcing odb.py again replaces the handlers of the earlier load.
    old = getattr(gdb, "_rill_odb_hooks", None)
    if old:
        gdb.events.stop.disconnect(old[0])
        gdb.events.new_objfile.disconnect(old[1])
        for o in gdb.objfiles():
            o.pretty_printers[:] = [p for p in o.pretty_printers if not getattr(p, "rill_odb", False)]
    gdb.events.stop.connect(_on_stop)
    # First in every objfile's list: gdb asks objfiles' printers before the global ones, and libstdc++'s
    # would print a rill::Shape as a std::vector.
    for o in gdb.objfiles():
        _install_printer(o)
    gdb.events.new_objfile.connect(_on_new_objfile)
    gdb._rill_odb_hooks = (_on_stop, _on_new_objfile)
    for b in gdb.breakpoints():
        if b.location == BREAKPOINT_FUNCTION:
            break
    else:
        PythonBreakpoint()
    for kinds in (("client", "scheduler", "worker"), ("client",), ("scheduler",), ("worker",)):
        BreakCommand("odb-b-" + ("all" if len(kinds) > 1 else kinds[0]), kinds)
    ClearCommand("odb-clear")
    VmCommand("odb-vm")
    TensorCommand("odb-tensor")


_setup()
print("odb: loaded (odb-b-all, odb-b-client, odb-b-scheduler, odb-b-worker, odb-clear, odb-vm, odb-tensor; "
      "rill.odb.breakpoint() stops here)")
