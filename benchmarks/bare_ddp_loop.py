"""A bare, minimal DDP training loop: the yardstick torchscale's harness is compared against.

Run under torchrun. Same model code (torchscale's registry), same synthetic batch, same
optimizer settings as a torchscale cell (AdamW, fused; bf16 = autocast, as a DDP cell; no DDP
wrapper at world size 1, as a cell);
nothing else: no per-step timers, no FLOP counting, no gathering. Throughput = samples of all
ranks / barrier-to-barrier wall time (on CUDA, with a synchronize before each barrier).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from torchscale.rank.models import build_model, call_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    args = parser.parse_args()

    cuda = args.device == "cuda"
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else None
    if device is not None:
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True  # as a torchscale cell on CUDA
        dist.init_process_group("nccl", device_id=device)
    else:
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    bundle = build_model(args.model)
    module = bundle.model.to(device or "cpu")
    model = (  # as a cell: a lone rank has no peer, so no DDP wrapper
        DistributedDataParallel(module, device_ids=[device] if device is not None else None)
        if world > 1
        else module
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    inputs, targets = bundle.make_batch(args.batch, device or torch.device("cpu"))
    autocast = (
        torch.autocast(device_type=args.device, dtype=torch.bfloat16)
        if args.precision == "bf16"
        else contextlib.nullcontext()
    )

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()

    def step() -> None:
        with autocast:
            loss = (bundle.eager_loss_fn or bundle.loss_fn)(call_model(model, inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    sync()
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
