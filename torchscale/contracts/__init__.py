"""Contracts: what every process role (host, ranks, offline readers) shares: the exception
tree, units and durations, the catalog and model specs, cell identity, the host-to-rank spec,
the result schemas, one source per fact. They know nothing of who calls them.

Layer 1 (contracts) of docs/architecture.md: imports nothing else of torchscale.
"""
