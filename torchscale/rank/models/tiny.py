"""Tiny models for tests and CPU demos: the real architectures at toy sizes.

Each is the same class as its full-size counterpart (ResNet, GPT2, BertForMaskedLM,
Seq2SeqTransformer) with a small config, so a passing CPU test exercises the code path the real
benchmark runs; only `tiny-mlp` is its own (trivial) model (torchscale/rank/models/mlp.py). All are
well under 300K parameters and take milliseconds per step on a CPU at batch 16-32.
"""

from __future__ import annotations

from typing import Any

from torchscale.rank.models import training_tasks
from torchscale.rank.models.bert import BertConfig, bert_mlm
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.gpt2 import GPT2Config, gpt2_lm
from torchscale.rank.models.mlp import MLP
from torchscale.rank.models.resnet import BasicBlock, ResNet
from torchscale.rank.models.transformer import seq2seq_transformer

MLP_IN_FEATURES = 32
MLP_CLASSES = 10

TINY_GPT2 = GPT2Config(hidden=64, layers=2, heads=4, vocab_size=1024, max_positions=256)
TINY_BERT = BertConfig(
    hidden=64, layers=2, heads=4, intermediate=256, vocab_size=1024, max_positions=256
)


def tiny_mlp(*, hidden: int, layers: int) -> ModelBundle:
    """Classify random 32-feature vectors into 10 classes (22,026 parameters by default)."""
    model = MLP(MLP_IN_FEATURES, hidden, layers, MLP_CLASSES)
    task = training_tasks.classification((MLP_IN_FEATURES,), MLP_CLASSES)
    return training_tasks.sampled_bundle(model, task, "other", (MLP_IN_FEATURES,))


def tiny_cnn(*, image_size: int, num_classes: int) -> ModelBundle:
    """A three-stage ResNet (widths 16/32/64, one basic block each, 3x3 stem) for 32x32 images."""
    model = ResNet(
        BasicBlock, (1, 1, 1), widths=(16, 32, 64), num_classes=num_classes, stem="small"
    )
    return training_tasks.vision_bundle(model, image_size, num_classes, conv_net=True)


def tiny_gpt2(**options: Any) -> ModelBundle:
    """GPT-2 code at hidden 64, 2 layers, 4 heads, vocab 1,024 (a multiple of 64: padding
    changes nothing), 256 positions."""
    return gpt2_lm("tiny-gpt2", TINY_GPT2, **options)


def tiny_bert(**options: Any) -> ModelBundle:
    """BertForMaskedLM code at hidden 64, 2 layers, 4 heads, vocab 1,024 (no padding needed),
    256 positions."""
    return bert_mlm("tiny-bert", TINY_BERT, **options)


def tiny_transformer(**options: Any) -> ModelBundle:
    """The encoder-decoder code at d_model 64, 2+2 layers, vocab 1,024, seq_len 32 (its
    spec's defaults)."""
    return seq2seq_transformer("tiny-transformer", **options)
