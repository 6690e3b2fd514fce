"""rill.nn.utils: gradient clipping and parameter/vector conversions."""
from rill.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_  # noqa: F401
from rill.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from rill.nn.utils import rnn  # noqa: F401
from rill.nn.utils import parametrize, parametrizations  # noqa: F401
from rill.nn.utils.weight_norm_hook import weight_norm, remove_weight_norm  # noqa: F401
