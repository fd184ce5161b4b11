"""Collective bandwidth in nccl-tests' conventions: `torchscale comm` and nccl-tests import."""
