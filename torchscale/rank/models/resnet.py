"""ResNet-18 and ResNet-50 v1.5, layer for layer as torchvision defines them.

v1.5 puts the stride of a downsampling bottleneck in its 3x3 convolution (not the first 1x1),
which is what torchvision and NVIDIA's published ResNet-50 throughput numbers use. With 1000
classes the counts are exactly 11,689,512 (resnet18) and 25,557,032 (resnet50) parameters. The
same class, with a 3x3 stem and narrow stages, is the `tiny-cnn` test model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import torch
from torch import nn

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts
from torchscale.rank.models.training_tasks import vision_bundle

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh

NO_TP = Finding(code="layout.resnet_no_tp")


def _conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


def _conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34)."""

    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = _conv3x3(cin, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        y: torch.Tensor = self.relu(out + identity)
        return y


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carrying the stride: v1.5), 1x1 expand by 4, residual (ResNet-50+)."""

    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = _conv1x1(cin, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        y: torch.Tensor = self.relu(out + identity)
        return y


class ResNet(nn.Module):
    """Stem, four (or fewer) stages of residual blocks, global average pool, linear classifier.

    `stem="imagenet"` is the 7x7/2 conv plus 3x3/2 max-pool of the paper; `stem="small"` is a
    single 3x3/1 conv for 32x32 inputs (the tiny model).
    """

    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        depths: Sequence[int],
        widths: Sequence[int] = (64, 128, 256, 512),
        num_classes: int = 1000,
        stem: Literal["imagenet", "small"] = "imagenet",
    ) -> None:
        super().__init__()
        cin = widths[0]
        if stem == "imagenet":
            self.stem = nn.Sequential(
                nn.Conv2d(3, cin, kernel_size=7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(cin),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
            )
        else:
            self.stem = nn.Sequential(_conv3x3(3, cin), nn.BatchNorm2d(cin), nn.ReLU(inplace=True))
        stages: list[nn.Module] = []
        for i, (depth, planes) in enumerate(zip(depths, widths, strict=True)):
            stride = 1 if i == 0 else 2
            blocks: list[nn.Module] = []
            for j in range(depth):
                cout = planes * block.expansion
                downsample = None
                if j == 0 and (stride != 1 or cin != cout):
                    downsample = nn.Sequential(_conv1x1(cin, cout, stride), nn.BatchNorm2d(cout))
                blocks.append(block(cin, planes, stride if j == 0 else 1, downsample))
                cin = cout
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        y: torch.Tensor = self.fc(torch.flatten(self.pool(x), 1))
        return y

    def parallel_plan(self) -> ParallelPlan:
        """No tensor parallelism; pipeline cuts between residual blocks."""
        return ResNetPlan(self)


class PoolHead(nn.Module):
    """ResNet's global average pool and classifier."""

    def __init__(self, model: ResNet) -> None:
        super().__init__()
        self.pool, self.fc = model.pool, model.fc

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.fc(torch.flatten(self.pool(x), 1))
        return y


class ResNetPlan(ParallelPlan):
    """Pipeline stages of residual blocks (every stage's, flattened) between the stem and the
    pooled classifier; tensor parallelism refused (NO_TP)."""

    def __init__(self, model: ResNet) -> None:
        self.model = model

    def tp_problem(self, tp: int) -> Finding | None:
        return NO_TP

    def apply_tp(self, mesh: DeviceMesh, sequence_parallel: bool) -> str:
        raise ValueError(say(NO_TP))

    def _blocks(self) -> list[nn.Module]:
        return [block for stage in self.model.stages for block in stage.children()]

    def pipeline_depth(self) -> int:
        return len(self._blocks())

    def pipeline_parts(self) -> PipelineParts:
        return PipelineParts(self.model.stem, self._blocks(), PoolHead(self.model))


def resnet18(*, image_size: int, num_classes: int) -> ModelBundle:
    """ResNet-18: 11,689,512 parameters with 1000 classes."""
    model = ResNet(BasicBlock, (2, 2, 2, 2), num_classes=num_classes)
    return vision_bundle(model, image_size, num_classes, conv_net=True)


def resnet50(*, image_size: int, num_classes: int) -> ModelBundle:
    """ResNet-50 v1.5: 25,557,032 parameters with 1000 classes."""
    model = ResNet(Bottleneck, (3, 4, 6, 3), num_classes=num_classes)
    return vision_bundle(model, image_size, num_classes, conv_net=True)
