"""rill.backends: the flags of torch.backends that CPU programs set or read.

Scripts write ``torch.backends.cudnn.benchmark = True`` or test ``torch.backends.mps.is_available()``
before choosing a device. rill has none of these accelerator libraries: each ``is_available()`` is
False and the flags are plain attributes that nothing reads.
"""
from rill.backends import cuda, cudnn, mkldnn, mps  # noqa: F401
