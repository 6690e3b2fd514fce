"""torch.nn.modules.channelshuffle's class at the same path (rill defines it in pixelshuffle.py)."""
from rill.nn.modules.pixelshuffle import ChannelShuffle  # noqa: F401
