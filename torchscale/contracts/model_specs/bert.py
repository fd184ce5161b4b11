"""BERT-base and BERT-large as BertForMaskedLM (torchscale/rank/models/bert.py), speed-first by
default, as published under `faithful: true` (shared_options.py)."""

from __future__ import annotations

from torchscale.contracts.model_specs.shared_options import language_options
from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured, TrainingTraits

BERT_BASE = BuiltinModelSpec(
    name="bert-base",
    family="bert",
    description=(
        "BERT-base uncased as BertForMaskedLM (encoder without pooler + MLM head tied to the word"
        " embeddings): 109,514,298 parameters as published, 109,518,912 with the vocabulary "
        "padded to 30,528 (bare BertModel with pooler: 109,482,240)"
    ),
    builder="torchscale.rank.models.bert:bert_base",
    defaults=language_options(128),
    task="masked-tokens",
    training=TrainingTraits(bf16_stream=True, token_loss=True),
    measured=Measured(
        kind="language",
        parameters=109_518_912,
        input_shape=(128,),
        tokens_per_sample=128,
        forward_flops=28_500_295_680,
        train_flops=85_500_887_040,
        activation_bytes_fp32=93_194_244,
        activation_bytes_bf16=46_648_834,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)

BERT_LARGE = BuiltinModelSpec(
    name="bert-large",
    family="bert",
    description=(
        "BERT-large uncased as BertForMaskedLM (encoder without pooler + MLM head tied to the "
        "word embeddings): 335,174,458 parameters as published, 335,180,608 padded (bare "
        "BertModel with pooler: 335,141,888)"
    ),
    builder="torchscale.rank.models.bert:bert_large",
    defaults=language_options(128),
    task="masked-tokens",
    training=TrainingTraits(bf16_stream=True, token_loss=True),
    measured=Measured(
        kind="language",
        parameters=335_180_608,
        input_shape=(128,),
        tokens_per_sample=128,
        forward_flops=87_191_191_552,
        train_flops=261_573_574_656,
        activation_bytes_fp32=219_826_180,
        activation_bytes_bf16=110_038_530,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)
