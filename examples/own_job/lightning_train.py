"""Train a tiny next-token language model with PyTorch Lightning, in the shape of Lightning's
own demos: a LightningModule with `training_step` and `configure_optimizers`, a DataLoader,
and `Trainer(...).fit`. Lightning steps the optimizer with a closure that runs the forward
and backward inside `optimizer.step(closure)`.

    torchrun --nproc-per-node 2 lightning_train.py --max-steps 40
    python lightning_train.py --devices 2 --max-steps 40   # Lightning starts the processes

Under torchrun Lightning takes the ranks from the environment (TorchElasticEnvironment);
started with plain `python`, it launches the other processes itself (its subprocess
launcher). CPU (gloo) unless GPUs are visible. The token sequences are synthetic (each
continues a counting pattern with a random start and stride), made in memory from a fixed
seed, so the loss falls and every run sees the same samples.

--slow-rank R --slow-ms M makes rank R's data loading M ms slower per batch (its Dataset
"tokenizes" each sample slowly); --grad-accum K steps the optimizer every K batches.
"""

from __future__ import annotations

import argparse
import time

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class CountingSequences(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Sequences start, start+stride, ... (mod vocab): a model can learn to continue them."""

    def __init__(self, size: int, seq_len: int, vocab: int, decode_ms: float = 0.0) -> None:
        g = torch.Generator().manual_seed(1234)
        start = torch.randint(0, vocab, (size, 1), generator=g)
        stride = torch.randint(1, 5, (size, 1), generator=g)
        self.tokens = (start + stride * torch.arange(seq_len + 1)) % vocab
        self.decode_ms = decode_ms

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.decode_ms:
            time.sleep(self.decode_ms / 1000)  # a slow tokenizer
        seq = self.tokens[index]
        return seq[:-1], seq[1:]


class LanguageModel(L.LightningModule):
    def __init__(self, vocab: int, dim: int, heads: int, layers: int, lr: float) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True),
            num_layers=layers,
        )
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seq_len = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(seq_len, device=tokens.device)
        out: torch.Tensor = self.head(self.blocks(self.embed(tokens), mask=mask, is_causal=True))
        return out

    def training_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> torch.Tensor:
        inputs, targets = batch
        logits = self(inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-steps", type=int, default=40, help="optimizer steps")
    p.add_argument("--devices", type=int, default=2, help="processes (torchrun's, or Lightning's)")
    p.add_argument("--batch-size", type=int, default=16, help="per process")
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--dataset-size", type=int, default=4096)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--root-dir", default="lightning_out", help="Lightning's logs")
    p.add_argument("--slow-rank", type=int, default=-1, help="this rank loads its data slowly")
    p.add_argument("--slow-ms", type=float, default=0.0, help="extra ms per batch on --slow-rank")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    L.seed_everything(0)
    trainer = L.Trainer(
        accelerator="auto",
        devices=args.devices,
        strategy="ddp",
        max_steps=args.max_steps,
        accumulate_grad_batches=args.grad_accum,
        log_every_n_steps=10,
        enable_checkpointing=False,
        enable_progress_bar=False,
        default_root_dir=args.root_dir,
    )
    vocab = 128
    model = LanguageModel(vocab, dim=64, heads=4, layers=2, lr=args.lr)
    slow = trainer.global_rank == args.slow_rank
    decode_ms = args.slow_ms / args.batch_size if slow else 0.0
    dataset = CountingSequences(args.dataset_size, args.seq_len, vocab, decode_ms)
    loader = DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers
    )
    trainer.fit(model, train_dataloaders=loader)
    if trainer.is_global_zero:
        loss = trainer.callback_metrics["train_loss"]
        print(f"done: {trainer.global_step} steps, train loss {loss:.4f}")


if __name__ == "__main__":
    main()
