"""Train a tiny causal transformer language model with FSDP2 (`fully_shard`), in the shape of
the PyTorch FSDP2 tutorial: shard each block, then the root; one process per device, started
by torchrun, a DistributedSampler splitting the data.

    torchrun --nproc-per-node 2 fsdp2_train.py --epochs 1 --batch-size 16

CUDA (NCCL) when GPUs are visible, CPU (gloo) otherwise. The token sequences are synthetic
(each continues a counting pattern with a random start and stride), made in memory from a
fixed seed, so the loss falls and every run sees the same samples.

--slow-rank R --slow-ms M makes rank R's data loading M ms slower per batch;
--grad-accum K steps the optimizer every K batches.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class CountingSequences(Dataset[dict[str, torch.Tensor]]):
    """Sequences start, start+stride, ... (mod vocab): a model can learn to continue them."""

    def __init__(self, size: int, seq_len: int, vocab: int, decode_ms: float = 0.0) -> None:
        g = torch.Generator().manual_seed(1234)
        start = torch.randint(0, vocab, (size, 1), generator=g)
        stride = torch.randint(1, 5, (size, 1), generator=g)
        self.tokens = (start + stride * torch.arange(seq_len + 1)) % vocab
        self.decode_ms = decode_ms

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if self.decode_ms:
            time.sleep(self.decode_ms / 1000)  # a slow tokenizer
        seq = self.tokens[index]
        return {"input_ids": seq[:-1], "labels": seq[1:]}


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, layers: int, seq_len: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq_len, dim))
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        t = input_ids.shape[1]
        h = self.embed(input_ids) + self.pos[:t]
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=input_ids.device)
        for layer in self.layers:
            h = layer(h, src_mask=mask, is_causal=True)
        # logits as (batch * seq, vocab): what cross_entropy takes, and a fresh tensor, not a
        # view of one (FSDP2 warns about views returned from a sharded module)
        logits: torch.Tensor = self.head(self.norm(h).flatten(0, 1))
        return logits


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16, help="per process")
    p.add_argument("--dataset-size", type=int, default=1024)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step")
    p.add_argument("--log-every", type=int, default=5, help="optimizer steps between prints")
    p.add_argument("--slow-rank", type=int, default=-1, help="this rank loads its data slowly")
    p.add_argument("--slow-ms", type=float, default=0.0, help="extra ms per batch on --slow-rank")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    use_cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if use_cuda:
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)

    vocab = 64
    decode_ms = args.slow_ms / args.batch_size if rank == args.slow_rank else 0.0
    dataset = CountingSequences(args.dataset_size, args.seq_len, vocab, decode_ms)
    sampler: DistributedSampler[int] = DistributedSampler(
        dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0
    )
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = TinyLM(vocab, dim=64, heads=4, layers=2, seq_len=args.seq_len).to(device)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    assert isinstance(model, FSDPModule)  # fully_shard changed its class in place
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for i, batch in enumerate(loader):
            input_ids = batch["input_ids"].to(device)
            labels = batch["labels"].to(device)
            last_micro_batch = (i + 1) % args.grad_accum == 0
            # FSDP2: reduce-scatter gradients only on the micro-batch that ends the step
            model.set_requires_gradient_sync(last_micro_batch)
            logits = model(input_ids)
            loss = F.cross_entropy(logits, labels.flatten())
            (loss / args.grad_accum).backward()
            if not last_micro_batch:
                continue
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            if rank == 0 and step % args.log_every == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")

    if rank == 0:
        print(f"done: {step} steps on {world_size} processes")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
