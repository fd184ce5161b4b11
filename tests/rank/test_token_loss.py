"""The blockwise token loss of eager cells: the same loss and gradient as PyTorch's
cross entropy, with less kept for backward."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from torchscale.rank.models import training_tasks
from torchscale.rank.models.token_loss import (
    IGNORE_INDEX,
    TokenLoss,
    blockwise_token_loss,
    rows_per_block,
    token_loss,
)

VOCAB = 97  # odd: blocks never line up with the rows


def _case(
    dtype: torch.dtype, ignored: float = 0.3, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn((3, 41, VOCAB), generator=generator).mul(3).to(dtype)
    targets = torch.randint(0, VOCAB, (3, 41), generator=generator)
    targets[torch.rand((3, 41), generator=generator) < ignored] = IGNORE_INDEX
    return logits, targets


def _loss_and_grad(
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    logits: torch.Tensor,
    targets: torch.Tensor,
    scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss as the trainer calls it (under bf16 autocast when the logits are bf16, where
    cross entropy computes in fp32) and the logits' gradient."""
    leaf = logits.clone().requires_grad_(True)
    with torch.autocast("cpu", torch.bfloat16, enabled=logits.dtype == torch.bfloat16):
        value = loss(leaf, targets)
    (value * scale).backward()
    assert leaf.grad is not None
    return value.detach(), leaf.grad


# blocks of 1 row, of 5 rows, and one row per block less than all 123
@pytest.mark.parametrize("block_rows", [1, 5, 122])
def test_blockwise_loss_and_gradient_equal_cross_entropys_in_fp32(block_rows: int) -> None:
    logits, targets = _case(torch.float32)
    block_bytes = block_rows * 4 * VOCAB
    assert rows_per_block(VOCAB, block_bytes) == block_rows

    def blockwise(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return blockwise_token_loss(x, t, block_bytes)

    expected, expected_grad = _loss_and_grad(token_loss, logits, targets, scale=0.25)
    got, got_grad = _loss_and_grad(blockwise, logits, targets, scale=0.25)  # grad accumulation
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got_grad, expected_grad, rtol=1e-5, atol=1e-7)
    ignored = targets == IGNORE_INDEX
    assert ignored.any() and torch.count_nonzero(got_grad[ignored]) == 0  # no loss, no gradient


def test_blockwise_gradient_is_bf16_within_one_rounding_of_cross_entropys() -> None:
    """Under bf16 the logits' gradient is bf16 either way: cross entropy forms it in fp32 and
    casts it once; the blockwise loss casts it when it writes the buffer and scales it by the
    backward's factor there, so the two differ by at most a rounding of bf16."""
    logits, targets = _case(torch.bfloat16)

    def blockwise(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return blockwise_token_loss(x, t, 16 * 4 * VOCAB)

    expected, expected_grad = _loss_and_grad(token_loss, logits, targets)
    got, got_grad = _loss_and_grad(blockwise, logits, targets)
    assert got_grad.dtype == torch.bfloat16
    assert expected.dtype == got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got_grad, expected_grad, rtol=2**-7, atol=1e-6)


def test_all_targets_ignored_gives_zero_not_nan() -> None:
    """A batch with no target at all (cross entropy gives nan) trains nothing: loss 0."""
    logits, targets = _case(torch.float32, ignored=1.0)
    got, grad = _loss_and_grad(lambda x, t: blockwise_token_loss(x, t, 4 * VOCAB), logits, targets)
    assert got.item() == 0.0 and torch.count_nonzero(grad) == 0


def test_blockwise_loss_refuses_a_second_backward() -> None:
    """Its backward scales the gradient buffer in place: a second one would be wrong, so it
    is refused rather than silently doubled."""
    logits, targets = _case(torch.float32)
    leaf = logits.requires_grad_(True)
    value = blockwise_token_loss(leaf, targets, 4 * VOCAB)
    value.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="one backward per forward"):
        value.backward()


def _kept_for_backward(loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> int:
    """Bytes autograd keeps from the loss's forward for its backward (bf16 logits, under bf16
    autocast as the trainer calls it)."""
    logits, targets = _case(torch.bfloat16, ignored=0.0)
    leaf = logits.requires_grad_(True)
    kept: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        kept[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    keeping = torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor)
    with keeping, torch.autocast("cpu", torch.bfloat16):
        loss(leaf, targets)
    return sum(kept.values())


def test_blockwise_loss_keeps_half_the_bytes_for_backward_under_bf16() -> None:
    """Cross entropy keeps the fp32 log-softmax of every logit (4 bytes each) for backward;
    the blockwise loss keeps the gradient in the logits' bf16 (2 bytes each)."""
    logit_count = 3 * 41 * VOCAB
    plain = _kept_for_backward(token_loss)
    blockwise = _kept_for_backward(lambda x, t: blockwise_token_loss(x, t, 8 * 4 * VOCAB))
    assert plain >= 4 * logit_count
    assert 2 * logit_count <= blockwise < 2 * logit_count + 4096
    assert blockwise < 0.6 * plain


def test_small_logits_take_the_plain_loss() -> None:
    """One block holds them all (the tiny models): the plain cross entropy, nothing else."""
    logits, targets = _case(torch.float32)
    leaf = logits.requires_grad_(True)
    value = blockwise_token_loss(leaf, targets)
    assert value.grad_fn is not None and "Nll" in type(value.grad_fn).__name__


def test_language_bundles_carry_the_eager_form_of_their_token_loss() -> None:
    """GPT-2 and BERT (and the tiny ones) train eager cells with the blockwise loss over the
    real vocabulary; the vision and tiny-mlp bundles keep their loss."""
    from torchscale.rank.models import build_model

    gpt = build_model("tiny-gpt2")
    assert isinstance(gpt.loss_fn, TokenLoss) and gpt.eager_loss_fn == gpt.loss_fn.eager
    assert build_model("tiny-mlp").eager_loss_fn is None
    _, loss = training_tasks.next_token(VOCAB, 8)
    assert isinstance(loss, TokenLoss) and loss.vocab_size == VOCAB


def test_padded_logits_blockwise_equal_the_unpadded_models_loss() -> None:
    """The pad logits of a padded vocabulary stay out of the blockwise loss as out of the
    plain one: same loss, same real gradient, none on the pad columns."""
    logits, targets = _case(torch.float32)
    padded = torch.cat([logits, torch.randn(3, 41, 31) * 5], dim=-1)  # 97 -> 128
    loss = TokenLoss(VOCAB, block_bytes=7 * 4 * VOCAB)
    expected, expected_grad = _loss_and_grad(
        F.cross_entropy, logits.reshape(-1, VOCAB), targets.reshape(-1)
    )
    got, got_grad = _loss_and_grad(loss.eager, padded, targets)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(
        got_grad[..., :VOCAB].reshape(-1, VOCAB), expected_grad, rtol=1e-5, atol=1e-7
    )
    assert torch.count_nonzero(got_grad[..., VOCAB:]) == 0
