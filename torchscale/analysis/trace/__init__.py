"""Trace analyses: pure functions over the event tables of `torchscale.traces.rank_trace`, one
analysis per module (collective matching, clock offsets, breakdown, stragglers, what-if,
findings)."""
