"""The built-in models: one line per model, in the order `torchscale list` shows them. Every
consumer reads this mapping (model_specs/__init__.py lists them); its spec says everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.model_specs import bert, gpt2, resnet, tiny, transformer, vit
from torchscale.contracts.model_specs.spec import BuiltinModelSpec, Measured


def _by_name(*specs: BuiltinModelSpec) -> dict[str, BuiltinModelSpec]:
    """name -> spec; a name given twice is a mistake, not an override."""
    named = {spec.name: spec for spec in specs}
    if len(named) != len(specs):
        raise ValueError("two built-in model specs share a name")
    return named


# name -> spec: the one registry of built-in models
BUILTIN: dict[str, BuiltinModelSpec] = _by_name(
    resnet.RESNET18,
    resnet.RESNET50,
    vit.VIT_B16,
    bert.BERT_BASE,
    bert.BERT_LARGE,
    gpt2.GPT2,
    gpt2.GPT2_MEDIUM,
    gpt2.GPT2_LARGE,
    transformer.TRANSFORMER,
    # tiny variants: same code paths, sized for tests and CPU demos
    tiny.TINY_MLP,
    tiny.TINY_CNN,
    tiny.TINY_GPT2,
    tiny.TINY_BERT,
    tiny.TINY_TRANSFORMER,
)


def stored(name: str, options: Mapping[str, Any] | None = None) -> Measured | None:
    """The stored figures of a built-in model at its defaults (`options` that restate defaults
    included); None for a plug-in or other options: nothing stored holds their figures."""
    spec = BUILTIN.get(name)
    if spec is None or any(spec.defaults.get(k, _ABSENT) != v for k, v in (options or {}).items()):
        return None
    return spec.measured


_ABSENT = object()
