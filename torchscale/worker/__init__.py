"""What runs inside every rank of a benchmark cell (started by torchrun).

Layer 2 (rank side) of docs/architecture.md: imports only from layers below and its own,
except the config's section types (debt: tests/test_architecture.py).
"""
