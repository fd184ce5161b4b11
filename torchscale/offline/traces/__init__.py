"""Reading profiler traces (Kineto JSON, Nsight Systems SQLite) into per-rank event tables.

Layer 2 (offline side) of docs/architecture.md: imports only from layers below and its own.
"""
