"""A plug-in model that brings its own DataLoader (docs/models.md, "A plug-in's own batches").

Run from the repository root; examples/plugin_dataloader.yaml puts examples/ on the ranks'
PYTHONPATH, so the model's name is `plugin_dataloader:build`:

    torchscale benchmark -c examples/plugin_dataloader.yaml -o results

The factory returns `(model, make_batch, loss_fn, batches)`. `make_batch` still gives the
shapes (FLOPs are counted on the meta device from it); `batches(batch_size, device)` returns the
DataLoader the training steps draw from, one batch per micro-batch, inside the data phase. Each
sample costs `decode_ms` of CPU in the loader's worker (a stand-in for decoding and augmenting),
`slow_decode_ms` on rank `slow_rank`: that rank's data wait, and the straggler it makes, show in
the result (`data.wait_s_per_rank`, the steps table's `data_s`, the straggler verdict).
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class DecodedSamples(Dataset[tuple[torch.Tensor, int]]):
    """Feature vectors with a class label, each costing `decode_ms` to produce."""

    def __init__(self, samples: int, features: int, classes: int, decode_ms: float) -> None:
        self.samples, self.features, self.classes = samples, features, classes
        self.decode_ms = decode_ms

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if self.decode_ms > 0:
            time.sleep(self.decode_ms / 1000)  # the work a real loader does per sample
        generator = torch.Generator().manual_seed(index)
        return torch.randn(self.features, generator=generator), index % self.classes


def build(
    features: int = 32,
    hidden: int = 128,
    classes: int = 10,
    samples: int = 4096,
    num_workers: int = 1,
    decode_ms: float = 0.05,
    slow_rank: int = -1,
    slow_decode_ms: float = 1.0,
) -> tuple[nn.Module, Any, Any, Any]:
    model = nn.Sequential(
        nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, classes),
    )  # fmt: skip

    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        # the batch's shapes: what FLOP counting and memory estimates read
        inputs = torch.randn(batch_size, features, device=device)
        return inputs, torch.randint(classes, (batch_size,), device=device)

    def batches(batch_size: int, device: torch.device) -> DataLoader[Any]:
        # called once per rank inside the cell, with its process group up: the sampler takes
        # this rank's share; torchscale calls sampler.set_epoch at each new epoch
        rank = dist.get_rank() if dist.is_initialized() else 0
        cost = slow_decode_ms if rank == slow_rank else decode_ms
        dataset = DecodedSamples(samples, features, classes, cost)
        sampler: DistributedSampler[Any] | None = None
        if dist.is_initialized():
            sampler = DistributedSampler(dataset, drop_last=True)
        return DataLoader(
            dataset,
            batch_size=batch_size,
            sampler=sampler,
            shuffle=sampler is None,
            num_workers=num_workers,
            persistent_workers=num_workers > 0,
            pin_memory=device.type == "cuda",
            drop_last=True,
        )

    return model, make_batch, F.cross_entropy, batches
