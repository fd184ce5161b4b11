"""This node as a scheduler: every cell one torchrun after another, then the config's suites
(`launcher.py`; the sweep itself is torchscale/orchestration/sweep.py, which Slurm's driver shares).
"""
