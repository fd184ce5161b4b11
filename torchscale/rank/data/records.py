"""How a model's batch is read from bytes: the record layout of each task, and its decoding.

The layouts are docs/data.md's table ("The record of each model"); a record never straddles two
shards, and what reaches the device has exactly the shapes and dtypes of the model's synthetic
batch. Images travel as uint8 (a quarter of float32's bytes over the host-device link) and
become float32 on the device. Decoding runs in the DataLoader workers, a whole batch at once.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from torchscale.contracts.model_specs.spec import Task
from torchscale.rank.models.token_loss import IGNORE_INDEX

LABEL_BYTES = 2
MASK_BELOW = 38  # mask byte < this: a masked-LM target (38 / 256 = 14.8 %)


@dataclass(frozen=True)
class Layout:
    """One model's record: its task, per-sample input shape, and class count or vocabulary."""

    task: Task
    input_shape: tuple[int, ...]  # classification: the input; token tasks: (seq_len,)
    classes: int  # classification: classes; token tasks: vocabulary size

    @property
    def token_bytes(self) -> int:
        return 2 if self.classes <= 2**16 else 4

    @property
    def seq_len(self) -> int:
        return self.input_shape[0]

    @property
    def record_bytes(self) -> int:
        if self.task == "classification":
            return math.prod(self.input_shape) + LABEL_BYTES
        tokens = {
            "next-token": self.seq_len + 1,
            "masked-tokens": self.seq_len,
            "seq2seq": 2 * self.seq_len + 1,
        }[self.task]
        extra = self.seq_len if self.task == "masked-tokens" else 0
        return tokens * self.token_bytes + extra


def _tokens(block: np.ndarray, layout: Layout) -> torch.Tensor:
    dtype = "<u2" if layout.token_bytes == 2 else "<u4"
    ids = np.ascontiguousarray(block).view(dtype).astype(np.int64) % layout.classes
    return torch.from_numpy(ids)


def decode(records: np.ndarray, layout: Layout) -> tuple[Any, torch.Tensor]:
    """(inputs, targets) of a batch from its (B, record_bytes) uint8 records (on the host)."""
    batch = records.shape[0]
    if layout.task == "classification":
        size = math.prod(layout.input_shape)
        inputs = np.ascontiguousarray(records[:, :size]).reshape(batch, *layout.input_shape)
        labels = np.ascontiguousarray(records[:, size : size + LABEL_BYTES]).view("<u2")
        targets = torch.from_numpy(labels.reshape(batch).astype(np.int64) % layout.classes)
        return torch.from_numpy(inputs), targets
    seq = layout.seq_len
    width = layout.token_bytes
    if layout.task == "next-token":
        tokens = _tokens(records[:, : (seq + 1) * width], layout)
        return tokens[:, :-1], tokens[:, 1:]
    if layout.task == "masked-tokens":
        tokens = _tokens(records[:, : seq * width], layout)
        chosen = torch.from_numpy(records[:, seq * width : seq * width + seq] < MASK_BELOW)
        chosen[:, 0] = True
        return tokens, torch.where(chosen, tokens, torch.full_like(tokens, IGNORE_INDEX))
    tokens = _tokens(records[:, : (2 * seq + 1) * width], layout)
    source, target = tokens[:, :seq], tokens[:, seq:]
    return (source, target[:, :-1]), target[:, 1:]


class ShardRecords(torch.utils.data.Dataset[bytes]):
    """Sample i = record i of the shards, read with pread (each worker opens its own files)."""

    def __init__(self, paths: list[str], shard_bytes: int, record_bytes: int) -> None:
        if record_bytes > shard_bytes:
            raise ValueError("a record is larger than a shard")
        self.paths = paths
        self.record_bytes = record_bytes
        self.per_shard = shard_bytes // record_bytes
        self._fds: dict[int, int] = {}
        self._pid = 0

    def __len__(self) -> int:
        return self.per_shard * len(self.paths)

    def _fd(self, shard: int) -> int:
        if self._pid != os.getpid():  # a forked worker: its own descriptors
            self._fds, self._pid = {}, os.getpid()
        fd = self._fds.get(shard)
        if fd is None:
            fd = self._fds[shard] = os.open(self.paths[shard], os.O_RDONLY)
        return fd

    def __getitem__(self, index: int) -> bytes:
        shard, slot = divmod(index, self.per_shard)
        data = os.pread(self._fd(shard), self.record_bytes, slot * self.record_bytes)
        if len(data) != self.record_bytes:
            raise OSError(f"{self.paths[shard]}: short read at record {slot} (file truncated?)")
        return data


class DecodeRecords:
    """collate_fn: a list of raw records -> (inputs, targets) (a class: picklable)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def __call__(self, samples: list[bytes]) -> tuple[Any, torch.Tensor]:
        records = np.frombuffer(b"".join(samples), dtype=np.uint8)
        return decode(records.reshape(len(samples), self.layout.record_bytes), self.layout)


class CifarImages(torch.utils.data.Dataset[tuple[Any, int]]):
    """Sample i = CIFAR-100 training image i (uint8 3x32x32) and its fine label."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images = images
        self.labels = labels

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, index: int) -> tuple[Any, int]:
        return self.images[index], int(self.labels[index])


class CollateImages:
    """collate_fn: CIFAR samples -> (uint8 (B, 3, 32, 32), int64 labels mod `classes`)."""

    def __init__(self, classes: int) -> None:
        self.classes = classes

    def __call__(self, samples: list[tuple[Any, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.from_numpy(np.stack([image for image, _ in samples]))
        labels = torch.tensor([label for _, label in samples], dtype=torch.int64) % self.classes
        return images, labels
