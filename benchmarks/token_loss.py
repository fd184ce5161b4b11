"""The eager cells' blockwise token loss against PyTorch's cross entropy, in the same run.

Times forward + backward of the loss alone over (rows, vocab) logits, both sides taking turns,
and counts the bytes autograd keeps from each forward for its backward. Prints the time ratio
blockwise / plain per round and its median, and the kept-bytes ratio. On a GPU the logits are
bf16 under autocast (GPT-2's eager bf16 cell: 8192 rows of 50,257); on CPU fp32 by default.

    python benchmarks/token_loss.py [--rows 8192] [--vocab 50257] [--rounds 5] [--repeats 5] \
        [--device cpu|cuda] [--dtype float32|bfloat16]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from torchscale.rank.models.token_loss import blockwise_token_loss, rows_per_block, token_loss

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _step(loss: Loss, logits: torch.Tensor, targets: torch.Tensor, autocast: bool) -> None:
    leaf = logits.detach().requires_grad_(True)
    with torch.autocast(logits.device.type, torch.bfloat16, enabled=autocast):
        value = loss(leaf, targets)
    value.backward()


def seconds(loss: Loss, logits: torch.Tensor, targets: torch.Tensor, repeats: int) -> float:
    """Median seconds of one forward + backward of `loss` over `repeats` (after one warm-up)."""
    autocast = logits.dtype == torch.bfloat16
    _step(loss, logits, targets, autocast)
    times = []
    for _ in range(repeats):
        if logits.is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        _step(loss, logits, targets, autocast)
        if logits.is_cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def kept_bytes(loss: Loss, logits: torch.Tensor, targets: torch.Tensor) -> int:
    """Bytes autograd keeps from the loss's forward for its backward."""
    kept: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        kept[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    leaf = logits.detach().requires_grad_(True)
    with (
        torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor),
        torch.autocast(logits.device.type, torch.bfloat16, enabled=leaf.dtype == torch.bfloat16),
    ):
        loss(leaf, targets)
    return sum(kept.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16"])
    args = parser.parse_args()
    dtype_name = args.dtype or ("bfloat16" if args.device == "cuda" else "float32")
    dtype = getattr(torch, dtype_name)
    device = torch.device(args.device)
    logits = torch.randn((args.rows, args.vocab), device=device).to(dtype)
    targets = torch.randint(0, args.vocab, (args.rows,), device=device)
    blocks = -(-args.rows // rows_per_block(args.vocab))
    ratios = []
    for round_ in range(1, args.rounds + 1):
        plain = seconds(token_loss, logits, targets, args.repeats)
        blockwise = seconds(blockwise_token_loss, logits, targets, args.repeats)
        ratios.append(blockwise / plain)
        print(
            f"round {round_}: plain {plain * 1e3:.1f} ms, blockwise {blockwise * 1e3:.1f} ms, "
            f"ratio {blockwise / plain:.3f}",
            flush=True,
        )
    plain_kept = kept_bytes(token_loss, logits, targets)
    blockwise_kept = kept_bytes(blockwise_token_loss, logits, targets)
    print(
        f"{args.rows} x {args.vocab} {dtype_name} logits on {args.device}, {blocks} block(s): "
        f"time blockwise / plain median {statistics.median(ratios):.3f} "
        f"(rounds {min(ratios):.3f}-{max(ratios):.3f}); kept for backward "
        f"{blockwise_kept / 2**20:,.0f} MiB against {plain_kept / 2**20:,.0f} MiB "
        f"(ratio {blockwise_kept / plain_kept:.2f})"
    )


if __name__ == "__main__":
    main()
