"""A tiny 2-rank CPU (gloo) training loop that annotates itself with NVTX, for
tests/orchestration/test_nsys.py.

Run under `nsys profile ... torchrun --standalone --nproc-per-node 2 tests/nsys_worker.py`.
Every rank emits one mark `torchscale:rank=<r>`, then per step a start/end range
`ProfilerStep#<n>` and push/pop phase ranges `torchscale:data|forward|backward|optimizer`
(the two NVTX range styles the reader must handle). Rank `--slow-rank` sleeps `--delay-ms` in
its backward phase inside a nested `torchscale:injected_delay` range. Each step all-reduces the
gradients with gloo, so the fast rank waits for the slow one there.

Needs the `nvtx` package below 0.2.12 (newer versions record nothing with nsys 2022.4).
"""

from __future__ import annotations

import argparse
import time

import nvtx
import torch
import torch.distributed as dist

DOMAIN = "torchscale"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--slow-rank", type=int, default=1)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--no-rank-mark", action="store_true")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if not args.no_rank_mark:
        nvtx.mark(message=f"torchscale:rank={rank}", domain=DOMAIN)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    world = dist.get_world_size()

    for step in range(args.steps):
        step_range = nvtx.start_range(message=f"ProfilerStep#{step}", domain=DOMAIN)
        nvtx.push_range(message="torchscale:data", domain=DOMAIN)
        x = torch.randn(32, 64)
        y = torch.randn(32, 8)
        nvtx.pop_range(domain=DOMAIN)

        nvtx.push_range(message="torchscale:forward", domain=DOMAIN)
        loss = torch.nn.functional.mse_loss(model(x), y)
        nvtx.pop_range(domain=DOMAIN)

        nvtx.push_range(message="torchscale:backward", domain=DOMAIN)
        opt.zero_grad()
        loss.backward()
        if rank == args.slow_rank and args.delay_ms > 0:
            nvtx.push_range(message="torchscale:injected_delay", domain=DOMAIN)
            time.sleep(args.delay_ms / 1000.0)
            nvtx.pop_range(domain=DOMAIN)
        nvtx.pop_range(domain=DOMAIN)

        # gradient sync outside the phases: the fast rank waits here for the slow one
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None])
        dist.all_reduce(flat)
        flat /= world

        nvtx.push_range(message="torchscale:optimizer", domain=DOMAIN)
        offset = 0
        for p in model.parameters():
            if p.grad is not None:
                n = p.grad.numel()
                p.grad.copy_(flat[offset : offset + n].view_as(p.grad))
                offset += n
        opt.step()
        nvtx.pop_range(domain=DOMAIN)
        nvtx.end_range(step_range)

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
