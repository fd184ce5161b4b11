"""The token loss of the language models, and its memory-lean form for eager cells.

Why (docs/models.md, "The loss of an eager cell"): eager `cross_entropy` under bf16 autocast
copies the logits to fp32, keeps their fp32 log-softmax for backward and builds an fp32 gradient
of the same size, where a compiled cell has inductor fuse all of it. `blockwise_token_loss`
computes the same mean loss a block of rows at a time and forms each block's gradient in forward
(softmax minus one-hot over the real targets, divided by their count) straight into a buffer of
the logits' dtype, which backward only scales: fp32 lives one block (`block_bytes`) at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100  # targets with this value carry no loss (the convention of F.cross_entropy)
BLOCK_BYTES = 256 * 2**20  # the fp32 logits of one block: GPT-2's 8192 rows go in 7 blocks


def token_loss(logits: Any, targets: Any) -> torch.Tensor:
    """Cross entropy over every (batch, position) of `(B, T, V)` logits against `(B, T)` ids."""
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX
    )


def rows_per_block(vocab: int, block_bytes: int = BLOCK_BYTES) -> int:
    """How many rows of `vocab` fp32 logits fit in `block_bytes` (at least one)."""
    return max(1, block_bytes // (4 * vocab))


class _BlockwiseCrossEntropy(torch.autograd.Function):
    """Mean cross entropy of 2-D logits, its gradient formed block by block in forward."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor, rows: int) -> torch.Tensor:
        real = targets != IGNORE_INDEX
        count = real.sum().clamp(min=1).to(torch.float32)  # on the device: no host sync
        picked_targets = torch.where(real, targets, 0)[:, None]
        weight = real.to(torch.float32) / count  # d(mean loss) / d(row loss)
        grad = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
        total = torch.zeros((), dtype=torch.float32, device=logits.device)
        for start in range(0, logits.shape[0], rows):
            end = start + rows
            log_probs = torch.log_softmax(logits[start:end].float(), dim=-1)
            picked = log_probs.gather(1, picked_targets[start:end])
            total = total - (picked.squeeze(1) * real[start:end]).sum()
            block = log_probs.exp_()  # softmax, in place of the log-probabilities
            block.scatter_add_(1, picked_targets[start:end], torch.full_like(picked, -1.0))
            grad[start:end] = block.mul_(weight[start:end, None])
        ctx.save_for_backward(grad)
        ctx.used = False
        return total / count

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if ctx.used:  # the buffer is scaled in place: a second backward would scale it twice
            raise RuntimeError("the blockwise token loss takes one backward per forward")
        ctx.used = True
        (grad,) = ctx.saved_tensors
        return grad.mul_(grad_output.to(grad.dtype)), None, None


def blockwise_token_loss(logits: Any, targets: Any, block_bytes: int = BLOCK_BYTES) -> torch.Tensor:
    """`token_loss`, computed a block of rows at a time with its gradient formed in forward
    (the module docstring says why). One block when the logits are small: the plain loss."""
    flat = logits.reshape(-1, logits.shape[-1])
    rows = rows_per_block(flat.shape[-1], block_bytes)
    if flat.shape[0] <= rows or not flat.requires_grad:
        # in fp32 as the blocks are, with or without autocast (FSDP's mixed precision runs none)
        return token_loss(logits.float(), targets)
    loss: torch.Tensor = _BlockwiseCrossEntropy.apply(  # type: ignore[no-untyped-call]
        flat, targets.reshape(-1), rows
    )
    return loss


@dataclass(frozen=True)
class TokenLoss:
    """The token loss over the first `vocab_size` logits: a model with a padded vocabulary
    (torchscale/rank/models/workload.py) gives more logits than tokens, and the pad ones must not
    enter the softmax, so the loss, and every real weight's gradient, are the unpadded
    model's and the pad rows get none. Calling it gives the plain loss, which torch.compile
    fuses; `eager` is the same loss for cells that run without compile."""

    vocab_size: int | None = None  # None: every logit is a real token
    block_bytes: int = BLOCK_BYTES

    def _real(self, logits: Any) -> Any:
        if self.vocab_size is not None and logits.shape[-1] > self.vocab_size:
            return logits[..., : self.vocab_size]
        return logits

    def __call__(self, logits: Any, targets: Any) -> torch.Tensor:
        return token_loss(self._real(logits), targets)

    def eager(self, logits: Any, targets: Any) -> torch.Tensor:
        return blockwise_token_loss(self._real(logits), targets, self.block_bytes)
