"""Starting torchrun subprocesses: argv and environment built as data, then run.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""
