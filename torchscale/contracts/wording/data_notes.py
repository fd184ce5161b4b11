"""Words for what a cell's input pipeline notes (`CellResult.data.notes`: codes with
their figures) and why it counted no bytes read (`unavailable["data.read_bytes_per_s"]`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]


PHRASES: Phrases = {
    "data.plugin_drawn": (
        "batches from the plug-in's own iterable (ModelBundle.batches), one per micro-batch, "
        "drawn inside the data phase: the data wait is the step's wait for them"
    ),
    "data.plugin_not_read": "plug-in batches: their bytes are the plug-in's own, not counted",
    "data.plugin_not_model_parallel": (
        "the plug-in's batches are not drawn under tp, pp or hybrid (the ranks of a "
        "tensor-parallel group or a pipeline must see one batch, which an iterable per rank "
        "cannot promise): this cell trained on one make_batch batch reused every step, so its "
        "data wait is about 0"
    ),
    "data.cifar_in_memory": (
        "CIFAR-100 is read into memory when the cell starts: the data phase measures the loader, "
        "the copy and the on-device resize, not the storage"
    ),
    "data.labels_mod": (
        "labels taken mod {classes} (the model has {classes} classes, CIFAR-100 "
        "{dataset_classes}): throughput is unaffected, accuracy would be meaningless"
    ),
    "data.page_cache": (
        "the dataset ({dataset_bytes:mb}) is smaller than this host's memory "
        "({memory_bytes:gb1}): after the first epoch samples may come from the page cache, not "
        "the storage (each rank read {epochs:cv} epochs of its share in this cell)"
    ),
    "data.no_fadvise": "this platform has no posix_fadvise: the page cache was not dropped",
    "data.cache_not_dropped": lambda f: "page cache not dropped for " + "; ".join(f["failed"]),
}
