"""What runs inside every rank of a benchmark cell (started by torchrun).

Layer 2 (rank side) of docs/architecture.md: imports only from layers below and its own.
"""
