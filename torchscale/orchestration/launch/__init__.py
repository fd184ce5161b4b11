"""Starting torchrun subprocesses: argv and environment built as data (torchrun.py), then run
through the one launch path (attempt.py: `run_attempt`), whoever asks.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""
