"""A launcher added as docs/architecture.md says: this one package (its `Launcher` in
launcher.py) plus one line in the registry, torchscale/contracts/launcher_registry.py, which
tests/orchestration/test_adding_a_launcher.py adds at run time. Its scheduler is made up: "batchq"
queues a
job file per cell and reports through the contract's generic events only."""
