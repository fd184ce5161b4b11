"""A built-in model added as docs/architecture.md says: this one file (its spec and its
builder) plus one line in the registry, torchscale/contracts/model_specs/registry.py, which the
tests add at run time (tests/rank/test_adding_a_model.py, tests/rank/test_parallel_plan.py). The
module
imports no torch; its builder does, when a rank builds the model. The architecture is
tests/plugin_models.py's TinyDecoder, which declares its own ParallelPlan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured, TrainingTraits

if TYPE_CHECKING:
    from torchscale.rank.models import ModelBundle

TINY_DECODER = BuiltinModelSpec(
    name="tiny-decoder",
    family="test",
    description="token embedding, 2 causal blocks of 16, linear head, vocab 64: 8,672 parameters",
    builder="tests.added_model:tiny_decoder",
    defaults={"seq_len": 16, "layers": 2},
    task="next-token",
    training=TrainingTraits(token_loss=True),
    measured=Measured(
        kind="language",
        parameters=8_672,
        input_shape=(16,),
        tokens_per_sample=16,
        forward_flops=262_144,
        train_flops=786_432,
        activation_bytes_fp32=39_052,
        activation_bytes_bf16=20_106,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)


def tiny_decoder(*, seq_len: int, layers: int) -> ModelBundle:
    """TinyDecoder with next-token loss over its 64 tokens."""
    from tests.plugin_models import decoder

    return decoder(seq_len=seq_len, layers=layers)
