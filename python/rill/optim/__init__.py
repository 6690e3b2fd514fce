"""rill.optim: optimizers with PyTorch's update formulas, and learning-rate schedulers."""
from rill.optim.optimizer import Optimizer  # noqa: F401
from rill.optim.sgd import SGD  # noqa: F401
from rill.optim.adam import Adam, AdamW  # noqa: F401
from rill.optim.rmsprop import RMSprop  # noqa: F401
from rill.optim.adagrad import Adagrad  # noqa: F401
from rill.optim.adadelta import Adadelta  # noqa: F401
from rill.optim.adamax import Adamax  # noqa: F401
from rill.optim.nadam import NAdam  # noqa: F401
from rill.optim.radam import RAdam  # noqa: F401
from rill.optim.asgd import ASGD  # noqa: F401
from rill.optim.rprop import Rprop  # noqa: F401
from rill.optim.lbfgs import LBFGS  # noqa: F401
from rill.optim.sparse_adam import SparseAdam  # noqa: F401
from rill.optim.adafactor import Adafactor  # noqa: F401
from rill.optim import lr_scheduler  # noqa: F401
