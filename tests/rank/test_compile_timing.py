"""Timing that knows about torch.compile: the warm-up steps that compile size
neither the duration windows nor the windows' collective timeout, and a compile inside a
measured window is counted and warned about, not timed unseen as a slow step.

The sizing is pure and tested with synthetic warm-ups; the rest runs torch.compile for real on
CPU in a 1-rank gloo group: dynamo traces, guards, recompiles and counts as it does on a GPU,
with a test backend in place of inductor (a cold inductor compile takes minutes on CPU): one
that sleeps on its first graph, as a long compile, or dynamo's own `eager` backend.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._dynamo
import torch.distributed as dist

from tests.plugin_models import Switchable
from tests.rank.test_aggregate import make_facts, make_rank, make_spec
from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.worker import measure as measure_module
from torchscale.rank.worker.aggregate import aggregate
from torchscale.rank.worker.compile_figures import compile_record
from torchscale.rank.worker.compile_watch import CompileCounts
from torchscale.rank.worker.measure import RankMeasurement, measure
from torchscale.rank.worker.steady_state import (
    MAX_EXTRA_STEPS,
    WarmUp,
    collective_timeout_s,
    needs_more_warmup,
    steps_to_fill,
    timeout_bound_s,
)
from torchscale.rank.worker.trainer import Trainer, eager_module

CPU = torch.device("cpu")
# a cold compile of tiny-gpt2 on CPU has taken 513-2,528 s in warm-up step 1 on this VM
COLD_COMPILE_S = 2528.0


# ============================================================== sizing, from synthetic warm-ups


def test_the_timeout_comes_from_the_steady_steps_not_the_compile() -> None:
    compiled = WarmUp([COLD_COMPILE_S, 0.4, 0.5], [True, False, False])
    assert timeout_bound_s(compiled.steady_s) == 60.0  # was 20 x 2,528 s = 14 hours
    slow = WarmUp([COLD_COMPILE_S, 4.0, 1.0], [True, False, False])
    assert timeout_bound_s(slow.steady_s) == 80.0  # 20 x the slowest steady step
    eager = WarmUp([0.5, 4.0, 1.0], [False] * 3)  # eager: every step is steady, as before
    assert timeout_bound_s(eager.steady_s) == 80.0


def test_duration_windows_are_filled_at_the_steady_step() -> None:
    """Seen twice on CPU: warmup_steps 2, compile on, `measured_steps: 1`."""
    compiled = WarmUp([600.0, 0.5], [True, False])
    assert steps_to_fill(10.0, compiled) == 20  # was ceil(10 / 600) = 1
    three = WarmUp([600.0, 0.5, 0.25, 0.2], [True, False, False, False])
    assert steps_to_fill(10.0, three) == 40  # the median steady step, 0.25 s
    # eager CUDA, warmup_steps 2: the first step's first-call costs size nothing
    assert steps_to_fill(1.5, WarmUp([0.2, 0.003], [False, False])) == 500
    # one fast fluke among the later steps sizes nothing either (the upper median)
    fluke = WarmUp([0.2, 0.01, 0.01, 0.001, 0.01], [False] * 5)
    assert steps_to_fill(1.0, fluke) == 100
    # compiled: the first steady step after the compiles still carries first-call costs
    compiled_then_two = WarmUp([30.0, 2.0, 0.05, 0.01], [True, True, False, False])
    assert steps_to_fill(1.5, compiled_then_two) == 150
    assert steps_to_fill(10.0, WarmUp()) == 1  # no warm-up: nothing to size from


def test_without_a_steady_step_the_timeout_stays_and_windows_use_the_fastest_step() -> None:
    recompiling = WarmUp([600.0, 30.0], [True, True])
    assert timeout_bound_s(recompiling.steady_s) is None
    assert steps_to_fill(100.0, recompiling) == 4  # 100 / 30 s, the fastest


def test_the_warm_up_goes_on_until_two_steps_compiled_nothing() -> None:
    assert needs_more_warmup(WarmUp([9.0], [True]))
    assert needs_more_warmup(WarmUp([9.0, 0.1], [True, False]))
    assert not needs_more_warmup(WarmUp([9.0, 0.1, 0.1], [True, False, False]))
    assert not needs_more_warmup(WarmUp([0.2, 0.1], [False, False]))


# ====================================================================== real dynamo, 1 rank


@pytest.fixture()
def one_rank_group(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.fixture()
def fresh_dynamo() -> Iterator[None]:
    """No compiled code of another test (another backend) in dynamo's caches, before or after."""
    torch._dynamo.reset()
    try:
        yield
    finally:
        torch._dynamo.reset()


def compile_with(monkeypatch: pytest.MonkeyPatch, backend: Any) -> None:
    """The trainer's torch.compile (of the model and of its loss) with `backend`."""
    real = torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, **_kw: real(fn, backend=backend))


def compiled_spec(model: str = "tiny-mlp", **measurement: Any) -> WorkerSpec:
    return WorkerSpec(
        cell=CellIdentity(
            id="cell",
            definition_sha256="0" * 64,
            model=model,
            label=model,
            batch_size=4,
            world_size=1,
            precision="fp32",
            strategy="ddp",
            device="cpu",
            backend="gloo",
        ),
        model=ModelSpec(name=model),
        training=TrainingConfig(compile=True),
        measurement=MeasurementConfig(
            **{
                "repeats": 1,
                "flops": False,
                "comm_overhead": False,
                "telemetry": {"enabled": False},
                **measurement,
            }
        ),
        data=DataConfig(),
        result_path="/nonexistent/result.json",
        steps_path="/nonexistent/steps.jsonl",
    )


@pytest.mark.slow  # torch.compile builds C++ kernels
@pytest.mark.usefixtures("one_rank_group", "fresh_dynamo")
def test_a_compiling_warm_up_step_sizes_neither_the_windows_nor_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Compile forced on a CPU cell whose first graph takes 3.2 s to compile, one warm-up
    step, 3 s windows. Sized from that step, as up to schema 10, the window held
    ceil(3 / 3.2) = 1 step and the timeout was max(60, 20 x 3.2) = 64 s. (A steady step of
    this model takes milliseconds; even on a 2-core machine under a load of 14 it took
    0.7 s, still at least 2 steps a window.)"""
    slow_s = 3.2
    graphs: list[Any] = []

    def slow_first_compile(graph: torch.fx.GraphModule, _inputs: Any) -> Any:
        if not graphs:
            time.sleep(slow_s)
        graphs.append(graph)
        return graph.forward

    compile_with(monkeypatch, slow_first_compile)
    spec = compiled_spec(warmup_steps=1, duration_s=3.0)
    trainer = Trainer.build(spec, CPU)
    measured = measure(trainer, "host")
    assert graphs  # dynamo really compiled
    assert measured.warmup_compiled == [True, False, False]
    assert measured.extra_warmup_steps == 2 and measured.warmup_s[0] >= slow_s
    assert measured.compile_s is not None and measured.compile_s >= slow_s
    assert trainer.settings["collective_timeout_s"] == 60.0
    steady = WarmUp(measured.warmup_s, measured.warmup_compiled)
    assert measured.steps == steps_to_fill(3.0, steady) >= 2
    assert measured.window_compiles == CompileCounts(0, 0, 0.0)


@pytest.mark.usefixtures("one_rank_group", "fresh_dynamo")
def test_every_rank_agrees_to_keep_init_timeout_when_a_rank_has_no_steady_step() -> None:
    assert collective_timeout_s(WarmUp([9.0, 8.0], [True, True]), CPU) is None
    assert collective_timeout_s(WarmUp([9.0, 0.1], [True, False]), CPU) == 60.0


@pytest.mark.usefixtures("one_rank_group", "fresh_dynamo")
@pytest.mark.parametrize(
    "flip",
    ["timed", "edge", None],
    ids=["guard-fails-in-window", "guard-fails-at-the-edge", "steady"],
)
@pytest.mark.slow  # over 2 s on 2 cores
def test_a_recompile_inside_a_window_is_counted_and_warned(
    monkeypatch: pytest.MonkeyPatch, flip: str | None
) -> None:
    """A model whose forward reads a Python flag and breaks its graph once: flipping the flag
    as the first window's clocks start fails dynamo's guard, so the model recompiles inside
    its timed steps. Flipped before the window opens, it recompiles in the window's untimed
    edge step, which times no step: nothing is counted. Left alone (the control), nothing
    compiles in the windows, phase-timing hooks included."""
    compile_with(monkeypatch, "eager")  # dynamo's tracing, guards and counters; no codegen
    spec = compiled_spec(model="tests.plugin_models:switchable", warmup_steps=2, steps=3, repeats=2)
    trainer = Trainer.build(spec, CPU)
    real_run_window = measure_module.run_window

    def doubled() -> None:
        model = eager_module(trainer.model)
        assert isinstance(model, Switchable)
        model.doubled = True

    def run_window(*args: Any, **kwargs: Any) -> Any:
        if flip == "edge":
            doubled()
        elif flip == "timed":
            opened = kwargs.get("on_open")

            def open_then_flip() -> None:
                if opened is not None:
                    opened()
                doubled()

            kwargs["on_open"] = open_then_flip
        return real_run_window(*args, **kwargs)

    monkeypatch.setattr(measure_module, "run_window", run_window)
    measured = measure(trainer, "host")
    record, warnings, unavailable = compile_record(spec, [measured])
    assert record is not None and unavailable == {}
    assert record.compiling_warmup_steps[:1] == [0]
    assert record.graph_breaks is not None and record.graph_breaks >= 1
    if flip == "timed":
        assert record.recompiles_in_windows is not None and record.recompiles_in_windows >= 1
        assert record.graph_breaks_in_windows is not None and record.graph_breaks_in_windows >= 1
        assert record.compile_s_in_windows is not None and record.compile_s_in_windows > 0
        assert len(warnings) == 1
        assert "recompiled inside the measured windows" in warning_words(warnings[0])
        assert "rank(s) 0" in warning_words(warnings[0])
    else:
        assert record.recompiles_in_windows == 0 and record.graph_breaks_in_windows == 0
        assert record.compile_s_in_windows == 0.0
        assert warnings == []


# ============================================================= the result, from every rank


def compiled(spec: WorkerSpec, warmup_steps: int | None = None) -> WorkerSpec:
    update: dict[str, Any] = {"training": spec.training.model_copy(update={"compile": True})}
    if warmup_steps is not None:
        update["measurement"] = spec.measurement.model_copy(update={"warmup_steps": warmup_steps})
    return spec.model_copy(update=update)


def compiled_rank(
    rank: int, windows: CompileCounts | None, note: str | None = None
) -> RankMeasurement:
    measured = make_rank(rank, [0.04, 0.04, 0.04])
    measured.warmup_s = [3.0, 0.02, 0.02]
    measured.warmup_compiled = [True, False, False]
    measured.extra_warmup_steps = 1
    measured.window_compiles = windows
    measured.graph_breaks = None if windows is None else 2
    measured.compile_note = note
    return measured


def test_an_eager_cell_has_no_compile_record() -> None:
    result = aggregate(
        make_spec(), [make_rank(0, [0.04] * 3), make_rank(1, [0.04] * 3)], make_facts()
    )
    assert result.compile is None
    assert not any("compile" in warning_words(w) for w in result.warnings)


def test_the_cell_reports_the_most_any_rank_compiled_in_its_windows_and_warns() -> None:
    ranks = [
        compiled_rank(0, CompileCounts(0, 0, 0.0)),
        compiled_rank(1, CompileCounts(2, 1, 1.5)),
    ]
    result = aggregate(compiled(make_spec()), ranks, make_facts())
    record = result.compile
    assert record is not None
    assert record.compiling_warmup_steps == [0] and record.extra_warmup_steps == 1
    assert (record.recompiles_in_windows, record.graph_breaks_in_windows) == (2, 1)
    assert record.compile_s_in_windows == 1.5 and record.graph_breaks == 2
    [warning] = [warning_words(w) for w in result.warnings if "torch.compile" in warning_words(w)]
    assert "recompiled inside the measured windows" in warning
    assert "2 frame(s), 1.50 s of compiling, 1 graph break(s) on rank(s) 1" in warning


def test_with_no_warm_up_the_first_compile_in_the_window_is_named_as_such() -> None:
    ranks = [
        compiled_rank(0, CompileCounts(3, 0, 40.0)),
        compiled_rank(1, CompileCounts(3, 0, 41.0)),
    ]
    _, warnings, _ = compile_record(compiled(make_spec(), warmup_steps=0), ranks)
    assert len(warnings) == 1 and "warmup_steps 0" in warning_words(warnings[0])


def test_unreadable_counters_leave_the_figures_null_with_the_reason() -> None:
    gone = {"error": "AttributeError: gone"}
    why = Finding(code="unavailable.compile_counters_failed", figures=gone)
    ranks = [compiled_rank(0, CompileCounts(0, 0, 0.0)), compiled_rank(1, None, why)]
    record, warnings, unavailable = compile_record(compiled(make_spec()), ranks)
    assert record is not None and record.recompiles_in_windows is None
    assert record.graph_breaks is None
    assert unavailable["compile.recompiles_in_windows"] == why
    assert unavailable["compile.graph_breaks"] == why
    assert warnings == []


def test_extra_warm_up_outlasts_a_frame_that_recompiles_every_step() -> None:
    """Past dynamo's recompile_limit a frame runs eagerly: the extra warm-up is bounded by it."""
    assert torch._dynamo.config.recompile_limit <= MAX_EXTRA_STEPS
