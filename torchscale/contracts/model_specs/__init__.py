"""One torch-free spec per built-in model, and the one registry of them (`registry.BUILTIN`).

Every consumer of a built-in model's facts reads its spec: the catalog (the names and options a
config may name), config validation, `torchscale list` and `config init`, the data tasks, the
training defaults, the batch estimate, and, on the rank side only, `models.build_model`, which
imports the spec's builder by its "module:function" reference. Nothing here imports torch, so
validating a config or listing the zoo never does. Adding a model is one spec (its family's
module here, or a module of its own) and one line in `registry.py` (docs/architecture.md).
"""
