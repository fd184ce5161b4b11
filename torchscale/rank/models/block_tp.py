"""Megatron-style tensor parallelism for a stack of layers.Block, with torch's DTensor styles
(the split: BLOCK_PLAN and SP_PLAN below, docs/strategies.md).

Embeddings, the final norm and heads stay replicated: GPT-2's LM head is tied to the token
embedding, and sharding one without the other would break the tie. Sequence parallelism is
Korthikanti et al. 2022's (arXiv 2205.05198), as in torchtitan. Imported only when a plan is
applied (block_stack.py), so building a model never loads DTensor.
"""

from __future__ import annotations

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)
from torch.distributed.tensor.parallel.style import ParallelStyle

from torchscale.rank.models.layers import Block

SEQ = Shard(1)  # activations are (batch, sequence, hidden)

# per transformer block: attn.qkv colwise (whole heads), attn.proj rowwise, mlp.fc1 colwise,
# mlp.fc2 rowwise
BLOCK_PLAN = "transformer_blocks"
# and with sequence parallelism: ln_1/ln_2 and the dropouts after attn.proj/mlp.fc2 on sequence
# shards (all-gather before attn and mlp, reduce-scatter after attn.proj and mlp.fc2); the
# block stack takes a replicated input and returns a replicated output
SP_PLAN = "transformer_blocks_sequence_parallel"


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


def parallelize_stack(
    stack: nn.Sequential, blocks: list[Block], mesh: DeviceMesh, sequence_parallel: bool
) -> str:
    """Split every block of `stack` in place; returns the plan's name."""
    for block in blocks:
        parallelize_module(block, mesh, block_plan(sequence_parallel))
    if not sequence_parallel:
        return BLOCK_PLAN
    # the embeddings' replicated output becomes this rank's sequence shard (a local slice, no
    # communication), and the last block's shard is gathered for the replicated head
    parallelize_module(
        stack,
        mesh,
        PrepareModuleInput(
            input_layouts=Replicate(), desired_input_layouts=SEQ, use_local_output=True
        ),
    )
    parallelize_module(
        stack,
        mesh,
        PrepareModuleOutput(
            output_layouts=SEQ, desired_output_layouts=Replicate(), use_local_output=True
        ),
    )
    return SP_PLAN
