"""rill.nn: layers, parameters, initialisers and utilities, with torch.nn's names and state-dict formats."""
from rill.nn.parameter import Buffer, Parameter  # noqa: F401
from rill.nn.modules import *  # noqa: F401,F403
from rill.nn.modules import (  # noqa: F401
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BCEWithLogitsLoss, Conv1d, Conv2d, ConvTranspose2d,
    CrossEntropyLoss, Dropout, Embedding, Flatten, GELU, GroupNorm, Identity, L1Loss, LayerNorm, LeakyReLU, Linear,
    LogSoftmax, MaxPool2d, Module, ModuleDict, ModuleList, MSELoss, MultiheadAttention, NLLLoss, ParameterDict,
    ParameterList, ReLU, Sequential, Sigmoid, SiLU, SmoothL1Loss, Softmax, Tanh, TransformerEncoder,
    TransformerEncoderLayer, Unflatten, RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell,
)
from rill.nn import init, parallel, utils  # noqa: F401
from rill.nn.graph import Graph, GraphConfig  # noqa: F401

from rill.nn import functional  # noqa: F401
