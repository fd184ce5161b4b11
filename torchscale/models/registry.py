"""The built-in model zoo: names, what each one is, its default options, and how to build it.

The names and accepted option names must equal `torchscale.catalog.BUILTIN_MODELS`
(kept apart so config validation never imports torch); tests hold the two together. Here an
entry's accepted options are exactly the keys of its defaults, so an option can never be
accepted without a documented default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from torchscale.catalog import faithful_conflict, is_plugin_model, workload_options
from torchscale.errors import ModelError
from torchscale.models import bert, gpt2, resnet, tiny, transformer, vit, workload
from torchscale.models.activation_count import saved_activation_bytes
from torchscale.models.bundle import ModelBundle, call_model
from torchscale.models.metadata import Measured, rows
from torchscale.models.option_values import positive_int, probability, switch
from torchscale.models.plugin import load_plugin
from torchscale.suggest import did_you_mean


@dataclass(frozen=True)
class ModelInfo:
    """One built-in model. `builder(**options)` gets every option, defaults filled in."""

    name: str
    family: str
    description: str  # which variant it is and its exact parameter count with the defaults
    defaults: Mapping[str, Any]
    builder: Callable[..., ModelBundle]

    @property
    def options(self) -> frozenset[str]:
        """The option names this model accepts."""
        return frozenset(self.defaults)


_VISION = {"image_size": 224, "num_classes": 1000}

_INFOS = (
    ModelInfo(
        "resnet18",
        "resnet",
        "ResNet-18 (torchvision layout), 1000 classes, 224x224: 11,689,512 parameters",
        _VISION,
        resnet.resnet18,
    ),
    ModelInfo(
        "resnet50",
        "resnet",
        "ResNet-50 v1.5 (stride in the 3x3 conv, as torchvision), 1000 classes, 224x224: "
        "25,557,032 parameters",
        _VISION,
        resnet.resnet50,
    ),
    ModelInfo(
        "vit-b16",
        "vit",
        "ViT-B/16 (torchvision vit_b_16: class token, learned positions, pre-LN), 1000 classes, "
        "224x224: 86,567,656 parameters",
        _VISION,
        vit.vit_b16,
    ),
    ModelInfo(
        "bert-base",
        "bert",
        "BERT-base uncased as BertForMaskedLM (encoder without pooler + MLM head tied to the "
        "word embeddings): 109,514,298 parameters as published, 109,518,912 with the vocabulary "
        "padded to 30,528 (bare BertModel with pooler: 109,482,240)",
        workload.options(128),
        bert.bert_base,
    ),
    ModelInfo(
        "bert-large",
        "bert",
        "BERT-large uncased as BertForMaskedLM (encoder without pooler + MLM head tied to the "
        "word embeddings): 335,174,458 parameters as published, 335,180,608 padded (bare "
        "BertModel with pooler: 335,141,888)",
        workload.options(128),
        bert.bert_large,
    ),
    ModelInfo(
        "gpt2",
        "gpt2",
        "GPT-2 small (12 layers, 768 hidden), LM head tied to the token embedding: "
        "124,439,808 parameters as published, 124,475,904 with the vocabulary padded to 50,304",
        workload.options(1024),
        gpt2.gpt2,
    ),
    ModelInfo(
        "gpt2-medium",
        "gpt2",
        "GPT-2 medium (24 layers, 1024 hidden), LM head tied: 354,823,168 parameters as "
        "published, 354,871,296 padded",
        workload.options(1024),
        gpt2.gpt2_medium,
    ),
    ModelInfo(
        "gpt2-large",
        "gpt2",
        "GPT-2 large (36 layers, 1280 hidden), LM head tied: 774,030,080 parameters as "
        "published, 774,090,240 padded",
        workload.options(1024),
        gpt2.gpt2_large,
    ),
    ModelInfo(
        "transformer",
        "transformer",
        "encoder-decoder nn.Transformer (d_model 128, 4 heads, 3+3 layers, FFN 512) with a "
        "shared 8,192-token embedding and output projection: 3,494,400 parameters",
        transformer.DEFAULTS,
        transformer.transformer,
    ),
    ModelInfo(
        "tiny-mlp",
        "tiny",
        "2 hidden layers of 128 on 32 random features, 10 classes: 22,026 parameters",
        {"hidden": 128, "layers": 2},
        tiny.tiny_mlp,
    ),
    ModelInfo(
        "tiny-cnn",
        "tiny",
        "3-stage ResNet (16/32/64 channels), 32x32, 10 classes: 78,042 parameters",
        {"image_size": 32, "num_classes": 10},
        tiny.tiny_cnn,
    ),
    ModelInfo(
        "tiny-gpt2",
        "tiny",
        "GPT-2 code, 2 layers of 64, vocab 1,024: 182,016 parameters",
        workload.options(64),
        tiny.tiny_gpt2,
    ),
    ModelInfo(
        "tiny-bert",
        "tiny",
        "BertForMaskedLM code, 2 layers of 64, vocab 1,024: 187,456 parameters",
        workload.options(64),
        tiny.tiny_bert,
    ),
    ModelInfo(
        "tiny-transformer",
        "tiny",
        "encoder-decoder code, d_model 64, 2+2 layers, vocab 1,024: 299,776 parameters",
        tiny.TINY_TRANSFORMER_DEFAULTS,
        tiny.tiny_transformer,
    ),
)

BUILTIN: dict[str, ModelInfo] = {info.name: info for info in _INFOS}


def build_model(
    name: str,
    options: Mapping[str, Any] | None = None,
    *,
    seq_len: int | None = None,
    image_size: int | None = None,
) -> ModelBundle:
    """Build a built-in model or a `package.module:factory` plug-in.

    `seq_len`/`image_size` are the config-wide data settings: they apply to the models that
    take that option and are ignored by the others; a model's own `options` win over them.
    Plug-ins receive only their `options`. Builds on the current default device, so
    `with torch.device("meta"):` builds without allocating memory.
    """
    options = dict(options or {})
    info = BUILTIN.get(name)
    if info is None:
        if is_plugin_model(name):
            return load_plugin(name, options)
        hint = did_you_mean(name, BUILTIN)
        hint = hint if hint.startswith(" (did you mean") else ""  # the list follows anyway
        raise ModelError(
            f"unknown model '{name}'{hint}; built-in models: {', '.join(BUILTIN)}; "
            "or give a plug-in as 'package.module:factory'"
        )
    unknown = sorted(set(options) - info.options)
    if unknown:
        raise ModelError(
            f"model '{name}' does not take option(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(sorted(info.options))}"
        )
    resolved = dict(info.defaults)
    for key, value in (("seq_len", seq_len), ("image_size", image_size)):
        if value is not None and key in resolved:
            resolved[key] = value
    if "faithful" in options:  # checked before workload_options folds it into the others
        switch(name, "faithful", options["faithful"])
    conflict = faithful_conflict(name, options)
    if conflict is not None:
        raise ModelError(conflict)
    resolved.update(workload_options(name, options))
    for key, value in resolved.items():
        resolved[key] = _checker(info.defaults[key])(name, key, value)
    return info.builder(**resolved)


def _checker(default: Any) -> Callable[[str, str, Any], Any]:
    """The value check of an option, by the type of its default."""
    if isinstance(default, bool):
        return switch
    return probability if isinstance(default, float) else positive_int


def parameter_count(model: torch.nn.Module) -> int:
    """Parameters of `model`; a tensor shared by two modules (tied weights) counts once."""
    return sum(p.numel() for p in model.parameters())


def list_models() -> list[dict[str, Any]]:
    """One row per built-in model for `torchscale list`: the stored facts, nothing built."""
    return rows()


def measure(name: str, options: Mapping[str, Any] | None = None) -> Measured:
    """What `torchscale list` states of a model, found by building it on the meta device (no
    memory, no kernels): the path for a plug-in or other options, and what the stored facts of
    the built-in models (torchscale/models/metadata.py) are tested against."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    meta = torch.device("meta")
    with meta:
        bundle = build_model(name, options)
    with sdpa_kernel(SDPBackend.MATH):  # attention as matmuls: every op has a FLOP formula
        forward, train = _flops_per_sample(bundle, meta)
    activations = {dtype: saved_activation_bytes(bundle, dtype) for dtype in _COUNTED_DTYPES}
    return Measured(
        kind=bundle.kind,
        parameters=parameter_count(bundle.model),
        input_shape=bundle.input_shape,
        tokens_per_sample=bundle.tokens_per_sample,
        forward_flops=forward,
        train_flops=train,
        activation_bytes_fp32=activations[torch.float32],
        activation_bytes_bf16=activations[torch.bfloat16],
    )


_COUNTED_DTYPES = (torch.float32, torch.bfloat16)


def _flops_per_sample(bundle: ModelBundle, device: torch.device) -> tuple[int, int]:
    """FLOPs of one sample: the forward pass, and forward + backward of its loss (a step)."""
    from torch.utils.flop_counter import FlopCounterMode

    inputs, targets = bundle.make_batch(1, device)
    with torch.no_grad(), FlopCounterMode(display=False) as forward:
        call_model(bundle.model, inputs)
    with FlopCounterMode(display=False) as train:
        torch.autograd.backward(bundle.step_loss(inputs, targets))
    return int(forward.get_total_flops()), int(train.get_total_flops())
