"""Trace analyses: pure functions over the event tables of `torchscale.offline.traces.rank_trace`,
one analysis per module (steps and phases, breakdown, idle taxonomy, collective matching, top
kernels, clock offsets, stragglers, the step model, findings). The per-rank reducers are listed
once in `registry.py` and run by `reduce.reduce_rank`. The what-if is the run's diagnosis'
(`torchscale.offline.analysis.diagnosis`), computed over the step model."""
