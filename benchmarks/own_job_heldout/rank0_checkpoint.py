"""A DDP training script whose rank 0 alone writes a checkpoint every Nth optimizer step, as a
user writes it (gradient accumulation under no_sync; the checkpoint torch.save'd to a local
file, padded to a few tens of ms so a 2-core machine shows it). Held out: never run while
the probe or the judge was tuned (benchmarks/own_job_rates.py).

    torchrun --nproc-per-node 2 rank0_checkpoint.py [--steps 60] [--every 4] [--accum 2]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--every", type=int, default=4, help="optimizer steps per checkpoint")
    parser.add_argument("--accum", type=int, default=2, help="micro-batches per step")
    parser.add_argument("--save-ms", type=float, default=50.0, help="the checkpoint's floor")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(torch.randn(4096, 256), torch.randint(0, 10, (4096,)))
    sampler = torch.utils.data.distributed.DistributedSampler(data, drop_last=True)
    loader = torch.utils.data.DataLoader(data, batch_size=16, sampler=sampler, drop_last=True)
    batches = iter(loader)
    folder = tempfile.mkdtemp(prefix=f"ckpt-rank{rank}-")
    for step in range(args.steps):
        for micro in range(args.accum):
            x, y = next(batches)
            sync = micro == args.accum - 1
            with contextlib.nullcontext() if sync else model.no_sync():
                nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if rank == 0 and (step + 1) % args.every == 0:
            start = time.perf_counter()
            torch.save(model.module.state_dict(), Path(folder) / "last.pt")
            time.sleep(max(0.0, args.save_ms / 1000 - (time.perf_counter() - start)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
