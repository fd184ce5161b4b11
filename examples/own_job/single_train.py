"""Fit a small MLP regressor in one process: the plain PyTorch training loop, no distribution.

    python single_train.py --epochs 2 --batch-size 64

On a GPU when one is visible, on the CPU otherwise. The data is synthetic (a noisy smooth
function of the inputs), made in memory from a fixed seed.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_data(size: int, features: int) -> TensorDataset:
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(size, features, generator=g)
    w = torch.randn(features, 1, generator=g) / features**0.5
    y = torch.sin(x @ w) + 0.05 * torch.randn(size, 1, generator=g)
    return TensorDataset(x, y)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--dataset-size", type=int, default=2048)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step")
    p.add_argument("--log-every", type=int, default=10, help="optimizer steps between prints")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)

    loader = DataLoader(make_data(args.dataset_size, 32), batch_size=args.batch_size, shuffle=True)
    model = nn.Sequential(
        nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 1)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    step = 0
    for epoch in range(args.epochs):
        model.train()
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = F.mse_loss(model(x), y)
            (loss / args.grad_accum).backward()
            if (i + 1) % args.grad_accum:
                continue
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            if step % args.log_every == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
    print(f"done: {step} steps")


if __name__ == "__main__":
    main()
