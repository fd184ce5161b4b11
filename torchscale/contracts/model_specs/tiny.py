"""The tiny models (torchscale/rank/models/tiny.py): the real architectures at toy sizes, for tests
and CPU demos, and `tiny-mlp`, a model of its own (torchscale/rank/models/mlp.py)."""

from __future__ import annotations

from torchscale.contracts.model_specs.shared_options import language_options
from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured, TrainingTraits

TINY_MLP = BuiltinModelSpec(
    name="tiny-mlp",
    family="tiny",
    description="2 hidden layers of 128 on 32 random features, 10 classes: 22,026 parameters",
    builder="torchscale.rank.models.tiny:tiny_mlp",
    defaults={"hidden": 128, "layers": 2},
    task="classification",
    measured=Measured(
        kind="other",
        parameters=22_026,
        input_shape=(32,),
        tokens_per_sample=None,
        forward_flops=43_520,
        train_flops=122_368,
        activation_bytes_fp32=1_204,
        activation_bytes_bf16=606,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)

TINY_CNN = BuiltinModelSpec(
    name="tiny-cnn",
    family="tiny",
    description="3-stage ResNet (16/32/64 channels), 32x32, 10 classes: 78,042 parameters",
    builder="torchscale.rank.models.tiny:tiny_cnn",
    defaults={"image_size": 32, "num_classes": 10},
    task="classification",
    training=TrainingTraits(conv_net=True),
    measured=Measured(
        kind="vision",
        parameters=78_042,
        input_shape=(3, 32, 32),
        tokens_per_sample=None,
        forward_flops=25_003_264,
        train_flops=74_125_056,
        activation_bytes_fp32=654_260,
        activation_bytes_bf16=328_478,
    ),
    strategies=("ddp", "fsdp", "pp", "hybrid"),
)

TINY_GPT2 = BuiltinModelSpec(
    name="tiny-gpt2",
    family="tiny",
    description="GPT-2 code, 2 layers of 64, vocab 1,024: 182,016 parameters",
    builder="torchscale.rank.models.tiny:tiny_gpt2",
    defaults=language_options(64),
    task="next-token",
    training=TrainingTraits(bf16_stream=True, token_loss=True),
    measured=Measured(
        kind="language",
        parameters=182_016,
        input_shape=(64,),
        tokens_per_sample=64,
        forward_flops=23_068_672,
        train_flops=69_206_016,
        activation_bytes_fp32=824_844,
        activation_bytes_bf16=415_242,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)

TINY_BERT = BuiltinModelSpec(
    name="tiny-bert",
    family="tiny",
    description="BertForMaskedLM code, 2 layers of 64, vocab 1,024: 187,456 parameters",
    builder="torchscale.rank.models.tiny:tiny_bert",
    defaults=language_options(64),
    task="masked-tokens",
    training=TrainingTraits(bf16_stream=True, token_loss=True),
    measured=Measured(
        kind="language",
        parameters=187_456,
        input_shape=(64,),
        tokens_per_sample=64,
        forward_flops=23_592_960,
        train_flops=70_778_880,
        activation_bytes_fp32=875_012,
        activation_bytes_bf16=440_834,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)

TINY_TRANSFORMER = BuiltinModelSpec(
    name="tiny-transformer",
    family="tiny",
    description="encoder-decoder code, d_model 64, 2+2 layers, vocab 1,024: 299,776 parameters",
    builder="torchscale.rank.models.tiny:tiny_transformer",
    defaults={
        "d_model": 64,
        "nhead": 4,
        "num_encoder_layers": 2,
        "num_decoder_layers": 2,
        "dim_feedforward": 128,
        "dropout": 0.1,
        "seq_len": 32,
        "vocab_size": 1024,
    },
    task="seq2seq",
    training=TrainingTraits(token_loss=True),
    measured=Measured(
        kind="language",
        parameters=299_776,
        input_shape=(32,),
        tokens_per_sample=32,
        forward_flops=16_252_928,
        train_flops=48_758_784,
        activation_bytes_fp32=1_199_628,
        activation_bytes_bf16=1_199_628,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)
