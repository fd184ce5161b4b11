"""Trace analyses: pure functions over the event tables of `torchscale.offline.traces.rank_trace`,
one analysis per module (steps and phases, breakdown, idle taxonomy, collective matching, top
kernels, clock offsets, arrival order). The per-rank reducers are listed once in `registry.py`
and run by `reduce.reduce_rank`. The step model, the straggler verdict, the what-if and the
findings are the run's diagnosis' (`torchscale.offline.analysis.diagnosis`), which reads these
tables as one of its sources of evidence."""
