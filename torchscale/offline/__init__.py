"""The offline side: reading what runs left behind (traces, results) and pure analysis over
it, in any process, a notebook included.

Layer 2 (offline side, beside the rank side) of docs/architecture.md: imports contracts only.
"""
