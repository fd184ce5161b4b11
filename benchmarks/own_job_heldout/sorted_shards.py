"""Train a small Transformer encoder on variable-length token sequences with DDP, the data split
between ranks by the script itself: the samples sorted by length (to pad less) and cut into one
contiguous block per rank. That puts the longest sequences on the last rank, which then does
more work every step than the others: a compute imbalance of the job's own making.

    torchrun --nproc-per-node 2 sorted_shards.py [--steps 60] [--shuffle]

--shuffle shuffles before splitting (every rank gets the same mix: balanced). CPU (gloo) or
CUDA (NCCL), whichever is there. Synthetic data from a fixed seed; nothing downloaded.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--min-len", type=int, default=16)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--shuffle", action="store_true", help="shuffle before splitting by rank")
    return p.parse_args()


def pad(batch: list[torch.Tensor]) -> torch.Tensor:
    return nn.utils.rnn.pad_sequence(batch, batch_first=True)


def main() -> None:
    args = parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
    g = torch.Generator().manual_seed(7)
    count = args.steps * args.batch_size * world
    lengths = torch.randint(args.min_len, args.max_len + 1, (count,), generator=g)
    samples = [torch.randint(1, args.vocab, (int(n),), generator=g) for n in lengths]
    order = torch.randperm(count, generator=g) if args.shuffle else lengths.argsort()
    mine = [samples[i] for i in order.chunk(world)[rank].tolist()]
    loader = DataLoader(mine, batch_size=args.batch_size, shuffle=False, collate_fn=pad)

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(args.dim, nhead=4, dim_feedforward=4 * args.dim)
    model = nn.Sequential(
        nn.Embedding(args.vocab, args.dim),
        nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False),
        nn.Linear(args.dim, args.vocab),
    ).to(device)
    ddp = DDP(model, device_ids=[device.index] if cuda else None)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    for step, tokens in enumerate(loader, start=1):
        tokens = tokens.to(device)
        logits = ddp(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if rank == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
