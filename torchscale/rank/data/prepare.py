"""Before a sweep: make the data every cell will read exist, once, in the parent process.

`disk` generates (or verifies the cache of) the shards; `cifar100` checks that the user's files
are there and readable, so a missing file fails the sweep before any cell is launched rather
than every cell one by one. No torch import: this runs in the CLI process.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchscale.contracts.cell_settings import DataConfig
from torchscale.contracts.wording.sweep import cifar_ready, disk_ready
from torchscale.rank.data.shards import ensure_shards


@dataclass(frozen=True)
class DataReady:
    """What `prepare_data` did, for the one line the CLI prints (None: nothing to prepare)."""

    source: str
    message: str
    note: str | None = None  # e.g. why a cached dataset was regenerated


def prepare_data(data: DataConfig) -> DataReady | None:
    """Generate or verify the dataset `data` names; DataError (one line) when it cannot."""
    if data.source == "synthetic" or data.dir is None:
        return None
    if data.source == "disk":
        shards = ensure_shards(data.dir, data.shard_mb, data.num_shards)
        verb = "generated" if shards.generated else "cached (manifest verified)"
        return DataReady(
            "disk",
            disk_ready(
                verb, len(shards.names), data.shard_mb, shards.total_bytes, shards.directory
            ),
            shards.note,
        )
    from torchscale.rank.data.cifar100 import load_train

    train = load_train(data.dir)
    return DataReady(
        "cifar100",
        cifar_ready(len(train), train.path, train.file_bytes),
    )
