"""One rank's input pipeline for `disk` and `cifar100`: DataLoader in, device batches out
(sampler, workers, pinning, prefetch, on-device finishing: docs/data.md).

The trainer calls `next_batch()` inside the step's data phase, so the phase measures what a
training step really waits for its input: the wait for a batch the workers have not finished,
the copy and the on-device finishing (torchscale/rank/worker/phases.py). Worker processes get a
parent-death signal (they die with their rank, even on SIGKILL) and are shut down by `close()`,
which the trainer also registers at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from torchscale.contracts.cell_settings import DataConfig
from torchscale.contracts.errors import DataError
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_tasks import task_of, unsupported
from torchscale.contracts.wording import say
from torchscale.rank.data import cifar100
from torchscale.rank.data.plugin_batches import to_device
from torchscale.rank.data.records import (
    CifarImages,
    CollateImages,
    DecodeRecords,
    Layout,
    ShardRecords,
)
from torchscale.rank.data.shards import MANIFEST, evict, read_manifest
from torchscale.rank.models import ModelBundle, build_model, call_model

Finish = Callable[[torch.Tensor], torch.Tensor]
# the key of the trainer's settings that carries `Pipeline.info` to rank 0's result
# (torchscale/rank/worker/aggregate.py reads it into `data` and keeps it out of `environment`)
SETTINGS_KEY = "data_pipeline"


def layout_for(
    model: str,
    options: dict[str, Any] | None,
    bundle: ModelBundle,
    seq_len: int | None = None,
    image_size: int | None = None,
) -> Layout:
    """The record layout of `model`: its task, input shape and class count (or vocabulary),
    the last read from one forward pass on the meta device (no memory, no compute)."""
    task = task_of(model)
    if task is None:
        raise DataError(say(Finding(code="plan.data_synthetic_only", figures={"source": "disk"})))
    with torch.device("meta"):
        meta = build_model(model, options, seq_len=seq_len, image_size=image_size)
        inputs, _ = meta.make_batch(1, torch.device("meta"))
        classes = int(call_model(meta.model, inputs).shape[-1])
    return Layout(task, tuple(bundle.input_shape), classes)


def _die_with_rank(_worker_id: int) -> None:
    """worker_init_fn: a loader worker is killed when its rank exits, however it exits."""
    from torchscale.contracts.signals import set_parent_death_signal

    set_parent_death_signal(signal.SIGKILL)


def _uint8_to_unit(x: torch.Tensor) -> torch.Tensor:
    return x.float().div_(127.5).sub_(1.0)


def _cifar_finish(side: int, device: torch.device) -> Finish:
    mean = torch.tensor(cifar100.MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(cifar100.STD, device=device).view(1, 3, 1, 1)

    def finish(x: torch.Tensor) -> torch.Tensor:
        images = x.float().div_(255.0)
        if images.shape[-1] != side:
            images = F.interpolate(images, size=(side, side), mode="bilinear", align_corners=False)
        return (images - mean) / std

    return finish


@dataclass
class Pipeline:
    """An endless stream of device batches from a DataLoader; `info` goes into the result."""

    loader: DataLoader[Any]
    sampler: DistributedSampler[Any]
    device: torch.device
    finish: Finish | None  # applied on the device to the inputs (None: as they come)
    info: dict[str, Any] = field(default_factory=dict)
    epoch: int = 0
    _iterator: Any = None

    def next_batch(self) -> tuple[Any, Any]:
        """The next (inputs, targets) on the device; a new epoch starts when one ends."""
        if self._iterator is None:
            self._iterator = iter(self.loader)
        try:
            inputs, targets = next(self._iterator)
        except StopIteration:
            self.epoch += 1
            self.sampler.set_epoch(self.epoch)
            self._iterator = iter(self.loader)
            inputs, targets = next(self._iterator)
        inputs, targets = to_device(inputs, self.device), to_device(targets, self.device)
        if self.finish is not None:
            inputs = self.finish(inputs)
        return inputs, targets

    def close(self) -> None:
        """Stop the worker processes now (idempotent)."""
        iterator, self._iterator = self._iterator, None
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()


def _shard_dataset(data: DataConfig, layout: Layout) -> tuple[Dataset[Any], dict[str, Any]]:
    root = Path(data.dir or "").expanduser()
    manifest = read_manifest(root)
    if manifest is None:
        raise DataError(f"data.dir {root}: no {MANIFEST} (the shards were not generated)")
    shards = manifest.get("shards") or []
    paths = [root / str(entry["name"]) for entry in shards]
    shard_bytes = int(manifest["shard_bytes"])
    if layout.record_bytes > shard_bytes:
        raise DataError(
            f"one sample of this model is {layout.record_bytes:,} bytes, more than a "
            f"{data.shard_mb} MB shard: raise data.shard_mb"
        )
    why_not = evict(paths)
    notes = [] if why_not is None else [why_not]
    dataset = ShardRecords([str(p) for p in paths], shard_bytes, layout.record_bytes)
    return dataset, {
        "dataset_bytes": shard_bytes * len(paths),
        "samples": len(dataset),
        "record_bytes": layout.record_bytes,
        "notes": notes,
    }


def _cifar_dataset(data: DataConfig, layout: Layout) -> tuple[Dataset[Any], dict[str, Any]]:
    train = cifar100.load_train(data.dir or "")
    notes = [Finding(code="data.cifar_in_memory")]
    if layout.classes != cifar100.CLASSES:
        classes = {"classes": layout.classes, "dataset_classes": cifar100.CLASSES}
        notes.append(Finding(code="data.labels_mod", figures=classes))
    return CifarImages(train.images, train.labels), {
        "dataset_bytes": train.file_bytes,
        "samples": len(train),
        "record_bytes": cifar100.IMAGE_BYTES + 1,
        "notes": notes,
    }


def build_pipeline(
    data: DataConfig,
    layout: Layout,
    model: str,
    batch_size: int,
    device: torch.device,
    rank: int,
    world_size: int,
    seed: int,
) -> Pipeline:
    """The DataLoader of this rank for `data.source` (disk or cifar100)."""
    reason = unsupported(data.source, model)
    if reason is not None:
        raise DataError(say(reason))
    if data.source == "disk":
        dataset, info = _shard_dataset(data, layout)
        collate: Callable[[list[Any]], Any] = DecodeRecords(layout)
        finish: Finish | None = _uint8_to_unit if layout.task == "classification" else None
    else:
        dataset, info = _cifar_dataset(data, layout)
        collate = CollateImages(layout.classes)
        finish = _cifar_finish(layout.input_shape[-1], device)
    samples = info["samples"]
    if samples // world_size < batch_size:
        raise DataError(
            f"the dataset holds {samples:,} samples of {info['record_bytes']:,} bytes for this "
            f"model: fewer than {world_size} rank(s) x batch {batch_size}; raise "
            "data.num_shards or data.shard_mb"
        )
    pin = data.pin_memory if data.pin_memory is not None else device.type == "cuda"
    workers = data.num_workers
    sampler: DistributedSampler[Any] = DistributedSampler(
        dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed, drop_last=True
    )
    options: dict[str, Any] = {}
    if workers > 0:
        options = {
            "prefetch_factor": data.prefetch_factor,
            "persistent_workers": True,
            "worker_init_fn": _die_with_rank,
        }
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=workers,
        collate_fn=collate,
        pin_memory=pin,
        drop_last=True,
        **options,
    )
    info |= {
        "source": data.source,
        "num_workers": workers,
        "pin_memory": pin,
        "prefetch_factor": data.prefetch_factor if workers > 0 else None,
        "dir": str(Path(data.dir or "").expanduser()),
        "physical_memory_bytes": _physical_memory(),
    }
    pipeline = Pipeline(loader, sampler, device, finish, info)
    atexit.register(pipeline.close)
    return pipeline


def _physical_memory() -> int | None:
    try:
        return int(psutil.virtual_memory().total)
    except (OSError, RuntimeError):
        return None
