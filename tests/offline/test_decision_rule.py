"""The decision line's rule (offline/analysis/decision.py) on synthetic tables: a call only from
an interval no wider than MAX_WIDTH, never from a CPU run, the fix before the buy."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.schema.forecast import Forecast, ForecastKey, ForecastTerm
from torchscale.offline.analysis import decision
from torchscale.offline.analysis.prediction.score import TrackRecord


def _cell(world: int, rate: float, **more: Any) -> dict[str, Any]:
    return {
        "model": "gpt2",
        "model_label": "gpt2",
        "batch_size": 16,
        "precision": "bf16",
        "strategy": "ddp",
        "device": "cuda",
        "world_size": world,
        "samples_per_s": rate,
        "tokens_per_s": rate * 1024,
        "gpu": "H100 80GB HBM3",
        "compiled": True,
        **more,
    }


def _scaling(low: float, high: float, device: str = "cuda", **more: Any) -> pd.DataFrame:
    row = {**_cell(8, 3200.0), "device": device, "base_world_size": 2}
    row.update(efficiency=(low + high) / 2, efficiency_low=low, efficiency_high=high, **more)
    return pd.DataFrame([row])


def _cells(device: str = "cuda", **more: Any) -> pd.DataFrame:
    rows = [_cell(2, 900.0, **more), _cell(8, 3200.0, **more)]
    return pd.DataFrame(rows).assign(device=device)


def test_a_measured_efficiency_narrower_than_the_width_is_a_call() -> None:
    call = decision.decide_model("gpt2", _cells(), _scaling(0.88, 0.93, cost_per_m_tokens=0.41))
    assert call is not None and call.code == "decision.buy"
    said = wording.say(call)
    assert said.startswith("gpt2: more GPUs pay: 2 -> 8 GPUs keeps ")
    assert "of linear (measured); $0.41 per M tokens at 8 GPUs" in said


def test_an_efficiency_wider_than_the_width_is_no_call_and_says_why() -> None:
    call = decision.decide_model("gpt2", _cells(), _scaling(0.70, 0.95))
    assert call is not None and call.code == "decision.not_decidable"
    assert wording.say(call) == (
        "gpt2: no buy-or-fix call: its scaling efficiency's interval (25.0 pts wide) is "
        "wider than 10.0 pts; more repeats narrow it"
    )


@pytest.mark.parametrize(
    ("low", "high", "code"),
    [(0.60, 0.66, "decision.fix_scaling"), (0.76, 0.84, "decision.scaling_borderline")],
)
def test_a_narrow_efficiency_below_or_across_the_line(low: float, high: float, code: str) -> None:
    call = decision.decide_model("gpt2", _cells(), _scaling(low, high))
    assert call is not None and call.code == code


def test_a_cpu_run_never_gets_a_call() -> None:
    """However narrow its interval: a CPU rank's scaling says nothing about buying GPUs."""
    assert decision.decide_model("gpt2", _cells("cpu"), _scaling(0.88, 0.93, "cpu")) is None
    assert decision.decide(_cells("cpu"), _scaling(0.88, 0.93, "cpu")) == []


def test_the_host_comes_before_the_buy() -> None:
    call = decision.decide_model("gpt2", _cells(host_bound=True), _scaling(0.88, 0.93))
    assert call is not None and call.code == "decision.fix_host"


def test_a_straggler_costs_a_fix_only_above_the_share_by_its_whole_interval() -> None:
    costly = {"straggler_named": True, "straggler_rank": 3}
    shares = {"wait_for_peers_share": 0.15, "wait_for_peers_share_high": 0.2}
    call = decision.decide_model(
        "gpt2", _cells(**costly, **shares, wait_for_peers_share_low=0.11), _scaling(0.88, 0.93)
    )
    assert call is not None and call.code == "decision.fix_straggler"
    assert "the others wait for rank 3 " in wording.say(call)
    noisy = _cells(**costly, **shares, wait_for_peers_share_low=0.05)
    call = decision.decide_model("gpt2", noisy, _scaling(0.88, 0.93))
    assert call is not None and call.code == "decision.buy"


def test_low_mfu_is_called_low_against_the_reference_on_the_same_gpu() -> None:
    low = {"mfu": 0.086, "mfu_low": 0.044, "mfu_high": 0.165}
    call = decision.decide_model("gpt2", _cells(**low).assign(gpu="H200"), pd.DataFrame())
    assert call is not None and call.code == "decision.fix_mfu"
    said = "under 50.0 % of 42.3 %, a plain PyTorch gpt2 loop's at batch 16 on an H200"
    assert said in wording.say(call)
    # no reference on this GPU, at this precision or without compile: nothing borrowed
    for other in ({"gpu": "A100"}, {"precision": "fp16"}, {"compiled": False}):
        call = decision.decide_model("gpt2", _cells(**low).assign(**other), pd.DataFrame())
        assert call is not None and call.code == "decision.no_reference", other
    # an interval reaching from under half the reference to above it: no call, and why
    wide = {"mfu": 0.108, "mfu_low": 0.048, "mfu_high": 0.240}
    call = decision.decide_model("gpt2", _cells(**wide).assign(gpu="H200"), pd.DataFrame())
    assert call is not None and call.code == "decision.not_decidable"
    assert "its MFU's interval (19.2 pts wide)" in wording.say(call)


@pytest.mark.parametrize("model", ["vit-b16", "bert-large", "resnet50", "transformer"])
def test_a_model_without_its_own_reference_gets_no_mfu_call(model: str) -> None:
    """GPT-2's plain loop is no yardstick for a ViT, a BERT or a conv net: measured low, on
    par or too wide to tell, another model's MFU is never called against it. The call gives
    the command that measures the model's own reference, where the benchmark has its loop."""
    for mfu in (
        {"mfu": 0.086, "mfu_low": 0.044, "mfu_high": 0.165},
        {"mfu": 0.40, "mfu_low": 0.38, "mfu_high": 0.42},
        {"mfu": 0.108, "mfu_low": 0.048, "mfu_high": 0.240},
    ):
        cells = _cells(**mfu).assign(gpu="H200", model=model, model_label=model)
        call = decision.decide_model(model, cells, pd.DataFrame())
        assert call is not None and call.code == "decision.no_reference"
        measure = (
            "benchmarks/workload_reference.py has no loop of it yet"
            if model == "transformer"
            else f"measure one with `python benchmarks/workload_reference.py --model {model} "
            "--batch 16 --device cuda --compile`"
        )
        assert wording.say(call) == (
            f"{model}: no MFU call: no reference for {model} (bf16, compiled) on an H200; "
            + measure
        )


def test_gpt2_without_a_reference_says_how_to_measure_one() -> None:
    cells = _cells(mfu=0.30, mfu_low=0.29, mfu_high=0.31).assign(gpu="A100-SXM4-80GB")
    call = decision.decide_model("gpt2", cells, pd.DataFrame())
    assert call is not None and wording.say(call) == (
        "gpt2: no MFU call: no reference for gpt2 (bf16, compiled) on an A100-SXM4-80GB; measure "
        "one with `python benchmarks/workload_reference.py --model gpt2 --batch 16 --device cuda "
        "--compile`"
    )


@pytest.mark.parametrize(
    ("interval", "code", "said"),
    [
        # the H100's reference is one round: a band of one value, 40.2 %
        ((0.36, 0.345, 0.375), "decision.step_below", "below the reference by 4.2 pts ±1.5 pts"),
        ((0.39, 0.375, 0.405), "decision.step_on_par", "the step is on par: MFU 39.0 % ±1.5 %"),
        ((0.45, 0.44, 0.46), "decision.step_above", "above the reference by 4.8 pts ±1.0 pts"),
        ((0.15, 0.14, 0.16), "decision.fix_mfu", "fix the step before buying GPUs"),
        # reaching the band from below by its interval only: on par, not below
        ((0.385, 0.37, 0.402), "decision.step_on_par", "on par"),
    ],
)
def test_the_mfu_is_placed_against_the_references_band(
    interval: tuple[float, float, float], code: str, said: str
) -> None:
    mfu, low, high = interval
    call = decision.decide_model(
        "gpt2", _cells(mfu=mfu, mfu_low=low, mfu_high=high), pd.DataFrame()
    )
    assert call is not None and call.code == code
    assert said in wording.say(call)
    assert call.figures["source"] == "tests/fixtures/h100_second_run/ref.out.txt"


def test_the_h200_reference_has_the_spread_of_its_rounds_over_two_sessions() -> None:
    """Two rounds of the first H200 run and one of the second: the band is a day's spread."""
    from torchscale.offline.analysis.references import reference_for

    reference = reference_for("gpt2", "H200", "bf16", True)
    assert reference is not None and reference.rounds == 3
    assert reference.low == pytest.approx(0.4144, abs=1e-4)
    assert reference.high == pytest.approx(0.4248, abs=1e-4)
    # an interval that ends inside the band reaches it: on par; one that ends under it: below
    for high, code in ((0.4150, "decision.step_on_par"), (0.4140, "decision.step_below")):
        cells = _cells(mfu=0.40, mfu_low=0.39, mfu_high=high).assign(gpu="H200")
        call = decision.decide_model("gpt2", cells, pd.DataFrame())
        assert call is not None and call.code == code, high


def _estimate(value: float, low: float, high: float) -> Estimate:
    return Estimate(value=value, low=low, high=high, n=4, measurable=True)


def _forecast(world: int, low: float, high: float) -> Forecast:
    key = ForecastKey(
        model="gpt2",
        label="gpt2",
        batch_size=16,
        precision="bf16",
        strategy="ddp",
        world_size=world,
        device="cuda",
    )
    step = _estimate(0.04, 0.039, 0.041)
    return Forecast(
        id=f"f{world}",
        created_at="2026-11-27T00:00:00Z",
        key=key,
        basis=["cells/a.json"],
        step_s=step,
        samples_per_s=_estimate(world * 16 / 0.04, world * 16 / 0.041, world * 16 / 0.039),
        scaling_efficiency=_estimate((low + high) / 2, low, high),
        dominant="compute",
        terms=[
            ForecastTerm(
                name="compute",
                seconds=step,
                how=Finding(code="forecast.term.own_work", figures={"world": 1, "own_s": 0.01}),
            )
        ],
    )


def test_a_scored_forecast_narrower_than_the_width_is_a_call() -> None:
    measured = pd.DataFrame([_cell(2, 900.0, price_per_gpu_hour=2.5)])
    scored = TrackRecord(count=4, median_abs_error=0.05, inside=4)
    call = decision.decide_model(
        "gpt2", measured, pd.DataFrame(), [_forecast(8, 0.88, 0.93)], scored
    )
    assert call is not None and call.code == "decision.buy"
    said = wording.say(call)
    assert "2 -> 8 GPUs keeps " in said
    assert "of linear by the forecast: measured at 2 (4 forecasts scored, 4 held)" in said
    assert "per M tokens at 8 GPUs" in said
    # too few scored, or too many missed: the forecast decides nothing
    for record in (TrackRecord(2, 0.05, 2), TrackRecord(10, 0.05, 8)):
        assert (
            decision.decide_model(
                "gpt2", measured, pd.DataFrame(), [_forecast(8, 0.88, 0.93)], record
            )
            is None
        )
    wide = decision.decide_model(
        "gpt2", measured, pd.DataFrame(), [_forecast(8, 0.7, 0.95)], scored
    )
    assert wide is not None and wide.code == "decision.not_decidable"


def test_fsdp_on_one_gpu_is_never_the_cell_decided_on() -> None:
    """Made the fastest with a low MFU, FSDP at world 1 (it shards nothing) is left out: the
    call is the DDP cell's."""
    ddp = _cell(1, 400.0, mfu=0.40, mfu_low=0.37, mfu_high=0.43)
    fsdp = {**_cell(1, 900.0, mfu=0.05, mfu_low=0.04, mfu_high=0.06), "strategy": "fsdp"}
    call = decision.decide_model("gpt2", pd.DataFrame([ddp, fsdp]), pd.DataFrame())
    assert call is not None and call.code == "decision.step_on_par"
    assert call.figures["mfu"] == 0.40


def test_an_input_wait_is_a_fix_only_by_its_whole_interval() -> None:
    waits = {"data_share": 0.2, "data_share_high": 0.25}
    call = decision.decide_model("gpt2", _cells(**waits, data_share_low=0.15), _scaling(0.88, 0.93))
    assert call is not None and call.code == "decision.fix_input"
    assert wording.say(call).startswith("gpt2: fix the input pipeline first: the step waits for")
    call = decision.decide_model("gpt2", _cells(**waits, data_share_low=0.05), _scaling(0.88, 0.93))
    assert call is not None and call.code == "decision.buy"


def test_an_mfu_without_an_interval_is_no_call_against_its_reference() -> None:
    """One measured window (a profile's): the MFU has no interval, so no place in the band."""
    call = decision.decide_model("gpt2", _cells(mfu=0.39), pd.DataFrame())
    assert call is not None and call.code == "decision.no_interval"
    said = wording.say(call)
    assert said.startswith("gpt2: no MFU call: MFU 39.0 % from one window has no")
    assert said.endswith("; `measurement.repeats: 4` gives one")
    # a profile measures one window whatever its flags: a benchmark gives the interval
    profiled = Finding(code=call.code, figures={**call.figures, "profiled": True})
    assert wording.say(profiled).endswith(
        "; `torchscale benchmark` with `measurement.repeats: 4` gives one"
    )


def test_only_models_without_their_own_reference_are_told_so_whatever_their_numbers() -> None:
    """`unreferenced` (said where the numbers cannot be used): a model with no reference on its
    GPU, at its precision and compile, and only that; a fix or a wide interval hides nothing."""
    host_bound = {"host_bound": True, "gpu_busy_share": 0.4}
    wide = {"mfu": 0.108, "mfu_low": 0.048, "mfu_high": 0.240}
    gpt2 = _cells(**wide, **host_bound).assign(gpu="H200")
    vit = _cells(**wide, **host_bound).assign(gpu="H200", model="vit-b16", model_label="vit-b16")
    eager = _cells(**wide).assign(gpu="H200", compiled=False, model_label="gpt2-eager")
    calls = decision.unreferenced(pd.concat([gpt2, vit, eager]))
    assert [(c.code, c.figures["model"]) for c in calls] == [
        ("decision.no_reference", "gpt2-eager"),
        ("decision.no_reference", "vit-b16"),
    ]
    assert decision.unreferenced(_cells(**wide, device="cpu").assign(model="vit-b16")) == []
    assert decision.unreferenced(vit.drop(columns=["mfu", "mfu_low", "mfu_high"])) == []
    # a busy machine's numbers cannot be used either: what a rerun would lack is still said
    busy = decision.unreferenced(vit.assign(busy_machine=True))
    assert [c.figures["model"] for c in busy] == ["vit-b16"]
    # an unknown GPU or compile says nothing of what a rerun would get
    assert decision.unreferenced(vit.assign(gpu=None)) == []
    assert decision.unreferenced(vit.assign(compiled=None)) == []


def test_the_models_offered_a_measurement_are_those_the_benchmark_has_a_loop_of() -> None:
    """The call says 'measure one with benchmarks/workload_reference.py --model X' only where
    the script can: the package keeps the script's model list (it cannot import a script)."""
    import importlib.util
    import sys

    from tests.processes import REPO_ROOT

    path = REPO_ROOT / "benchmarks" / "workload_reference.py"
    spec = importlib.util.spec_from_file_location("workload_reference_shapes", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # dataclasses look their module up
    spec.loader.exec_module(script)  # its torch imports are inside functions
    assert sorted(decision.REFERENCE_LOOPS) == sorted(script.MODELS)
    # each loop trains the cell's model: the parameters its shapes give (vocabulary padded to
    # 64, as both sides train it) are the built-in's, as the script checks again at every run
    for name, (hidden, layers, _, vocab, _, positions) in script.SHAPES.items():
        padded = (vocab + 63) // 64 * 64
        block = 12 * hidden * hidden + 13 * hidden  # qkv, proj, fc, fc2 and two LayerNorms
        counted = (padded + positions) * hidden + layers * block + 2 * hidden
        assert counted == BUILTIN[name].measured.parameters, name
