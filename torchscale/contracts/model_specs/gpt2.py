"""GPT-2 small, medium and large (torchscale/rank/models/gpt2.py), speed-first by default, as
published under `faithful: true` (shared_options.py)."""

from __future__ import annotations

from torchscale.contracts.model_specs.shared_options import language_options
from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured, TrainingTraits

GPT2 = BuiltinModelSpec(
    name="gpt2",
    family="gpt2",
    description=(
        "GPT-2 small (12 layers, 768 hidden), LM head tied to the token embedding: 124,439,808 "
        "parameters as published, 124,475,904 with the vocabulary padded to 50,304"
    ),
    builder="torchscale.rank.models.gpt2:gpt2",
    defaults=language_options(1024),
    task="next-token",
    training=TrainingTraits(bf16_stream=True, token_loss=True),
    measured=Measured(
        kind="language",
        parameters=124_475_904,
        input_shape=(1024,),
        tokens_per_sample=1024,
        forward_flops=291_722_231_808,
        train_flops=875_166_695_424,
        activation_bytes_fp32=816_934_924,
        activation_bytes_bf16=408_872_970,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)

GPT2_MEDIUM = BuiltinModelSpec(
    name="gpt2-medium",
    family="gpt2",
    description=(
        "GPT-2 medium (24 layers, 1024 hidden), LM head tied: 354,823,168 parameters as "
        "published, 354,871,296 padded"
    ),
    builder="torchscale.rank.models.gpt2:gpt2_medium",
    defaults=language_options(1024),
    task="next-token",
    training=TrainingTraits(bf16_stream=True, token_loss=True),
    measured=Measured(
        kind="language",
        parameters=354_871_296,
        input_shape=(1024,),
        tokens_per_sample=1024,
        forward_flops=827_049_639_936,
        train_flops=2_481_148_919_808,
        activation_bytes_fp32=1_826_844_684,
        activation_bytes_bf16=914_417_674,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)

GPT2_LARGE = BuiltinModelSpec(
    name="gpt2-large",
    family="gpt2",
    description=(
        "GPT-2 large (36 layers, 1280 hidden), LM head tied: 774,030,080 parameters as published,"
        " 774,090,240 padded"
    ),
    builder="torchscale.rank.models.gpt2:gpt2_large",
    defaults=language_options(1024),
    task="next-token",
    training=TrainingTraits(bf16_stream=True, token_loss=True),
    measured=Measured(
        kind="language",
        parameters=774_090_240,
        input_shape=(1024,),
        tokens_per_sample=1024,
        forward_flops=1_774_693_908_480,
        train_flops=5_324_081_725_440,
        activation_bytes_fp32=3_239_800_844,
        activation_bytes_bf16=1_621_682_186,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)
