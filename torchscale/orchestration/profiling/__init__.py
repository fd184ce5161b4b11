"""Profiling: capture (torch.profiler, Nsight Systems) and the end-to-end trace analysis."""
