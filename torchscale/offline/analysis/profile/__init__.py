"""A profile's combine step: every rank's reduced trace (`trace/reduce.reduce_rank`) read
together into the run's one diagnosis and the stored profile analysis. It sits above both
`trace/` (the per-rank reductions, which know nothing of the diagnosis) and `diagnosis/`
(which reads the trace tables as evidence), so neither imports the other back."""
