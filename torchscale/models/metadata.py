"""What `torchscale list` and `torchscale config init` state of each built-in model, stored.

Counting parameters and FLOPs means building the model, and building means importing torch
(seconds) before the first line of output. The numbers only change with the model code, so they
are computed once (`registry.measure`, strategies by `strategy_layouts.supported_strategies`)
and kept here as data; tests/test_model_metadata.py builds every model and fails, printing the
row to paste, the moment a stored value differs. Other options and plug-ins are not stored:
those are measured on demand. Imports nothing heavy (torchscale/models/__init__.py is lazy).

Layer 2 (rank side) of docs/architecture.md: imports only from layers below and its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What building a model on the meta device tells, for any model. FLOPs are counted by
    FlopCounterMode (2 x multiply-accumulates; matmuls and convolutions, attention under the
    MATH backend) for one sample at the model's options: `forward_flops` the forward pass,
    `train_flops` forward and backward of the loss, the work of a training step.
    `activation_bytes_fp32` / `_bf16`: what one sample's training step saves for backward,
    in fp32 and in bf16 (activation_count.py: attention as a fused kernel saves it), the
    per-sample term of the memory estimate (memory_estimate.py)."""

    kind: str
    parameters: int
    input_shape: tuple[int, ...]
    tokens_per_sample: int | None
    forward_flops: int
    train_flops: int
    activation_bytes_fp32: int
    activation_bytes_bf16: int


@dataclass(frozen=True, kw_only=True)
class ModelFacts(Measured):
    """A built-in model's row of `torchscale list` at its default options (registry.BUILTIN)."""

    family: str
    description: str
    options: Mapping[str, int | float]
    strategies: tuple[str, ...]  # ddp, fsdp; tp, pp, hybrid where its plan splits over 2 ranks


# catalog order (registry.BUILTIN); written from the models by tests/test_model_metadata.py
STORED: dict[str, ModelFacts] = {
    "resnet18": ModelFacts(
        family="resnet",
        kind="vision",
        parameters=11_689_512,
        input_shape=(3, 224, 224),
        tokens_per_sample=None,
        forward_flops=3_628_146_688,
        train_flops=10_648_412_160,
        activation_bytes_fp32=22_222_252,
        activation_bytes_bf16=11_933_146,
        strategies=("ddp", "fsdp", "pp", "hybrid"),
        options={"image_size": 224, "num_classes": 1000},
        description=(
            "ResNet-18 (torchvision layout), 1000 classes, 224x224: 11,689,512 parameters"
        ),
    ),
    "resnet50": ModelFacts(
        family="resnet",
        kind="vision",
        parameters=25_557_032,
        input_shape=(3, 224, 224),
        tokens_per_sample=None,
        forward_flops=8_178_368_512,
        train_flops=24_299_077_632,
        activation_bytes_fp32=86_125_996,
        activation_bytes_bf16=43_972_058,
        strategies=("ddp", "fsdp", "pp", "hybrid"),
        options={"image_size": 224, "num_classes": 1000},
        description=(
            "ResNet-50 v1.5 (stride in the 3x3 conv, as torchvision), 1000 classes, 224x224: "
            "25,557,032 parameters"
        ),
    ),
    "vit-b16": ModelFacts(
        family="vit",
        kind="vision",
        parameters=86_567_656,
        input_shape=(3, 224, 224),
        tokens_per_sample=None,
        forward_flops=35_127_656_448,
        train_flops=105_151_758_336,
        activation_bytes_fp32=118_164_692,
        activation_bytes_bf16=59_158_786,
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
        options={"image_size": 224, "num_classes": 1000},
        description=(
            "ViT-B/16 (torchvision vit_b_16: class token, learned positions, pre-LN), 1000 "
            "classes, 224x224: 86,567,656 parameters"
        ),
    ),
    "bert-base": ModelFacts(
        family="bert",
        kind="language",
        parameters=109_518_912,
        input_shape=(128,),
        tokens_per_sample=128,
        forward_flops=28_500_295_680,
        train_flops=85_500_887_040,
        activation_bytes_fp32=93_194_244,
        activation_bytes_bf16=46_648_834,
        description=(
            "BERT-base uncased as BertForMaskedLM (encoder without pooler + MLM head tied to the "
            "word embeddings): 109,514,298 parameters as published, 109,518,912 with the "
            "vocabulary padded to 30,528 (bare BertModel with pooler: 109,482,240)"
        ),
        options={"seq_len": 128, "dropout": 0.0, "pad_vocab_to": 64, "faithful": False},
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
    ),
    "bert-large": ModelFacts(
        family="bert",
        kind="language",
        parameters=335_180_608,
        input_shape=(128,),
        tokens_per_sample=128,
        forward_flops=87_191_191_552,
        train_flops=261_573_574_656,
        activation_bytes_fp32=219_826_180,
        activation_bytes_bf16=110_038_530,
        description=(
            "BERT-large uncased as BertForMaskedLM (encoder without pooler + MLM head tied to the"
            " word embeddings): 335,174,458 parameters as published, 335,180,608 padded (bare "
            "BertModel with pooler: 335,141,888)"
        ),
        options={"seq_len": 128, "dropout": 0.0, "pad_vocab_to": 64, "faithful": False},
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
    ),
    "gpt2": ModelFacts(
        family="gpt2",
        kind="language",
        parameters=124_475_904,
        input_shape=(1024,),
        tokens_per_sample=1024,
        forward_flops=291_722_231_808,
        train_flops=875_166_695_424,
        activation_bytes_fp32=816_934_924,
        activation_bytes_bf16=408_872_970,
        description=(
            "GPT-2 small (12 layers, 768 hidden), LM head tied to the token embedding: "
            "124,439,808 parameters as published, 124,475,904 with the vocabulary padded to "
            "50,304"
        ),
        options={"seq_len": 1024, "dropout": 0.0, "pad_vocab_to": 64, "faithful": False},
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
    ),
    "gpt2-medium": ModelFacts(
        family="gpt2",
        kind="language",
        parameters=354_871_296,
        input_shape=(1024,),
        tokens_per_sample=1024,
        forward_flops=827_049_639_936,
        train_flops=2_481_148_919_808,
        activation_bytes_fp32=1_826_844_684,
        activation_bytes_bf16=914_417_674,
        description=(
            "GPT-2 medium (24 layers, 1024 hidden), LM head tied: 354,823,168 parameters as "
            "published, 354,871,296 padded"
        ),
        options={"seq_len": 1024, "dropout": 0.0, "pad_vocab_to": 64, "faithful": False},
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
    ),
    "gpt2-large": ModelFacts(
        family="gpt2",
        kind="language",
        parameters=774_090_240,
        input_shape=(1024,),
        tokens_per_sample=1024,
        forward_flops=1_774_693_908_480,
        train_flops=5_324_081_725_440,
        activation_bytes_fp32=3_239_800_844,
        activation_bytes_bf16=1_621_682_186,
        description=(
            "GPT-2 large (36 layers, 1280 hidden), LM head tied: 774,030,080 parameters as "
            "published, 774,090,240 padded"
        ),
        options={"seq_len": 1024, "dropout": 0.0, "pad_vocab_to": 64, "faithful": False},
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
    ),
    "transformer": ModelFacts(
        family="transformer",
        kind="language",
        parameters=3_494_400,
        input_shape=(128,),
        tokens_per_sample=128,
        forward_flops=696_254_464,
        train_flops=2_088_763_392,
        activation_bytes_fp32=22_694_924,
        activation_bytes_bf16=22_694_924,
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
        options={
            "d_model": 128,
            "nhead": 4,
            "num_encoder_layers": 3,
            "num_decoder_layers": 3,
            "dim_feedforward": 512,
            "dropout": 0.1,
            "seq_len": 128,
            "vocab_size": 8192,
        },
        description=(
            "encoder-decoder nn.Transformer (d_model 128, 4 heads, 3+3 layers, FFN 512) with a "
            "shared 8,192-token embedding and output projection: 3,494,400 parameters"
        ),
    ),
    "tiny-mlp": ModelFacts(
        family="tiny",
        kind="other",
        parameters=22_026,
        input_shape=(32,),
        tokens_per_sample=None,
        forward_flops=43_520,
        train_flops=122_368,
        activation_bytes_fp32=1_204,
        activation_bytes_bf16=606,
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
        options={"hidden": 128, "layers": 2},
        description=("2 hidden layers of 128 on 32 random features, 10 classes: 22,026 parameters"),
    ),
    "tiny-cnn": ModelFacts(
        family="tiny",
        kind="vision",
        parameters=78_042,
        input_shape=(3, 32, 32),
        tokens_per_sample=None,
        forward_flops=25_003_264,
        train_flops=74_125_056,
        activation_bytes_fp32=654_260,
        activation_bytes_bf16=328_478,
        strategies=("ddp", "fsdp", "pp", "hybrid"),
        options={"image_size": 32, "num_classes": 10},
        description=("3-stage ResNet (16/32/64 channels), 32x32, 10 classes: 78,042 parameters"),
    ),
    "tiny-gpt2": ModelFacts(
        family="tiny",
        kind="language",
        parameters=182_016,
        input_shape=(64,),
        tokens_per_sample=64,
        forward_flops=23_068_672,
        train_flops=69_206_016,
        activation_bytes_fp32=824_844,
        activation_bytes_bf16=415_242,
        description="GPT-2 code, 2 layers of 64, vocab 1,024: 182,016 parameters",
        options={"seq_len": 64, "dropout": 0.0, "pad_vocab_to": 64, "faithful": False},
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
    ),
    "tiny-bert": ModelFacts(
        family="tiny",
        kind="language",
        parameters=187_456,
        input_shape=(64,),
        tokens_per_sample=64,
        forward_flops=23_592_960,
        train_flops=70_778_880,
        activation_bytes_fp32=875_012,
        activation_bytes_bf16=440_834,
        description="BertForMaskedLM code, 2 layers of 64, vocab 1,024: 187,456 parameters",
        options={"seq_len": 64, "dropout": 0.0, "pad_vocab_to": 64, "faithful": False},
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
    ),
    "tiny-transformer": ModelFacts(
        family="tiny",
        kind="language",
        parameters=299_776,
        input_shape=(32,),
        tokens_per_sample=32,
        forward_flops=16_252_928,
        train_flops=48_758_784,
        activation_bytes_fp32=1_199_628,
        activation_bytes_bf16=1_199_628,
        strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
        options={
            "d_model": 64,
            "nhead": 4,
            "num_encoder_layers": 2,
            "num_decoder_layers": 2,
            "dim_feedforward": 128,
            "dropout": 0.1,
            "seq_len": 32,
            "vocab_size": 1024,
        },
        description=(
            "encoder-decoder code, d_model 64, 2+2 layers, vocab 1,024: 299,776 parameters"
        ),
    ),
}


def stored(name: str, options: Mapping[str, Any] | None = None) -> ModelFacts | None:
    """The stored facts of a built-in model at its defaults (`options` that restate defaults
    included); None for a plug-in or for other options (measure those: `registry.measure`,
    `strategy_layouts.supported_strategies`)."""
    facts = STORED.get(name)
    if facts is None or any(facts.options.get(k, _ABSENT) != v for k, v in (options or {}).items()):
        return None
    return facts


_ABSENT = object()


def rows() -> list[dict[str, Any]]:
    """One row per built-in model, in catalog order, as `torchscale list --json` prints them."""
    return [row(name, facts) for name, facts in STORED.items()]


def row(name: str, facts: ModelFacts) -> dict[str, Any]:
    """The JSON row of one model: its name and facts, the descriptive keys first."""
    fields = asdict(facts)
    first = ("family", "kind", "parameters", "input_shape", "tokens_per_sample", "options")
    ordered = {key: fields.pop(key) for key in first}
    return {"name": name, **ordered, **fields, "strategies": list(facts.strategies)}
