"""Sweeps on Slurm: one allocation per node count, each cell an srun step of torchrun."""
