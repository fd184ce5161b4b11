"""Words for what a cell's input pipeline notes (`CellResult.data.notes`: codes with
their figures) and why it counted no bytes read (`unavailable["data.read_bytes_per_s"]`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording.spell import cv, gigabytes, megabytes

F = Mapping[str, Any]


def _page_cache(f: F) -> str:
    return (
        f"the dataset ({megabytes(f['dataset_bytes'])}) is smaller than this host's memory "
        f"({gigabytes(f['memory_bytes'])}): after the first epoch samples may come from the page "
        f"cache, not the storage (each rank read {cv(f['epochs'])} epochs of its share in "
        "this cell)"
    )


def _labels_mod(f: F) -> str:
    return (
        f"labels taken mod {f['classes']} (the model has {f['classes']} classes, CIFAR-100 "
        f"{f['dataset_classes']}): throughput is unaffected, accuracy would be meaningless"
    )


PHRASES: dict[str, Callable[[F], str]] = {
    "data.plugin_drawn": lambda f: (
        "batches from the plug-in's own iterable "
        "(ModelBundle.batches), one per micro-batch, drawn inside the data phase: the data wait is "
        "the step's wait for them"
    ),
    "data.plugin_not_read": lambda f: (
        "plug-in batches: their bytes are the plug-in's own, not counted"
    ),
    "data.plugin_not_model_parallel": lambda f: (
        "the plug-in's batches are not drawn under tp, pp or hybrid (the ranks of a "
        "tensor-parallel group or a pipeline must see one batch, which an iterable per rank "
        "cannot promise): this cell trained on one make_batch batch reused every step, so its "
        "data wait is about 0"
    ),
    "data.cifar_in_memory": lambda f: (
        "CIFAR-100 is read into memory when the cell starts: the "
        "data phase measures the loader, the copy and the on-device resize, not the storage"
    ),
    "data.labels_mod": _labels_mod,
    "data.page_cache": _page_cache,
    "data.no_fadvise": lambda f: (
        "this platform has no posix_fadvise: the page cache was not dropped"
    ),
    "data.cache_not_dropped": lambda f: "page cache not dropped for " + "; ".join(f["failed"]),
}
