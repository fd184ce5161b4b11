"""The encoder-decoder `transformer` (torchscale/rank/models/transformer.py): the defaults of the
encoder-decoder benchmark users know (seed 003), the rest ours (the module says which)."""

from __future__ import annotations

from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured, TrainingTraits

TRANSFORMER = BuiltinModelSpec(
    name="transformer",
    family="transformer",
    description=(
        "encoder-decoder nn.Transformer (d_model 128, 4 heads, 3+3 layers, FFN 512) with a shared"
        " 8,192-token embedding and output projection: 3,494,400 parameters"
    ),
    builder="torchscale.rank.models.transformer:transformer",
    defaults={
        "d_model": 128,
        "nhead": 4,
        "num_encoder_layers": 3,
        "num_decoder_layers": 3,
        "dim_feedforward": 512,
        "dropout": 0.1,
        "seq_len": 128,
        "vocab_size": 8192,
    },
    task="seq2seq",
    training=TrainingTraits(token_loss=True),
    measured=Measured(
        kind="language",
        parameters=3_494_400,
        input_shape=(128,),
        tokens_per_sample=128,
        forward_flops=696_254_464,
        train_flops=2_088_763_392,
        activation_bytes_fp32=22_694_924,
        activation_bytes_bf16=22_694_924,
    ),
    strategies=("ddp", "fsdp", "tp", "pp", "hybrid"),
)
