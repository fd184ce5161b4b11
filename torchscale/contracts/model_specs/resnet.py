"""The ResNets (torchscale/rank/models/resnet.py): ResNet-18 and ResNet-50 v1.5 on ImageNet
shapes."""

from __future__ import annotations

from torchscale.contracts.model_specs.shared_options import IMAGENET
from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured, TrainingTraits

RESNET18 = BuiltinModelSpec(
    name="resnet18",
    family="resnet",
    description="ResNet-18 (torchvision layout), 1000 classes, 224x224: 11,689,512 parameters",
    builder="torchscale.rank.models.resnet:resnet18",
    defaults=IMAGENET,
    task="classification",
    training=TrainingTraits(conv_net=True),
    measured=Measured(
        kind="vision",
        parameters=11_689_512,
        input_shape=(3, 224, 224),
        tokens_per_sample=None,
        forward_flops=3_628_146_688,
        train_flops=10_648_412_160,
        activation_bytes_fp32=22_222_252,
        activation_bytes_bf16=11_933_146,
    ),
    strategies=("ddp", "fsdp", "pp", "hybrid"),
)

RESNET50 = BuiltinModelSpec(
    name="resnet50",
    family="resnet",
    description=(
        "ResNet-50 v1.5 (stride in the 3x3 conv, as torchvision), 1000 classes, 224x224: "
        "25,557,032 parameters"
    ),
    builder="torchscale.rank.models.resnet:resnet50",
    defaults=IMAGENET,
    task="classification",
    training=TrainingTraits(conv_net=True),
    measured=Measured(
        kind="vision",
        parameters=25_557_032,
        input_shape=(3, 224, 224),
        tokens_per_sample=None,
        forward_flops=8_178_368_512,
        train_flops=24_299_077_632,
        activation_bytes_fp32=86_125_996,
        activation_bytes_bf16=43_972_058,
    ),
    strategies=("ddp", "fsdp", "pp", "hybrid"),
)
