"""The stored facts of the built-in models (torchscale/models/metadata.py) equal what building
them says, so `torchscale list` and `config init` can read them without importing torch and the
table can never drift from the model code. A failure prints the row to paste."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import asdict, fields
from pathlib import Path

import pytest

from torchscale.cell_settings import ModelSpec
from torchscale.models import BUILTIN, build_model, list_models, parameter_count
from torchscale.models.metadata import STORED, Measured, ModelFacts, rows, stored
from torchscale.models.registry import measure
from torchscale.strategy_layouts import supported_strategies

REPO_ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "tests.plugin_models:bundle_factory"


def computed(name: str) -> ModelFacts:
    """A built-in model's facts from the model code: built on the meta device and counted."""
    info = BUILTIN[name]
    return ModelFacts(
        **asdict(measure(name)),
        family=info.family,
        description=info.description,
        options=dict(info.defaults),
        strategies=tuple(supported_strategies(ModelSpec(name=name))),
    )


def literal(name: str, facts: ModelFacts) -> str:
    """The entry of metadata.STORED for `facts`, to paste when the model code changed."""
    lines = [f"    {name!r}: ModelFacts("]
    lines += [f"        {f.name}={getattr(facts, f.name)!r}," for f in fields(facts)]
    return "\n".join([*lines, "    ),"]).replace("'", '"')


@pytest.mark.parametrize("name", list(BUILTIN))
def test_stored_facts_equal_the_built_model(name: str) -> None:
    expected = computed(name)
    assert STORED.get(name) == expected, (
        f"torchscale/models/metadata.py is stale for {name}; its entry should read:\n"
        + literal(name, expected)
    )


def test_every_built_in_model_is_stored_in_catalog_order() -> None:
    assert list(STORED) == list(BUILTIN)


def test_measure_agrees_with_the_plain_count() -> None:
    import torch

    with torch.device("meta"):
        model = build_model("tiny-gpt2", {"seq_len": 16}).model
    facts = measure("tiny-gpt2", {"seq_len": 16})
    assert facts.parameters == parameter_count(model) == STORED["tiny-gpt2"].parameters
    assert facts.tokens_per_sample == 16
    # FLOPs grow with the sequence; the step costs about three forward passes
    assert facts.forward_flops < STORED["tiny-gpt2"].forward_flops
    assert 2.5 < facts.train_flops / facts.forward_flops < 3.5


def test_plug_ins_and_options_are_measured_on_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    assert stored(PLUGIN) is None
    assert stored("gpt2", {"seq_len": 128}) is None
    assert stored("gpt2") is STORED["gpt2"]
    facts = measure(PLUGIN)
    assert isinstance(facts, Measured)
    assert facts.parameters == 4 * 8 + 8 + 8 * 1 + 1  # Linear(4, 8), Linear(8, 1)
    assert facts.forward_flops == 2 * (4 * 8 + 8 * 1)
    assert facts.train_flops > facts.forward_flops


def test_rows_are_what_list_prints() -> None:
    assert list_models() == rows()
    gpt2 = {row["name"]: row for row in rows()}["gpt2"]
    assert gpt2["parameters"] == 124_475_904  # the vocabulary padded to 50,304 rows
    assert gpt2["strategies"] == ["ddp", "fsdp", "tp", "pp", "hybrid"]
    assert gpt2["forward_flops"] == 291_722_231_808  # padded: the head GEMM has 50,304 rows
    assert list(gpt2)[:7] == [
        "name",
        "family",
        "kind",
        "parameters",
        "input_shape",
        "tokens_per_sample",
        "options",
    ]


def test_the_reference_flops_hold() -> None:
    # ../shared/reference/models.md: resnet50 forward 8.178 GFLOPs, fwd+bwd about 24.3
    resnet50 = STORED["resnet50"]
    assert resnet50.forward_flops / 1e9 == pytest.approx(8.178, rel=0.001)
    assert resnet50.train_flops / 1e9 == pytest.approx(24.3, rel=0.005)
    assert STORED["vit-b16"].forward_flops / 1e9 == pytest.approx(35.13, rel=0.001)


def test_metadata_imports_without_torch() -> None:
    probe = (
        "import sys\n"
        "from torchscale.models.metadata import rows\n"
        "rows()\n"
        "print(sorted(m for m in ('torch', 'numpy', 'pydantic') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_published_gpt2_counts_the_reference_flops() -> None:
    """../shared/reference/models.md: GPT-2 small's forward is 291.65 GFLOP per sample of 1,024
    tokens as published; the zoo's padded vocabulary adds 47 rows to the head GEMM."""
    published = measure("gpt2", {"faithful": True})
    assert published.parameters == 124_439_808
    assert published.forward_flops == 291_648_307_200
    padded_head = 2 * 1024 * 768 * 47  # one sample's extra multiply-accumulates, x2
    assert STORED["gpt2"].forward_flops - published.forward_flops == padded_head


def test_gpt2_flops_are_the_stated_mfu_convention() -> None:
    """torchscale/flop_convention.py: the counted step is 6N + 12LHQT per token with N the
    matrix weights; nanoGPT's N adds biases and LayerNorm weights (it drops wpe too)."""
    import torch

    published = measure("gpt2", {"faithful": True})
    layers, heads, head_size, seq = 12, 12, 64, 1024
    with torch.device("meta"):
        model = build_model("gpt2", {"faithful": True}).model
    matrices = sum(
        p.numel() for n, p in model.named_parameters() if p.ndim == 2 and n != "wpe.weight"
    )
    convention = 6 * matrices + 12 * layers * heads * head_size * seq
    assert published.train_flops == convention * seq
    nanogpt_n = parameter_count(model) - model.wpe.weight.numel()
    nanogpt = 6 * nanogpt_n + 12 * layers * heads * head_size * seq
    assert 0.999 < published.train_flops / (nanogpt * seq) < 1.0
