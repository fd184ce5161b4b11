"""Slurm as a scheduler: one allocation per node count, each cell an srun step of torchrun
(`launcher.py` submits and follows them; the driver, the steps and the client beside it).
"""
