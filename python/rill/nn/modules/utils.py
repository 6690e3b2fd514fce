"""Helpers on state dicts, as torch.nn.modules.utils."""


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip prefix from the keys that start with it, in place (a DistributedDataParallel's state_dict has
    'module.' before every key of the wrapped module's)."""
    keys = list(state_dict.keys())
    for key in keys:
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if key == prefix.rstrip("."):
                metadata[""] = metadata.pop(key)
            elif key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
