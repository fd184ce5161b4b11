"""benchmarks/workload_reference.py's bare loop, built on CPU without running the comparison:
with --compile its one compiled callable holds the model's forward and the loss (the loss
outside it made the reference the slow side on an H100), and its verdict names the target
range and a reference too slow to be a bar."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch

from tests.processes import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "workload_reference.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("workload_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _args(**overrides: Any) -> argparse.Namespace:
    values = {
        "model": "tiny-gpt2",
        "batch": 2,
        "device": "cpu",
        "compile": True,
        "residual": "bf16",
        "rounds": 2,
        "steps": 3,
        "warmup": 1,
        "cpu_malloc": "reuse",
        "no_telemetry": False,
    }
    return argparse.Namespace(**(values | overrides))


@pytest.mark.slow  # over 2 s on 2 cores
def test_with_compile_the_loss_is_inside_the_one_compiled_callable() -> None:
    """Dynamo traces the callable the reference compiles (an eager backend: no inductor build
    on CPU): one callable, whose graph ends in the cross entropy and returns a scalar loss."""
    script = _script()
    compiled: list[Callable[..., Any]] = []
    graphs: list[torch.fx.GraphModule] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        graphs.append(gm)
        return gm.forward

    def compile_(fn: Callable[..., Any]) -> Any:
        compiled.append(fn)
        return torch.compile(fn, backend=backend)

    torch._dynamo.reset()
    ref = script.build_reference(_args(), compile_=compile_)
    assert len(compiled) == 1 and not isinstance(compiled[0], torch.nn.Module)
    with ref.autocast:
        loss = ref.train_loss(ref.inputs, ref.targets)
    assert loss.dim() == 0 and loss.requires_grad  # what the compiled callable returns
    targets = [str(node.target) for gm in graphs for node in gm.graph.nodes]
    assert any("cross_entropy" in t for t in targets), targets  # traced, not eager after it
    assert any("scaled_dot_product_attention" in t for t in targets)  # the model, same graph
    ref.step()  # backward and the optimizer through it
    torch._dynamo.reset()


def test_without_compile_nothing_is_compiled_and_the_step_trains() -> None:
    script = _script()

    def refuse(fn: Callable[..., Any]) -> Any:
        raise AssertionError("no compile without --compile")

    ref = script.build_reference(_args(compile=False), compile_=refuse)
    before = ref.model.wte.weight.detach().clone()
    ref.step()
    assert not torch.equal(before, ref.model.wte.weight)


def test_the_flop_count_is_the_convention_for_gpt2_small() -> None:
    """6N + 12LHQT per token with N the matmul weights (padded tied head included): the
    854.7 MFLOP torchscale's FlopCounter gives GPT-2 small with its padded head."""
    script = _script()
    hidden, layers, _, vocab, seq, _ = script.SHAPES["gpt2"]
    padded = (vocab + 63) // 64 * 64
    matmuls = padded * hidden + layers * 12 * hidden * hidden
    assert 6 * matmuls + 12 * layers * hidden * seq == pytest.approx(854.6e6, rel=1e-3)
    ref = script.build_reference(_args(model="tiny-gpt2", compile=False))
    h, n_layers, _, v, t, _ = script.SHAPES["tiny-gpt2"]
    expected = 6 * ((v + 63) // 64 * 64 * h + n_layers * 12 * h * h) + 12 * n_layers * h * t
    assert ref.flops_per_sample == expected * t


# the zoo's models with a loop in benchmarks/reference_loops.py, one test each (bert-large on
# the meta device alone takes most of a second)
OTHER_LOOPS = ("vit-b16", "bert-base", "bert-large", "tiny-bert", "resnet18", "resnet50")


def _reference_loops() -> ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import reference_loops
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return reference_loops


def test_the_script_names_every_other_loop() -> None:
    assert sorted(_script().OTHER_LOOPS) == sorted(_reference_loops().LOOPS) == sorted(OTHER_LOOPS)


@pytest.mark.parametrize("name", OTHER_LOOPS)
def test_every_other_loop_trains_the_cells_model(name: str) -> None:
    """The zoo's other loops count the parameters of the built-in they stand beside, built
    on the meta device."""
    from torchscale.contracts.model_specs.registry import BUILTIN

    measured = BUILTIN[name].measured
    model, _, _ = _reference_loops().build(name, 2, measured.input_shape[0], torch.device("meta"))
    assert sum(p.numel() for p in model.parameters()) == measured.parameters, name


def test_a_tiny_bert_loop_trains_on_cpu() -> None:
    """The masked-LM loop at tiny size: a finite loss on its ~15 % of targets, and a step that
    changes the tied word embedding (the decoder's gradient reaches it)."""
    ref = _script().build_reference(_args(model="tiny-bert", compile=False))
    assert ref.flops_per_sample > 0 and ref.inputs.shape == (2, 64)  # tiny-bert's sequence
    loss = ref.train_loss(ref.inputs, ref.targets)
    assert torch.isfinite(loss)
    before = ref.model.word.weight.detach().clone()
    ref.step()
    assert not torch.equal(before, ref.model.word.weight)


@pytest.mark.parametrize(
    ("ratios", "words"),
    [
        ([1.394, 1.391], "above the target range 0.97-1.02"),  # the H100 run of 87f8629
        ([0.99, 1.0, 1.005, 0.995, 1.0], "within the target range 0.97-1.02"),
        ([0.90, 0.91, 0.905], "below the target range 0.97-1.02"),
        ([0.95, 1.05], "spans an edge of the target range 0.97-1.02, not settled"),
        ([1.0], "one round: no interval"),
    ],
)
def test_the_verdict_judges_the_target_range(ratios: list[float], words: str) -> None:
    assert words in _script().verdict(ratios)


def test_a_reference_below_a_sane_mfu_is_said_to_be_no_bar() -> None:
    """The H100 run's reference: 29 % MFU compiled at b16, where such a loop reaches ~40 %."""
    script = _script()
    args = _args(model="gpt2", batch=16, device="cuda", compile=True)
    line = script.mfu_line(args, [0.292, 0.292], 1.392)
    assert line.startswith("MFU (6N + 12LHQT over the dense bf16 peak): reference 29.2%")
    assert "torchscale 40.6%" in line
    assert "below the 35% a compiled GPT-2 small loop reaches" in line
    fine = script.mfu_line(args, [0.40, 0.41], 1.0)
    assert "below" not in fine
    assert (
        script.mfu_line(_args(model="gpt2", batch=2, device="cuda"), [0.2], 1.0).count("below") == 0
    )  # a small batch is not held to the floor
    assert script.mfu_line(_args(), [None, None], 1.0) is None  # CPU: no peak, no line


def test_the_cell_matches_the_reference_residual_stream() -> None:
    script = _script()
    bf16 = script.cell_config(_args(device="cuda", residual="bf16"), "4")
    assert "bf16_activations: true" in bf16 and "precision: bf16" in bf16
    fp32 = script.cell_config(_args(device="cuda", residual="fp32"), "4")
    assert "bf16_activations: false" in fp32
    cpu = script.cell_config(_args(), "4")
    assert "bf16_activations" not in cpu and "precision: fp32" in cpu
    assert "bf16 on both sides" in script.residual_line(_args(device="cuda"))
    assert "fp32 on both sides" in script.residual_line(_args(device="cuda", residual="fp32"))
