"""A bare, minimal DDP training loop: the yardstick torchscale's harness is compared against.

Run under torchrun. Same model code (torchscale's registry), same synthetic batch, same
optimizer settings as a torchscale cell; nothing else: no per-step timers, no FLOP counting,
no gathering. Throughput = samples of all ranks / barrier-to-barrier wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from torchscale.models import build_model, call_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    bundle = build_model(args.model)
    model = DistributedDataParallel(bundle.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs, targets = bundle.make_batch(args.batch, torch.device("cpu"))

    def step() -> None:
        loss = bundle.loss_fn(call_model(model, inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    dist.barrier()
    wall = time.perf_counter() - start
    if rank == 0:
        result = {
            "samples_per_s": world * args.batch * args.steps / wall,
            "wall_s": wall,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        }
        Path(args.out).write_text(json.dumps(result), encoding="utf-8")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
