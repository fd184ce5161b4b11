"""Starting torchrun subprocesses: argv and environment built as data (torchrun.py), then run
through the one launch path (attempt.py: `run_attempt`), whoever asks.
"""
