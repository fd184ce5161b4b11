"""A bare all_reduce loop: the yardstick `torchscale comm` is compared against.

Run under torchrun. One buffer of SIZE bytes, warm-up, a barrier, ITERS all_reduce calls back to
back, a synchronize and a barrier; time per op = window / ITERS on each rank, averaged over the
ranks (nccl-tests' definition). No per-iteration timestamps, no check, no gathering of rows.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist


def init(device_kind: str) -> torch.device:
    """NCCL on this rank's GPU, or gloo on CPU."""
    if device_kind == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
        return device
    dist.init_process_group("gloo")
    return torch.device("cpu")


def time_per_op(size: int, warmup: int, iters: int, device: torch.device) -> float:
    """Seconds per all_reduce of `size` bytes, averaged over the ranks (every rank returns it)."""
    cuda = device.type == "cuda"
    buffer = torch.zeros(size // 4, dtype=torch.float32, device=device)

    def settle() -> None:
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()

    for _ in range(warmup):
        dist.all_reduce(buffer)
    settle()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buffer)
    if cuda:
        torch.cuda.synchronize()
    window = time.perf_counter() - start
    times: list[float] = [0.0] * dist.get_world_size()
    dist.all_gather_object(times, window / iters)
    return sum(times) / len(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    device = init(args.device)
    time_s = time_per_op(args.bytes, args.warmup, args.iters, device)
    if dist.get_rank() == 0:
        Path(args.out).write_text(json.dumps({"time_s": time_s}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
