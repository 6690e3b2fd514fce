"""parameters_to_vector / vector_to_parameters."""
import numpy as np

import rill


def parameters_to_vector(parameters):
    """One 1-D tensor of all parameters' values, in order."""
    parts = [p.detach().reshape(-1) for p in parameters]
    cat = getattr(rill, "cat", None)
    if cat is not None:
        return cat(parts)
    return rill.tensor(np.concatenate([np.asarray(p.numpy()) for p in parts])).to(parts[0].dtype)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of vec into the parameters."""
    pointer = 0
    with rill.no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].reshape(*p.shape))
            pointer += n
