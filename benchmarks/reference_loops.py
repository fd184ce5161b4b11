"""Plain PyTorch loops of the zoo's vision and encoder models, for workload_reference.py.

Written from the published layouts with torch's own layers, independent of torchscale's model
code (torchscale/rank/models/): ViT-B/16 as torchvision's vit_b_16 (class token, learned
positions, pre-LN `nn.TransformerEncoderLayer`s), BERT for masked LM as HF's BertForMaskedLM
(post-LN encoder layers, the MLM transform, the decoder tied to the word embedding, the
vocabulary padded to a multiple of 64 as both sides train it), ResNet-18 and ResNet-50 v1.5 (the
stride on the 3x3 convolution) as torchvision's. Each trains what a torchscale cell of the same
model trains: random images and labels (1000 classes), or random tokens with about 15 % of the
positions as targets; the driver checks that both sides count the same parameters. Their
residual stream runs in fp32 under bf16 autocast (PyTorch's encoder layer keeps it so): the
cell is run with `training.bf16_activations: false` to match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

IMAGE, CLASSES = 224, 1000
BERT_VOCAB, BERT_POSITIONS = 30522, 512
TINY_BERT_VOCAB, TINY_BERT_POSITIONS = 1024, 256
# (hidden, layers, heads, feed-forward) of the encoders; (blocks per stage, bottleneck) of ResNets
ENCODERS = {
    "vit-b16": (768, 12, 12, 3072),
    "bert-base": (768, 12, 12, 3072),
    "bert-large": (1024, 24, 16, 4096),
    "tiny-bert": (64, 2, 4, 256),
}
RESNETS = {"resnet18": ((2, 2, 2, 2), False), "resnet50": ((3, 4, 6, 3), True)}
LOOPS = (*ENCODERS, *RESNETS)

# a model's loss on one batch: (model, inputs, targets) -> scalar
Batch = tuple[Any, Any]


def build(name: str, batch: int, seq: int, device: Any) -> tuple[Any, Callable[..., Any], Batch]:
    """The model of `name` on `device`, its loss function (logits, targets) -> loss, and one
    batch of `batch` samples (`seq` tokens each for BERT)."""
    import torch

    if name in RESNETS:
        model: Any = resnet(*RESNETS[name])
        return model.to(device), _classification, _images(batch, device)
    hidden, layers, heads, ff = ENCODERS[name]
    if name == "vit-b16":
        return vit(hidden, layers, heads, ff).to(device), _classification, _images(batch, device)
    tiny = name == "tiny-bert"
    vocab = TINY_BERT_VOCAB if tiny else BERT_VOCAB
    model = bert(hidden, layers, heads, ff, vocab, TINY_BERT_POSITIONS if tiny else BERT_POSITIONS)
    tokens = torch.randint(0, vocab, (batch, seq), device=device)
    chosen = torch.rand((batch, seq), device=device) < 0.15
    chosen[:, 0] = True  # every sample has a target, as the cell's batches
    targets = torch.where(chosen, tokens, torch.full_like(tokens, -100))

    def masked_lm(logits: Any, targets: Any) -> Any:
        # the pad logits are never a target: the loss is the unpadded model's
        return torch.nn.functional.cross_entropy(
            logits[..., :vocab].flatten(0, 1), targets.flatten(), ignore_index=-100
        )

    return model.to(device), masked_lm, (tokens, targets)


def _classification(logits: Any, labels: Any) -> Any:
    import torch

    return torch.nn.functional.cross_entropy(logits, labels)


def _images(batch: int, device: Any) -> Batch:
    import torch

    images = torch.randn(batch, 3, IMAGE, IMAGE, device=device)
    return images, torch.randint(0, CLASSES, (batch,), device=device)


def _encoder(hidden: int, layers: int, heads: int, ff: int, pre_ln: bool, eps: float) -> Any:
    from torch import nn

    layer = nn.TransformerEncoderLayer(
        hidden, heads, ff, dropout=0.0, activation="gelu", layer_norm_eps=eps,
        batch_first=True, norm_first=pre_ln,
    )  # fmt: skip
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def vit(hidden: int, layers: int, heads: int, ff: int, patch: int = 16) -> Any:
    """ViT as torchvision's vit_b_16: patches by a strided convolution, a class token, learned
    positions, pre-LN encoder layers, a final LayerNorm, a linear head on the class token."""
    import torch
    from torch import nn

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patches = nn.Conv2d(3, hidden, kernel_size=patch, stride=patch)
            self.cls = nn.Parameter(torch.zeros(1, 1, hidden))
            self.positions = nn.Parameter(torch.randn(1, (IMAGE // patch) ** 2 + 1, hidden) * 0.02)
            self.encoder = _encoder(hidden, layers, heads, ff, pre_ln=True, eps=1e-6)
            self.ln = nn.LayerNorm(hidden, eps=1e-6)
            self.head = nn.Linear(hidden, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.patches(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
            out: torch.Tensor = self.head(self.ln(self.encoder(x))[:, 0])
            return out

    return ViT()


def bert(hidden: int, layers: int, heads: int, ff: int, vocab: int, positions: int) -> Any:
    """BertForMaskedLM: word, position and token-type embeddings with a LayerNorm, post-LN
    encoder layers (no pooler: the MLM loss never uses it), the MLM transform (dense, GELU,
    LayerNorm) and a decoder tied to the word embedding with a bias of its own."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    padded = (vocab + 63) // 64 * 64

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(padded, hidden)
            self.position = nn.Embedding(positions, hidden)
            self.token_type = nn.Embedding(2, hidden)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.encoder = _encoder(hidden, layers, heads, ff, pre_ln=False, eps=1e-12)
            self.transform = nn.Linear(hidden, hidden)
            self.transform_ln = nn.LayerNorm(hidden, eps=1e-12)
            self.decoder_bias = nn.Parameter(torch.zeros(padded))

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            places = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.word(tokens) + self.position(places) + self.token_type.weight[0]
            h = self.encoder(self.ln(x))
            h = self.transform_ln(F.gelu(self.transform(h)))
            return F.linear(h, self.word.weight, self.decoder_bias)

    return Bert()


def resnet(stages: tuple[int, ...], bottleneck: bool) -> Any:
    """ResNet as torchvision's: a 7x7 stem and max-pool, four stages of basic (ResNet-18) or
    bottleneck blocks (ResNet-50 v1.5: the stride on the 3x3), batch norm after every
    convolution, a 1x1 projection where the shape changes, average pool and a linear head."""
    import torch
    from torch import nn

    expansion = 4 if bottleneck else 1

    def conv_bn(cin: int, cout: int, size: int, stride: int = 1) -> list[nn.Module]:
        conv = nn.Conv2d(cin, cout, size, stride=stride, padding=size // 2, bias=False)
        return [conv, nn.BatchNorm2d(cout)]

    class Block(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * expansion
            if bottleneck:
                layers = [*conv_bn(cin, width, 1), nn.ReLU(inplace=True)]
                layers += [*conv_bn(width, width, 3, stride), nn.ReLU(inplace=True)]
                layers += conv_bn(width, cout, 1)
            else:
                layers = [*conv_bn(cin, width, 3, stride), nn.ReLU(inplace=True)]
                layers += conv_bn(width, width, 3)
            self.body = nn.Sequential(*layers)
            changed = stride != 1 or cin != cout
            self.shortcut = nn.Sequential(*conv_bn(cin, cout, 1, stride)) if changed else None
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            skip = x if self.shortcut is None else self.shortcut(x)
            out: torch.Tensor = self.relu(self.body(x) + skip)
            return out

    blocks: list[nn.Module] = [*conv_bn(3, 64, 7, 2), nn.ReLU(inplace=True)]
    blocks.append(nn.MaxPool2d(3, stride=2, padding=1))
    cin = 64
    for index, (count, width) in enumerate(zip(stages, (64, 128, 256, 512), strict=True)):
        for number in range(count):
            blocks.append(Block(cin, width, 2 if number == 0 and index > 0 else 1))
            cin = width * expansion
    blocks += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, CLASSES)]
    return nn.Sequential(*blocks)
