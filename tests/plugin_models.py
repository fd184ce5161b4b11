"""Plug-in model factories used by tests/rank/test_models.py, tests/rank/test_parallel_plan.py,
tests/rank/test_compile_timing.py and tests/rank/test_gpu_paths.py (loaded as
'tests.plugin_models:...')."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models import ModelBundle
from torchscale.rank.models import training_tasks as tasks
from torchscale.rank.models.block_stack import BlockStackPlan
from torchscale.rank.models.layers import Block
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts

NOT_CALLABLE = 3


def factory(hidden: int = 8) -> tuple[nn.Module, Any, Any]:
    """The minimal contract: a (model, make_batch, loss_fn) tuple."""
    model = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(batch_size, 4, device=device), torch.randn(batch_size, 1, device=device)

    return model, make_batch, F.mse_loss


def bundle_factory(seq_len: int = 16) -> ModelBundle:
    """The full contract: a ModelBundle, kept as returned."""
    model, make_batch, loss_fn = factory()
    return ModelBundle(model, make_batch, loss_fn, "language", seq_len, (seq_len,), False)


def returns_pair() -> tuple[nn.Module, Any]:
    return nn.Linear(2, 2), F.mse_loss


def returns_non_module() -> tuple[Any, Any, Any]:
    return "model", F.mse_loss, F.mse_loss


def raises() -> None:
    raise RuntimeError("no GPU here")


class TinyDecoder(nn.Module):
    """A model torchscale/rank/parallel/ has never seen: token embedding, a stack of layers.Block
    and a linear head, declaring its own ParallelPlan in this module and nowhere else."""

    def __init__(self, vocab: int = 64, hidden: int = 16, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.Sequential(
            *(
                Block(
                    hidden,
                    heads,
                    4 * hidden,
                    norm_first=True,
                    causal=True,
                    dropout=0.0,
                    attn_dropout=0.0,
                    eps=1e-5,
                )
                for _ in range(layers)
            )
        )
        self.head = nn.Linear(hidden, vocab)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.head(self.blocks(self.embed(input_ids)))
        return y

    def parallel_plan(self) -> ParallelPlan:
        return BlockStackPlan(
            self.blocks, lambda blocks: PipelineParts(self.embed, blocks, self.head)
        )


def decoder(seq_len: int = 16, layers: int = 2) -> ModelBundle:
    """TinyDecoder with next-token loss; its bundle declares no tp_plan / pp_split."""
    model = TinyDecoder(layers=layers)
    return tasks.language_bundle(model, tasks.next_token(64, seq_len), seq_len)


class Switchable(nn.Module):
    """A model torch.compile recompiles on demand: its forward reads a Python flag, on whose
    value dynamo guards (setting `doubled` makes the next call recompile), and breaks its graph
    once (torch._dynamo.graph_break, a no-op when not compiled)."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(4, 8)
        self.second = nn.Linear(8, 1)
        self.doubled = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.first(x)
        if self.doubled:
            hidden = hidden * 2
        torch._dynamo.graph_break()
        return self.second(torch.relu(hidden))  # type: ignore[no-any-return]


def switchable() -> tuple[nn.Module, Any, Any]:
    """`Switchable` with `factory`'s batches and loss."""
    _, make_batch, loss_fn = factory()
    return Switchable(), make_batch, loss_fn


class ReadsValues(nn.Module):
    """A model whose forward reads a tensor's value: it cannot run on the meta device."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = float(x.abs().max().item()) or 1.0
        return self.linear(x / scale)  # type: ignore[no-any-return]


def reads_values() -> tuple[nn.Module, Any, Any]:
    """`ReadsValues` with `factory`'s batches and loss."""
    _, make_batch, loss_fn = factory()
    return ReadsValues(), make_batch, loss_fn
