"""rill.backends.cuda: not built (rill has no CUDA); the matmul flags scripts set are kept and ignored."""


class _MatmulFlags:
    """torch.backends.cuda.matmul: flags a script may set; nothing reads them."""
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built():
    """False: rill is built without CUDA."""
    return False
