"""torchscale: benchmark, profile and report on PyTorch distributed training."""

__version__ = "0.10.0"
