"""A DDP training script whose rank 0 alone evaluates on a held-out batch every Nth optimizer
step (under torch.no_grad, as users write it), the other rank going on to its next step and
waiting at the all-reduce. Held out: never run while the probe or the judge was tuned
(benchmarks/own_job_rates.py).

    torchrun --nproc-per-node 2 rank0_eval.py [--steps 60] [--every 5]
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--every", type=int, default=5, help="optimizer steps per evaluation")
    parser.add_argument("--eval-batches", type=int, default=24)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(128, 1024), nn.GELU(), nn.Linear(1024, 10))
    model = DistributedDataParallel(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    train = torch.utils.data.TensorDataset(torch.randn(8192, 128), torch.randint(0, 10, (8192,)))
    sampler = torch.utils.data.distributed.DistributedSampler(train, drop_last=True)
    loader = iter(torch.utils.data.DataLoader(train, batch_size=32, sampler=sampler))
    held_out = torch.randn(args.eval_batches * 64, 128)
    for step in range(args.steps):
        x, y = next(loader)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if rank == 0 and (step + 1) % args.every == 0:
            with torch.no_grad():
                for batch in held_out.split(64):
                    net(batch).argmax(dim=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
