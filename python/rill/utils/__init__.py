"""rill.utils: data loading (rill.utils.data)."""
from rill.utils import data  # noqa: F401
