"""Orchestration: the host process that plans cells, launches torchrun (through the one launch
path), runs the suites (comm, memory, profiling, validate) and collects the results.

Layer 3 (orchestration) of docs/architecture.md: imports the rank side, the offline side and
contracts.
"""
