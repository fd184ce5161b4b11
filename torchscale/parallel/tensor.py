"""Megatron-style tensor parallelism for the built-in models, with torch's DTensor styles.

Every transformer block (torchscale/models/layers.py) splits as Megatron-LM does: q/k/v and the
first MLP layer by output columns (ColwiseParallel: whole heads per rank, since the fused q/k/v
rows are grouped per head), the attention output projection and the second MLP layer by input
rows (RowwiseParallel: one all-reduce each, forward and backward). Embeddings, the final norm and
heads stay replicated: GPT-2's LM head is tied to the token embedding, and sharding one without
the other would break the tie. With sequence parallelism (Korthikanti et al. 2022,
arXiv 2205.05198) the LayerNorms and the dropouts after the row-parallel layers run on a
sequence shard, the all-reduces becoming reduce-scatter + all-gather, as in torchtitan.

The encoder-decoder (nn.Transformer) splits only what torch's styles reach: every layer's
feed-forward pair, the shared embedding and the output projection (both by vocabulary rows).
Its attention stays replicated: nn.MultiheadAttention keeps q/k/v in one `in_proj_weight`
Parameter (q rows, then k, then v) that F.multi_head_attention_forward reads directly, so no
Linear module exists for ColwiseParallel to split into whole heads, and the output projection is
called functionally too, out of reach of RowwiseParallel's hooks. Replicated attention sees
replicated inputs and output gradients on every TP rank, so its gradients agree without any
communication.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)
from torch.distributed.tensor.parallel.style import ParallelStyle

from torchscale.models.tiny import MLP
from torchscale.models.transformer import Seq2SeqTransformer
from torchscale.parallel import anatomy

SEQ = Shard(1)  # activations are (batch, sequence, hidden)

BLOCK_PLAN = (
    "per transformer block: attn.qkv colwise (whole heads), attn.proj rowwise, "
    "mlp.fc1 colwise, mlp.fc2 rowwise"
)
SP_PLAN = (
    "; sequence parallel: ln_1/ln_2 and the dropouts after attn.proj/mlp.fc2 on sequence "
    "shards (all-gather before attn and mlp, reduce-scatter after attn.proj and mlp.fc2); the "
    "block stack takes a replicated input and returns a replicated output"
)


def block_plan(sequence_parallel: bool) -> dict[str, ParallelStyle]:
    """The plan for one layers.Block (pre-LN or post-LN: the same modules split the same way).

    Between blocks the activation is a plain local tensor: replicated without sequence
    parallelism, this rank's sequence shard with it (every norm returns a local tensor, so the
    residual adds never mix a DTensor with a tensor).
    """
    if not sequence_parallel:
        return {
            "attn.qkv": ColwiseParallel(),
            "attn.proj": RowwiseParallel(),
            "mlp.fc1": ColwiseParallel(),
            "mlp.fc2": RowwiseParallel(),
        }
    gather = PrepareModuleInput(
        input_layouts=SEQ, desired_input_layouts=Replicate(), use_local_output=True
    )
    return {
        "ln_1": SequenceParallel(use_local_output=True),
        "ln_2": SequenceParallel(use_local_output=True),
        "attn": gather,
        "attn.qkv": ColwiseParallel(),
        "attn.proj": RowwiseParallel(output_layouts=SEQ),
        "mlp": gather,
        "mlp.fc1": ColwiseParallel(),
        "mlp.fc2": RowwiseParallel(output_layouts=SEQ),
    }


def _parallelize_transformer(model: nn.Module, mesh: DeviceMesh, sequence_parallel: bool) -> str:
    for block in anatomy.transformer_blocks(model):
        parallelize_module(block, mesh, block_plan(sequence_parallel))
    if not sequence_parallel:
        return BLOCK_PLAN
    container = anatomy.block_container(model)
    assert container is not None
    # the embeddings' replicated output becomes this rank's sequence shard (a local slice, no
    # communication), and the last block's shard is gathered for the replicated head
    parallelize_module(
        container,
        mesh,
        PrepareModuleInput(
            input_layouts=Replicate(), desired_input_layouts=SEQ, use_local_output=True
        ),
    )
    parallelize_module(
        container,
        mesh,
        PrepareModuleOutput(
            output_layouts=SEQ, desired_output_layouts=Replicate(), use_local_output=True
        ),
    )
    return BLOCK_PLAN + SP_PLAN


def _parallelize_mlp(model: MLP, mesh: DeviceMesh) -> str:
    """Hidden Linear layers in colwise/rowwise pairs (ReLU is elementwise); the rest replicated."""
    hidden = anatomy.mlp_linears(model)[:-1]
    names = {id(m): name for name, m in model.named_modules()}
    plan: dict[str, ParallelStyle] = {}
    for col, row in zip(hidden[0::2], hidden[1::2], strict=False):
        plan[names[id(col)]] = ColwiseParallel()
        plan[names[id(row)]] = RowwiseParallel()
    parallelize_module(model, mesh, plan)
    return "hidden Linear layers in pairs: the first colwise, the second rowwise"


SEQ2SEQ_PLAN = (
    "feed-forward layers split (per encoder/decoder layer: linear1 colwise, linear2 rowwise); "
    "shared embedding rowwise and output projection colwise (vocabulary rows, logits "
    "all-gathered); attention and LayerNorms replicated because nn.MultiheadAttention packs "
    "q/k/v in one in_proj_weight Parameter that torch's Colwise/RowwiseParallel cannot split "
    "into whole heads"
)


def _parallelize_seq2seq(model: Seq2SeqTransformer, mesh: DeviceMesh) -> str:
    """Megatron's feed-forward pair per layer; embedding and projection split by vocabulary."""
    for layer in anatomy.seq2seq_layers(model):
        parallelize_module(
            layer, mesh, {"linear1": ColwiseParallel(), "linear2": RowwiseParallel()}
        )
    parallelize_module(
        model,
        mesh,
        {
            "embedding": RowwiseParallel(input_layouts=Replicate()),
            "output": ColwiseParallel(output_layouts=Replicate()),
        },
    )
    return SEQ2SEQ_PLAN


def apply_builtin(model: nn.Module, mesh: DeviceMesh, sequence_parallel: bool) -> str:
    """Apply the built-in plan in place; returns its one-line description."""
    if isinstance(model, MLP):
        return _parallelize_mlp(model, mesh)
    if isinstance(model, Seq2SeqTransformer):
        assert not sequence_parallel  # infeasible() refuses it (anatomy.NO_SP)
        return _parallelize_seq2seq(model, mesh)
    return _parallelize_transformer(model, mesh, sequence_parallel)


def summary(model: nn.Module, mesh: DeviceMesh) -> dict[str, Any]:
    """Which parameters are sharded over the TP mesh and which replicated, for the result.

    Replicated parameters cost full memory on every TP rank, so the memory saving of TP is
    `sharded_parameters * (1 - 1/tp)` elements, not the whole model's.
    """
    sharded = replicated = 0
    replicated_names: list[str] = []
    for name, param in model.named_parameters():
        shards = isinstance(param, DTensor) and any(isinstance(p, Shard) for p in param.placements)
        count = param.numel()  # the global element count, for a DTensor too
        if shards:
            sharded += count
        else:
            replicated += count
            replicated_names.append(name)
    return {
        "tp_mesh_size": mesh.size(),
        "tp_sharded_parameters": sharded,
        "tp_replicated_parameters": replicated,
        "tp_replicated": _collapse(replicated_names),
    }


def _collapse(names: list[str]) -> list[str]:
    """Parameter names with per-block entries folded ("blocks.0.ln_1.weight",
    "blocks.1.ln_1.weight" -> "blocks.*.ln_1.weight"), so the list stays short for deep models."""
    folded: list[str] = []
    for name in names:
        parts = [("*" if part.isdigit() else part) for part in name.split(".")]
        key = ".".join(parts)
        if key not in folded:
            folded.append(key)
    return folded
