"""Keys of the published GPU training benchmark suite (shared/seeds/000: `--training.epochs=5
--data.batch_size=512`, `benchmark.*`) and what replaced each here, so a user who brings that
suite's habits gets the mapping in the error line, not only the list of valid keys.

A key not listed falls back to the usual "did you mean" of config/loader.py.
"""

from __future__ import annotations

from typing import Any

# the published key -> what to write instead (a torchscale key, or why none is needed)
SEED_KEYS: dict[str, str] = {
    "training.epochs": "measurement.steps or measurement.duration_s (torchscale times steps in "
    "measured windows, not epochs)",
    "training.warmup_epochs": "measurement.warmup_steps",
    "data.batch_size": "batch_sizes (a list, per GPU)",
    "benchmark.warmup_steps": "measurement.warmup_steps",
    "benchmark.measure_steps": "measurement.steps",
    "benchmark.measure_seconds": "measurement.duration_s",
    "benchmark.log_step_times": "nothing: every step's time is always recorded",
    "benchmark.sync_cuda": "measurement.timing=sync_cuda",
    "model.channels_last": "training.channels_last",
    "model.name": "models (a list)",
}
SEED_SECTIONS = {"benchmark": "measurement", "model": "models and training"}


def seed_key_hint(dotted: str, value: Any) -> str | None:
    """'what replaced it' for a published key or section, or None when it is not one. A whole
    unknown section (`benchmark: {...}`) is mapped key by key where its keys are known."""
    if dotted in SEED_KEYS:
        return f"the published suite's '{dotted}' is {SEED_KEYS[dotted]} here"
    if dotted not in SEED_SECTIONS:
        return None
    keys = [f"{dotted}.{key}" for key in value] if isinstance(value, dict) else []
    known = [f"{key} -> {SEED_KEYS[key]}" for key in keys if key in SEED_KEYS]
    if known:
        return "the published suite's " + "; ".join(known)
    return f"the published suite's '{dotted}' section is {SEED_SECTIONS[dotted]} here"
