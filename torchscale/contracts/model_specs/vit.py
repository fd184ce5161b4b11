"""ViT-B/16 (torchscale/rank/models/vit.py) on ImageNet shapes."""

from __future__ import annotations

from torchscale.contracts.model_specs.shared_options import IMAGENET
from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured, TrainingTraits

VIT_B16 = BuiltinModelSpec(
    name="vit-b16",
    family="vit",
    description=(
        "ViT-B/16 (torchvision vit_b_16: class token, learned positions, pre-LN), 1000 classes, "
        "224x224: 86,567,656 parameters"
    ),
    builder="torchscale.rank.models.vit:vit_b16",
    defaults=IMAGENET,
    task="classification",
    training=TrainingTraits(bf16_stream=True),
    measured=Measured(
        kind="vision",
        parameters=86_567_656,
        input_shape=(3, 224, 224),
        tokens_per_sample=None,
        forward_flops=35_127_656_448,
        train_flops=105_151_758_336,
        activation_bytes_fp32=118_164_692,
        activation_bytes_bf16=59_158_786,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)
