"""Train a small MLP classifier with DistributedDataParallel, the way the PyTorch DDP tutorial
does: one process per device, started by torchrun, a DistributedSampler splitting the data.

    torchrun --nproc-per-node 2 ddp_train.py --epochs 2 --batch-size 32

CUDA (NCCL) when GPUs are visible, CPU (gloo) otherwise. The data is synthetic and made in
memory from a fixed seed, so every run sees the same samples.

--slow-rank R --slow-ms M makes rank R's data loading M ms slower per batch (its Dataset
"decodes" each sample slowly): the kind of input-pipeline problem one rank of a real job has.
--grad-accum K steps the optimizer every K batches. --dropout P adds dropout after each hidden
layer. --metrics FILE has rank 0 log one JSON line per optimizer step, as a training script's
metrics log does: its loss, and the time since the previous step ended, on the wall clock and
the process's CPU clock (the latter tells the script's own work from waiting for a core).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class SyntheticClassification(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Random feature vectors; the label is a fixed linear function of them, so the loss falls."""

    def __init__(self, size: int, features: int, classes: int, decode_ms: float = 0.0) -> None:
        g = torch.Generator().manual_seed(1234)
        self.x = torch.randn(size, features, generator=g)
        teacher = torch.randn(features, classes, generator=g)
        self.y = (self.x @ teacher).argmax(dim=1)
        self.decode_ms = decode_ms

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.decode_ms:
            time.sleep(self.decode_ms / 1000)  # a slow decode, e.g. images from a network disk
        return self.x[index], self.y[index]


class MLP(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.net(x)
        return out


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32, help="per process")
    p.add_argument("--dataset-size", type=int, default=2048)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--log-every", type=int, default=10, help="optimizer steps between prints")
    p.add_argument("--slow-rank", type=int, default=-1, help="this rank loads its data slowly")
    p.add_argument("--slow-ms", type=float, default=0.0, help="extra ms per batch on --slow-rank")
    p.add_argument("--metrics", help="rank 0 appends one JSON line per optimizer step here")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    use_cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if use_cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)

    features, classes = 64, 10
    decode_ms = args.slow_ms / args.batch_size if rank == args.slow_rank else 0.0
    dataset = SyntheticClassification(args.dataset_size, features, classes, decode_ms)
    sampler: DistributedSampler[int] = DistributedSampler(
        dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0
    )
    loader = DataLoader(
        dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers
    )

    model = MLP(features, args.hidden, classes, args.dropout).to(device)
    ddp_model = DDP(model, device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.AdamW(ddp_model.parameters(), lr=args.lr)

    metrics = Path(args.metrics).open("a") if args.metrics and rank == 0 else None  # noqa: SIM115
    step = 0
    last, last_cpu = time.perf_counter(), time.process_time()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            last_micro_batch = (i + 1) % args.grad_accum == 0
            if last_micro_batch:
                loss = F.cross_entropy(ddp_model(x), y) / args.grad_accum
                loss.backward()
            else:
                with ddp_model.no_sync():  # accumulate locally; all-reduce on the last one
                    loss = F.cross_entropy(ddp_model(x), y) / args.grad_accum
                    loss.backward()
            if not last_micro_batch:
                continue
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if metrics is not None:
                now, cpu = time.perf_counter(), time.process_time()
                record = {"step": step, "loss": loss.item() * args.grad_accum}
                record |= {"step_s": now - last, "cpu_s": cpu - last_cpu}
                metrics.write(json.dumps(record) + "\n")
                last, last_cpu = now, cpu
            if rank == 0 and step % args.log_every == 0:
                print(f"epoch {epoch} step {step} loss {loss.item() * args.grad_accum:.4f}")

    if metrics is not None:
        metrics.close()
    if rank == 0:
        print(f"done: {step} steps on {world_size} processes")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
