"""Kubernetes as a scheduler: one job manifest per cell (`manifests.py`), written and, when asked,
applied with kubectl (`launcher.py`); torchscale does not follow the jobs.
"""
