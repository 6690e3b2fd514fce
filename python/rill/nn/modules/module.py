"""Module: the base class of every layer (parameters, buffers and submodules, state dicts, repr)."""
import itertools
from collections import OrderedDict, namedtuple

import rill
from rill import _C
from rill._C import Tensor
from rill.nn.parameter import Buffer, Parameter


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys it did not find and the keys it did not use."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _RemovableHandle:
    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_hook_ids = itertools.count()


class Module:
    """Base class of all layers: subclass it, assign Parameters, Modules and buffers as attributes in
    __init__, and write forward()."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # --- calling ---
    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):  # a hook may remove itself (lazy modules)
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        result = self.forward(*args, **kwargs)
        for hook in self._forward_hooks.values():
            r = hook(self, args, result)
            if r is not None:
                result = r
        return result

    def register_forward_hook(self, hook):
        """hook(module, args, output) after forward; a non-None return replaces the output."""
        key = next(_hook_ids)
        self._forward_hooks[key] = hook
        return _RemovableHandle(self._forward_hooks, key)

    def register_forward_pre_hook(self, hook):
        """hook(module, args) before forward; a non-None return replaces the arguments."""
        key = next(_hook_ids)
        self._forward_pre_hooks[key] = hook
        return _RemovableHandle(self._forward_pre_hooks, key)

    # --- registration ---
    def _check_name(self, name, what):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")
        if "." in name:
            raise KeyError(f'{what} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')

    def register_parameter(self, name, param):
        """Add a parameter (a Parameter or None) called name."""
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(rill.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly. To express '" + name + "' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (a Tensor or None, saved in the state dict unless persistent=False) called name."""
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(rill Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Add a submodule (a Module or None) called name."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._parameters:
            raise AttributeError(mod._get_name() + " has no parameter `" + name + "`")
        return mod._parameters[name]

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__

        def remove_from(*stores):
            for s in stores:
                if name in s:
                    del s[name]

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(rill.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(rill.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer):
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            remove_from(d, self._parameters, self._modules)
            self.register_buffer(name, value, persistent=getattr(value, "persistent", True))
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(rill.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[:1].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    # --- iteration ---
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, Parameter) pairs, names dotted like 'layer.0.weight'; shared parameters once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    # --- modes and conversions ---
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear the gradients of all parameters (None by default, zeros with set_to_none=False)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g = g.detach()
                    p.grad = g
                g.zero_()

    def apply(self, fn):
        """Call fn on every submodule (children first), then on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn):
        """Replace every parameter's and buffer's data by fn(data), keeping the Parameter objects' identity
        semantics of PyTorch (a new Parameter with the converted data, gradients converted too)."""
        for m in self.children():
            m._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with rill.no_grad():
                new = fn(param)
            if new is param:
                continue
            new_p = Parameter(new, param.requires_grad)
            if param.grad is not None:
                with rill.no_grad():
                    new_p.grad = fn(param.grad)
            self._parameters[key] = new_p
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(dtype), to(device), to(device, dtype), to(tensor): converts floating parameters and buffers
        (integer buffers keep their dtype, as in PyTorch)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"[Module.to] got an unexpected keyword argument '{next(iter(kwargs))}'")
        if len(args) == 1 and isinstance(args[0], type) and getattr(args[0], "_wraps_module", False):
            return args[0](self)  # module.to(rill.nn.graph.GraphModule): the module's settings inside a graph
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, (str, _C.device)):
                device = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            else:
                raise TypeError(f"[Module.to] expected a dtype, a device or a Tensor, got {type(a).__name__}")
        if device is not None:
            if not isinstance(device, _C.device):
                device = _C.device(str(device))  # validates: an unsupported device raises, naming it
            if str(device.type) != "cpu":
                raise RuntimeError(f"[Module.to] rill has no device '{device}' in this build; use 'cpu'")
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        if dtype is None:
            return self
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def cpu(self):
        return self

    def cuda(self, device=None):
        raise RuntimeError("[Module.cuda] rill was built without CUDA; modules live on 'cpu'")

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    def share_memory(self):
        return self

    # --- state dicts ---
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer, keyed by dotted names (PyTorch's keys)."""
        if args:  # the positional (destination, prefix, keep_vars) form PyTorch still accepts
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = _as_rill_tensor(state_dict[key])
            if input_param is None:
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(state_dict[key])}")
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{_size_str(input_param.shape)} from checkpoint, the shape in current model is "
                                  f"{_size_str(param.shape)}.")
                continue
            if input_param.dtype != param.dtype and rill.is_strict_dtype():
                # TypeError at once (not collected into the RuntimeError below): a conversion to write, not a
                # mismatch of the checkpoint.
                have, want = input_param.dtype.name, param.dtype.name
                raise TypeError(f"[load_state_dict] strict dtype mode: {key} is {have} in the state dict and {want} "
                                f"in the module; convert explicitly, e.g. state_dict['{key}'] = "
                                f"state_dict['{key}'].to(rill.{want}), or convert the module first with "
                                f".to(rill.{have})")
            try:
                with rill.no_grad():
                    if input_param.dtype != param.dtype:
                        input_param = input_param.to(param.dtype)
                    param.copy_(input_param)
            except Exception as ex:  # noqa: BLE001 - reported with the key, as PyTorch does
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{_size_str(param.shape)} and whose dimensions in the checkpoint are "
                                  f"{_size_str(input_param.shape)}, an exception occurred : {ex.args}.")
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from state_dict (rill or torch tensors, or numpy arrays). strict=True
        raises RuntimeError listing missing and unexpected keys, worded as PyTorch words them."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys,
                                         error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(self)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # --- repr ---
    def extra_repr(self):
        """The layer's own settings, shown inside its repr's parentheses."""
        return ""

    def _get_name(self):
        return self.__class__.__name__

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"


def _size_str(shape):
    return repr(rill.Size(tuple(shape)))


def _as_rill_tensor(value):
    """A rill Tensor for a state-dict value: rill tensors as they are, torch tensors and numpy arrays by value."""
    if isinstance(value, Tensor):
        return value
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        t = value.detach().cpu()
        name = str(t.dtype).split(".")[-1]  # a torch.dtype, which has no .name
        if name == "bfloat16":
            return rill.tensor(t.float().numpy()).to(rill.bfloat16)
        return rill.tensor(t.numpy()).to(getattr(rill, name))
    try:
        import numpy as np
        if isinstance(value, np.ndarray):
            return rill.tensor(value)
    except ImportError:  # pragma: no cover
        pass
    return None
