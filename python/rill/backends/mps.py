"""rill.backends.mps: not available (rill has no Metal backend)."""


def is_available():
    """False: rill has no MPS device."""
    return False


def is_built():
    """False: rill is built without MPS."""
    return False
