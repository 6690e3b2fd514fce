"""rill.backends.mkldnn: rill's CPU kernels use oneDNN (libdnnl) where it has the op."""

enabled = True


def is_available():
    """True: rill is built with oneDNN."""
    return True
