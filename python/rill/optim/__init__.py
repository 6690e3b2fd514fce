"""rill.optim: optimizers with PyTorch's update formulas, and learning-rate schedulers."""
from rill.optim.optimizer import Optimizer  # noqa: F401
from rill.optim.sgd import SGD  # noqa: F401
from rill.optim.adam import Adam, AdamW  # noqa: F401
from rill.optim.rmsprop import RMSprop  # noqa: F401
from rill.optim import lr_scheduler  # noqa: F401
