"""rill.backends.cudnn: not available (rill has no cuDNN); the flags scripts set are kept and ignored."""

enabled = False
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    """False: rill has no cuDNN."""
    return False


def version():
    """None, as torch.backends.cudnn.version() is without cuDNN."""
    return None
