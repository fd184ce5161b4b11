"""Train a tiny next-token language model with Hugging Face `accelerate`, in the shape of its
`nlp_example.py`: `Accelerator().prepare(model, optimizer, dataloader, scheduler)`, a plain
loop with `accelerator.backward(loss)`, gradient accumulation by `accelerator.accumulate`.
One process per device, started by torchrun (or `accelerate launch`).

    torchrun --nproc-per-node 2 accelerate_train.py --max-steps 40

CPU (gloo) unless GPUs are visible. The batches are dicts of token ids, as a tokenizer's
collator makes them; the sequences are synthetic (each continues a counting pattern with a
random start and stride), made in memory from a fixed seed, so the loss falls and every run
sees the same samples.

--slow-rank R --slow-ms M makes rank R's data loading M ms slower per batch (its Dataset
"tokenizes" each sample slowly); --grad-accum K steps the optimizer every K batches.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch import nn
from torch.utils.data import DataLoader, Dataset


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
    def __init__(self, vocab: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True),
            num_layers=layers,
        )
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq_len = input_ids.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(seq_len, device=input_ids.device)
        out: torch.Tensor = self.head(self.blocks(self.embed(input_ids), mask=mask, is_causal=True))
        return out


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-steps", type=int, default=40, help="optimizer steps")
    p.add_argument("--batch-size", type=int, default=16, help="per process")
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--dataset-size", type=int, default=4096)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--log-every", type=int, default=10, help="optimizer steps between prints")
    p.add_argument("--slow-rank", type=int, default=-1, help="this rank loads its data slowly")
    p.add_argument("--slow-ms", type=float, default=0.0, help="extra ms per batch on --slow-rank")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    accelerator = Accelerator(
        cpu=not torch.cuda.is_available(), gradient_accumulation_steps=args.grad_accum
    )
    set_seed(0)
    vocab = 128
    slow = accelerator.process_index == args.slow_rank
    decode_ms = args.slow_ms / args.batch_size if slow else 0.0
    dataset = CountingSequences(args.dataset_size, args.seq_len, vocab, decode_ms)
    loader = DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers
    )
    model = TinyLM(vocab, dim=64, heads=4, layers=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 5))
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

    model.train()
    step = 0
    while step < args.max_steps:
        for batch in loader:
            with accelerator.accumulate(model):
                logits = model(batch["input_ids"])
                loss = F.cross_entropy(logits.reshape(-1, vocab), batch["labels"].reshape(-1))
                accelerator.backward(loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if not accelerator.sync_gradients:
                continue
            step += 1
            if step % args.log_every == 0:
                accelerator.print(f"step {step} loss {loss.item():.4f}")
            if step == args.max_steps:
                break
    accelerator.print(f"done: {step} steps on {accelerator.num_processes} processes")
    accelerator.end_training()


if __name__ == "__main__":
    main()
