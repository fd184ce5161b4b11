"""The encoder-decoder `transformer` benchmark model, built on `torch.nn.Transformer`.

Its defaults (its spec: torchscale/contracts/model_specs/transformer.py) are those of the
encoder-decoder benchmark users know (seed 003): d_model 128, 4 heads, 3 encoder and 3 decoder
layers, feed-forward 512 ("~3.5M parameters"). It does not state the rest, so these are ours:
dropout 0.1 (nn.Transformer's default), vocab_size 8,192, seq_len 128 (source and target length; its
large example raises it to 512). Around nn.Transformer: one token embedding shared by source
and target (scaled by sqrt(d_model)), sinusoidal positions (no parameters, so seq_len does not
change the count), a causal decoder and an untied output projection with bias. Total with the
defaults: exactly 3,494,400 parameters (1,389,056 in nn.Transformer, 1,048,576 embedding,
1,056,768 projection).

Under tp attention stays replicated (`in_proj_weight` is no Linear to split), its gradients
agreeing on every TP rank without communication; the splits and the pipeline's cuts
(seq2seq_units.py): docs/strategies.md, "The encoder-decoder `transformer`".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.names import span
from torchscale.rank.models import seq2seq_units, training_tasks
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.option_values import divisible
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh

# feed-forward layers split (per encoder/decoder layer: linear1 colwise, linear2 rowwise);
# shared embedding rowwise and output projection colwise (vocabulary rows, logits all-gathered);
# attention and LayerNorms replicated because nn.MultiheadAttention packs q/k/v in one
# in_proj_weight Parameter that torch's Colwise/RowwiseParallel cannot split into whole heads
TP_PLAN = "feed_forward_and_vocabulary"


def sinusoidal_positions(seq_len: int, d_model: int, device: torch.device) -> torch.Tensor:
    """The fixed sin/cos position table of "Attention Is All You Need", shape (seq_len, d_model)."""
    position = torch.arange(seq_len, device=device, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(
        torch.arange(0, d_model, 2, device=device, dtype=torch.float32)
        * (-math.log(10000.0) / d_model)
    )
    table = torch.zeros(seq_len, d_model, device=device)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)
    return table


class Seq2SeqTransformer(nn.Module):
    """Shared embedding + positions, nn.Transformer (batch first, causal decoder), projection."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        nhead: int,
        num_encoder_layers: int,
        num_decoder_layers: int,
        dim_feedforward: int,
        dropout: float,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.dropout = nn.Dropout(dropout)
        self.transformer = nn.Transformer(
            d_model=d_model,
            nhead=nhead,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            batch_first=True,
        )
        self.output = nn.Linear(d_model, vocab_size)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
        out = self.transformer(
            _embed(self, src), _embed(self, tgt), tgt_mask=causal, tgt_is_causal=True
        )
        y: torch.Tensor = self.output(out)
        return y

    def parallel_plan(self) -> ParallelPlan:
        """Feed-forward and vocabulary split, attention replicated; pipeline cuts between the
        encoder and decoder layers (see the module docstring)."""
        return Seq2SeqPlan(self)


class Seq2SeqEmbed(nn.Module):
    """The shared token embedding, scaled, plus sinusoidal positions and dropout, applied to
    the source and the target ids (as Seq2SeqTransformer.forward does)."""

    def __init__(self, model: Seq2SeqTransformer) -> None:
        super().__init__()
        self.embedding, self.dropout, self.d_model = model.embedding, model.dropout, model.d_model

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> seq2seq_units.Pair:
        return _embed(self, src), _embed(self, tgt)


def _embed(m: Seq2SeqTransformer | Seq2SeqEmbed, tokens: torch.Tensor) -> torch.Tensor:
    """The shared token embedding scaled by sqrt(d_model), plus positions, then dropout."""
    positions = sinusoidal_positions(tokens.shape[1], m.d_model, tokens.device)
    y: torch.Tensor = m.dropout(m.embedding(tokens) * math.sqrt(m.d_model) + positions)
    return y


class Seq2SeqHead(nn.Module):
    """nn.Transformer's decoder norm and the output projection; the memory ends here."""

    def __init__(self, model: Seq2SeqTransformer) -> None:
        super().__init__()
        norm = model.transformer.decoder.norm
        assert norm is not None  # nn.Transformer always builds one
        self.norm, self.output = norm, model.output

    def forward(self, pair: seq2seq_units.Pair) -> torch.Tensor:
        y: torch.Tensor = self.output(self.norm(pair[1]))
        return y


class Seq2SeqPlan(ParallelPlan):
    """The splits of the encoder-decoder: see the module docstring."""

    def __init__(self, model: Seq2SeqTransformer) -> None:
        self.model = model

    def tp_problem(self, tp: int) -> Finding | None:
        """The splits the plan makes: feed-forward widths, and the vocabulary rows of the
        embedding and output projection (attention is replicated: its heads need not divide)."""
        for i, layer in enumerate(self._layers()):
            width = layer.linear1.out_features
            if width % tp:
                figures = {"layer": i, "width": width, "tp": tp}
                return Finding(code="layout.ffn_width", figures=figures)
        vocab = self.model.output.out_features
        if vocab % tp:
            return Finding(code="layout.vocab", figures={"vocab": vocab, "tp": tp})
        return None

    def sp_problem(self, tp: int, seq_len: int | None) -> Finding | None:
        return Finding(code="layout.seq2seq_no_sp")

    def apply_tp(self, mesh: DeviceMesh, sequence_parallel: bool) -> str:
        """Megatron's feed-forward pair per layer; embedding and projection split by vocabulary."""
        from torch.distributed.tensor import Replicate
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )

        assert not sequence_parallel  # infeasible() refuses it (sp_problem)
        for layer in self._layers():
            parallelize_module(
                layer, mesh, {"linear1": ColwiseParallel(), "linear2": RowwiseParallel()}
            )
        embedding = RowwiseParallel(input_layouts=Replicate())
        output = ColwiseParallel(output_layouts=Replicate())
        parallelize_module(self.model, mesh, {"embedding": embedding, "output": output})
        return TP_PLAN

    def _layers(self) -> list[seq2seq_units.Layer]:
        return seq2seq_units.transformer_layers(self.model.transformer)

    def fsdp_units(self) -> list[nn.Module]:
        return list(self._layers())

    def pipeline_depth(self) -> int:
        return len(self._layers())

    def pipeline_parts(self) -> PipelineParts:
        units = seq2seq_units.units(self.model.transformer)
        return PipelineParts(Seq2SeqEmbed(self.model), units, Seq2SeqHead(self.model))

    def run_names(self, run: range) -> list[str]:
        """A run of layers by stack: "encoder layers 0-1", "decoder layer 0"."""
        encoders = len(self.model.transformer.encoder.layers)
        enc = range(run.start, min(run.stop, encoders))
        dec = range(max(run.start, encoders) - encoders, run.stop - encoders)
        named = (("encoder layer", enc), ("decoder layer", dec))
        return [span(noun, r) for noun, r in named if r]


def seq2seq_transformer(name: str, *, seq_len: int, vocab_size: int, **sizes: Any) -> ModelBundle:
    """An encoder-decoder bundle; `sizes` are Seq2SeqTransformer's other arguments (checked by
    the registry: positive integers, dropout a probability); the shapes the heads and
    positions need are checked here."""
    d_model = sizes["d_model"]
    divisible(name, "d_model", d_model, sizes["nhead"], "d_model is split across nhead heads")
    divisible(name, "d_model", d_model, 2, "sinusoidal positions pair sin and cos")
    model = Seq2SeqTransformer(vocab_size=vocab_size, **sizes)
    task = training_tasks.sequence_to_sequence(vocab_size, seq_len)
    return training_tasks.language_bundle(model, task, seq_len)


def transformer(**options: Any) -> ModelBundle:
    """The built-in `transformer`: 3,494,400 parameters with its defaults."""
    return seq2seq_transformer("transformer", **options)
