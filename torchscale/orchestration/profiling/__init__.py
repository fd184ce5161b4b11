"""Profiling: capture (torch.profiler, Nsight Systems) and the end-to-end trace analysis.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""
