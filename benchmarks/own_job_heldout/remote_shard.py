"""Train a small MLP regressor with DDP on streamed shards, each rank reading its own shard of
records through an IterableDataset, as jobs that stream from object storage do. One rank's
shard lives on a slower store (--remote-rank R --fetch-ms M: M ms more to fetch each block of
records): that rank waits for its data every step, and the others wait for it.

    torchrun --nproc-per-node 2 remote_shard.py [--steps 60] [--remote-rank 1 --fetch-ms 25]

CPU (gloo) or CUDA (NCCL). Synthetic records from a fixed seed per shard.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset


class ShardStream(IterableDataset[tuple[torch.Tensor, torch.Tensor]]):
    """Blocks of records fetched one at a time from the shard's store."""

    def __init__(self, shard: int, blocks: int, block: int, fetch_ms: float) -> None:
        self.shard, self.blocks, self.block, self.fetch_ms = shard, blocks, block, fetch_ms

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        g = torch.Generator().manual_seed(100 + self.shard)
        for _ in range(self.blocks):
            if self.fetch_ms:
                time.sleep(self.fetch_ms / 1000)  # the slower store's round trip
            x = torch.randn(self.block, 32, generator=g)
            y = x.sum(dim=1, keepdim=True)
            yield from zip(x, y, strict=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--remote-rank", type=int, default=-1)
    p.add_argument("--fetch-ms", type=float, default=0.0)
    args = p.parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
    fetch = args.fetch_ms if rank == args.remote_rank else 0.0
    stream = ShardStream(rank, blocks=args.steps, block=args.batch_size, fetch_ms=fetch)
    loader = DataLoader(stream, batch_size=args.batch_size)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 1)).to(device)
    ddp = DDP(model, device_ids=[device.index] if cuda else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-2, momentum=0.9)
    for step, (x, y) in enumerate(loader, start=1):
        loss = nn.functional.mse_loss(ddp(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if rank == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
