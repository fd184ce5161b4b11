"""Sweeps on Slurm: one allocation per node count, each cell an srun step of torchrun.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""
