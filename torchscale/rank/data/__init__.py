"""The input pipeline (docs/data.md): synthetic on-device batches, generated disk shards, or
CIFAR-100 from the user's files. Modules, one job each: tasks (which model each source can
feed; no torch), shards (generate, cache and evict the disk dataset), cifar100 (safe reader),
records (record layouts and decoding), pipeline (one rank's DataLoader), prepare (before the
sweep, in the parent). Nothing is imported here, so the CLI never pays for torch.
"""
