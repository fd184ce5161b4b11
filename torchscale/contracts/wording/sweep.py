"""Words for a sweep state: how far a sweep got (offline/results/sweep_progress.py),
each planned cell's state, the cells not measured named compactly, the command that finishes
it, and the line printed when its dataset is ready."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from torchscale.contracts.wording.spell import as_set, count, megabytes

# Words for how far a sweep got (offline/results/sweep_progress.py): each planned cell's state,
# the cells not measured named compactly (by state, then by model, collapsed beyond a few, so a
# 500-cell sweep reads in a few lines) and the command line that finishes it.

# a cell's state, as its counts and lists name it (an unknown state is shown as itself)
STATES = {
    "ok": "measured",
    "failed": "failed",
    "oom": "out of memory",
    "timeout": "timed out",
    "stopped": "stopped while it ran",
    "skipped": "skipped by design",
    "not reached": "not reached",
    "no result yet": "no result yet",
    "unreadable": "unreadable",
}

SHOWN = 3  # cells named per model, models named per state, reasons per state
# where an older folder's plan came from (it wrote no sweep.json)
SWEEP_JSON_REPLANNED = "No sweep.json: its plan is its config.yaml's, expanded again."
SWEEP_JSON_UNKNOWN = "No sweep.json: the cells it never started are not known."


def state_words(state: str) -> str:
    return STATES.get(state, state)


def _model_group(model: str, labels: Sequence[str]) -> str:
    """'tiny-mlp b16 x2 fp32 ddp, b32 x2 fp32 ddp' or, beyond SHOWN, 'tiny-mlp (12 cells):
    b16 x2 fp32 ddp, ... and 9 more'."""
    shapes = [label.removeprefix(model).strip() for label in labels]
    if len(labels) <= SHOWN:
        return f"{model} {', '.join(shapes)}"
    more = len(labels) - SHOWN
    return f"{model} ({len(labels)} cells): {', '.join(shapes[:SHOWN])} and {more} more"


def cells_text(cells: Sequence[tuple[str, str]]) -> str:
    """(model, label) pairs named by model, in their order, collapsed beyond SHOWN models."""
    models: dict[str, list[str]] = {}
    for model, label in cells:
        models.setdefault(model, []).append(label)
    groups = [_model_group(m, labels) for m, labels in list(models.items())[:SHOWN]]
    if len(models) > SHOWN:
        rest = sum(len(labels) for labels in list(models.values())[SHOWN:])
        groups.append(f"and {len(models) - SHOWN} more models ({rest} cells)")
    return "; ".join(groups)


def reasons_text(reasons: Sequence[str]) -> str:
    """Distinct reasons, the first SHOWN of them, in brackets ('' when none)."""
    if not reasons:
        return ""
    more = f"; and {len(reasons) - SHOWN} other reasons" if len(reasons) > SHOWN else ""
    return f" ({'; '.join(reasons[:SHOWN])}{more})"


def not_measured_text(
    states: Sequence[tuple[str, Sequence[str], Sequence[tuple[str, str]]]],
) -> str:
    """'Skipped by design (needs 2 GPUs; this node has 1): tiny-mlp b16 x2 fp32 ddp. Not
    reached: ...', a sentence per state, from (state, its reasons, its (model, label) cells)."""
    return " ".join(
        f"{state_words(state).capitalize()}{reasons_text(reasons)}: {cells_text(cells)}."
        for state, reasons, cells in states
    )


def resume_text(argv: Sequence[str] | None, redefined: int = 0) -> str:
    """The command that finishes the sweep, as a line to copy ('' when there is none), and
    how many kept results it runs again (their cells' definitions changed since)."""
    if not argv:
        return ""
    again = (
        f" (it measures the {redefined} kept cells again: their settings differ from this "
        "torchscale's for the same config)"
        if redefined
        else ""
    )
    return f"To finish it: `{shlex.join(argv)}`{again}."


# The line a sweep prints when its dataset is ready: how many shards or images, how big.


def disk_ready(verb: str, shards: int, shard_mb: int, total_bytes: int, directory: object) -> str:
    """'data: generated: 4 shards x 64 MB (256 MB) under /data'."""
    return (
        f"data: {verb}: {shards} shards x {as_set(shard_mb, 'MB')} ({megabytes(total_bytes)}) "
        f"under {directory}"
    )


def cifar_ready(images: int, path: object, file_bytes: int) -> str:
    """'data: CIFAR-100 50,000 training images from <path> (161 MB)'."""
    return f"data: CIFAR-100 {count(images)} training images from {path} ({megabytes(file_bytes)})"
