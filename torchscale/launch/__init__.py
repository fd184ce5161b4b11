"""Starting torchrun subprocesses: argv and environment built as data, then run."""
