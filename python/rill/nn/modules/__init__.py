"""The layers of rill.nn, one file per group as in torch.nn.modules."""
from rill.nn.modules.module import Module  # noqa: F401
from rill.nn.modules.container import (  # noqa: F401
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential,
)
from rill.nn.modules.linear import Flatten, Identity, Linear, Unflatten  # noqa: F401
from rill.nn.modules.conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: F401
from rill.nn.modules.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d  # noqa: F401
from rill.nn.modules.normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm  # noqa: F401
from rill.nn.modules.activation import (  # noqa: F401
    GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh,
)
from rill.nn.modules.loss import (  # noqa: F401
    BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss,
)
from rill.nn.modules.dropout import Dropout  # noqa: F401
from rill.nn.modules.rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from rill.nn.modules.sparse import Embedding  # noqa: F401
from rill.nn.modules.transformer import (  # noqa: F401
    MultiheadAttention, TransformerEncoder, TransformerEncoderLayer,
)
