"""The input pipeline (docs/data.md): synthetic on-device batches, generated disk shards, or
CIFAR-100 from the user's files. Modules, one job each: shards (generate, cache and evict the
disk dataset), cifar100 (safe reader), records (record layouts and decoding), input_pipeline
(one rank's DataLoader), plugin_batches (a plug-in's own batches), prepare (before the sweep,
in the parent); which model each source can feed is contracts/model_tasks.py (no torch).
Nothing is imported here, so the CLI never pays for torch.
"""
