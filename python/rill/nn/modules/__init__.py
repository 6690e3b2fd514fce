"""The layers of rill.nn, one file per group as in torch.nn.modules."""
from rill.nn.modules.module import Module  # noqa: F401
from rill.nn.modules.container import (  # noqa: F401
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential,
)
from rill.nn.modules.linear import Flatten, Identity, Linear, Unflatten  # noqa: F401
from rill.nn.modules.conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
)
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
from rill.nn.modules.activation import (  # noqa: F401
    CELU, ELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSigmoid, Mish, PReLU, ReLU6, SELU, Softmax2d,
    Softmin, Softplus, Softshrink, Softsign, Tanhshrink, Threshold,
)
from rill.nn.modules.loss import (  # noqa: F401
    BCELoss, CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, MarginRankingLoss,
    MultiLabelSoftMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
)
from rill.nn.modules.dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
from rill.nn.modules.pooling import AdaptiveAvgPool1d, AvgPool1d, MaxPool1d  # noqa: F401
from rill.nn.modules.normalization import LocalResponseNorm, RMSNorm  # noqa: F401
from rill.nn.modules.linear import Bilinear  # noqa: F401
from rill.nn.modules.distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from rill.nn.modules.pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle  # noqa: F401
from rill.nn.modules.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from rill.nn.modules.padding import (  # noqa: F401
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
    ZeroPad3d,
)
from rill.nn.modules.normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from rill.nn.modules.loss import MultiLabelMarginLoss, MultiMarginLoss, TripletMarginWithDistanceLoss  # noqa: F401
from rill.nn.modules.loss import CTCLoss, LinearCrossEntropyLoss  # noqa: F401
from rill.nn.modules.activation import RReLU  # noqa: F401
from rill.nn.modules.dropout import FeatureAlphaDropout  # noqa: F401
from rill.nn.modules.pooling import LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d  # noqa: F401
from rill.nn.modules.pooling import (  # noqa: F401
    AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool3d, FractionalMaxPool2d,
    FractionalMaxPool3d, LPPool3d, MaxPool3d,
)
from rill.nn.modules.normalization import BatchNorm3d  # noqa: F401
from rill.nn.modules.transformer import (  # noqa: F401
    MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
from rill.nn.modules.lazy import (  # noqa: F401
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyLinear, LazyModuleMixin, UninitializedBuffer, UninitializedParameter,
)
from rill.nn.modules.fold import Fold, Unfold  # noqa: F401
from rill.nn.modules.sparse import EmbeddingBag  # noqa: F401
