"""`torchscale validate`: does this node meet the requirements for distributed training?

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""
