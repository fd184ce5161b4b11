"""The stored figures of the built-in models (each spec's `measured` and `strategies`,
torchscale/contracts/model_specs/) equal what building them says, so `torchscale list` and `config
init` can read them without importing torch and the specs can never drift from the model code. A
failure prints the value to paste."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from tests.model_measure import measure
from tests.project.test_torch_free import import_chain, import_graph
from torchscale.contracts.cell_settings import ModelSpec
from torchscale.contracts.model_specs.listing import rows
from torchscale.contracts.model_specs.registry import BUILTIN, stored
from torchscale.contracts.model_specs.spec import Measured
from torchscale.rank.models import build_model, parameter_count
from torchscale.rank.strategy_layouts import supported_strategies

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "tests.plugin_models:bundle_factory"


def literal(measured: Measured, strategies: tuple[str, ...]) -> str:
    """The spec's `measured` and `strategies`, to paste when the model code changed."""
    lines = ["    measured=Measured("]
    lines += [f"        {f.name}={getattr(measured, f.name)!r}," for f in fields(measured)]
    lines += ["    ),", f"    strategies={strategies!r},"]
    return "\n".join(lines).replace("'", '"')


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUILTIN))
def test_stored_facts_equal_the_built_model(name: str) -> None:
    spec = BUILTIN[name]
    measured = measure(name)
    strategies = tuple(supported_strategies(ModelSpec(name=name)))
    assert (spec.measured, spec.strategies) == (measured, strategies), (
        f"the spec of {name} (torchscale/contracts/model_specs/{spec.family}.py) is stale; it "
        "should read:\n" + literal(measured, strategies)
    )


def test_measure_agrees_with_the_plain_count() -> None:
    import torch

    with torch.device("meta"):
        model = build_model("tiny-gpt2", {"seq_len": 16}).model
    facts = measure("tiny-gpt2", {"seq_len": 16})
    assert facts.parameters == parameter_count(model) == BUILTIN["tiny-gpt2"].measured.parameters
    assert facts.tokens_per_sample == 16
    # FLOPs grow with the sequence; the step costs about three forward passes
    assert facts.forward_flops < BUILTIN["tiny-gpt2"].measured.forward_flops
    assert 2.5 < facts.train_flops / facts.forward_flops < 3.5


def test_plug_ins_and_options_are_measured_on_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    assert stored(PLUGIN) is None
    assert stored("gpt2", {"seq_len": 128}) is None
    assert stored("gpt2") is BUILTIN["gpt2"].measured
    facts = measure(PLUGIN)
    assert isinstance(facts, Measured)
    assert facts.parameters == 4 * 8 + 8 + 8 * 1 + 1  # Linear(4, 8), Linear(8, 1)
    assert facts.forward_flops == 2 * (4 * 8 + 8 * 1)
    assert facts.train_flops > facts.forward_flops


def test_rows_are_what_list_prints() -> None:
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
    resnet50 = BUILTIN["resnet50"].measured
    assert resnet50.forward_flops / 1e9 == pytest.approx(8.178, rel=0.001)
    assert resnet50.train_flops / 1e9 == pytest.approx(24.3, rel=0.005)
    assert BUILTIN["vit-b16"].measured.forward_flops / 1e9 == pytest.approx(35.13, rel=0.001)


@pytest.mark.slow  # starts a child process
def test_metadata_imports_without_torch() -> None:
    probe = (
        "import sys\n"
        "from torchscale.contracts.model_specs.listing import rows\n"
        "rows()\n"
        "print(sorted(m for m in ('torch', 'numpy', 'pydantic') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_listings_imports_reach_no_torch_numpy_or_pydantic_as_its_source_reads() -> None:
    """The same, read from the source (tests/project/test_torch_free.py): what the listing
    runs when imported reaches none of the three, and rows() imports nothing when called."""
    module = "torchscale.contracts.model_specs.listing"
    graph = import_graph([module])
    heavy = ("torch", "numpy", "pydantic")
    assert {name: import_chain(graph, module, name) for name in heavy} == dict.fromkeys(heavy)
    tree = ast.parse(Path(rows.__code__.co_filename).read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert "rows" in {f.name for f in functions}
    imports = (ast.Import, ast.ImportFrom)
    assert [n for f in functions for n in ast.walk(f) if isinstance(n, imports)] == []


def test_the_published_gpt2_counts_the_reference_flops() -> None:
    """../shared/reference/models.md: GPT-2 small's forward is 291.65 GFLOP per sample of 1,024
    tokens as published; the zoo's padded vocabulary adds 47 rows to the head GEMM."""
    published = measure("gpt2", {"faithful": True})
    assert published.parameters == 124_439_808
    assert published.forward_flops == 291_648_307_200
    padded_head = 2 * 1024 * 768 * 47  # one sample's extra multiply-accumulates, x2
    assert BUILTIN["gpt2"].measured.forward_flops - published.forward_flops == padded_head


@pytest.mark.slow
def test_gpt2_flops_are_the_stated_mfu_convention() -> None:
    """torchscale/contracts/flop_convention.py: the counted step is 6N + 12LHQT per token with N the
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
