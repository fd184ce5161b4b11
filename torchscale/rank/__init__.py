"""The rank side: the code inside every torchrun rank (the worker, the models, parallelism,
the input pipeline, telemetry), kept apart so that a path says where it runs.

Layer 2 (rank side, beside the offline side) of docs/architecture.md: imports contracts and
the offline side (a rank reduces its own trace with the offline reducer).
"""
