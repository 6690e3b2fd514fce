"""rill.onnx: importable, as scripts do ``import torch.onnx`` at the top; exporting is not supported."""

__all__ = ["export"]


def export(model, args, f=None, *unused_args, **unused_kwargs):
    """Raises NotImplementedError: rill cannot export a model to ONNX."""
    raise NotImplementedError("[onnx.export] rill cannot export models to ONNX; build the model in PyTorch "
                              "to export it")
