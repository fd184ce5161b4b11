"""Collective bandwidth in nccl-tests' conventions: `torchscale comm` and nccl-tests import.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""
