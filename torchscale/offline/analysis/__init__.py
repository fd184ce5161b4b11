"""Pure functions over measurements: statistics, scaling, communication, stalls.

Layer 2 (offline side) of docs/architecture.md: imports only from layers below and its own.
"""
