"""No forecast narrower than its noisiest input allows: a ±17 % forecast
made from a cell whose own throughput is ±92 % claimed what nobody measured."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from torchscale.contracts.wording import say
from torchscale.offline.analysis.prediction.figures import Figure
from torchscale.offline.analysis.prediction.forecast import no_narrower_than_inputs


def _cell(cell_id: str, value: float, half: float) -> Any:
    return SimpleNamespace(cell_id=cell_id, samples_per_s=Figure(value, half, half))


def test_a_forecast_is_widened_to_its_noisiest_input() -> None:
    step = Figure(0.010, 0.0017, 0.0017)  # ±17 %
    widened, said = no_narrower_than_inputs(step, [_cell("a", 100.0, 5.0), _cell("b", 50.0, 46.0)])
    assert widened.value == step.value
    assert widened.below == widened.above == 0.010 * 0.92
    assert said is not None and say(said) == (
        "interval no narrower than its noisiest input: ±92 %, the throughput of cells/b.json"
    )


def test_a_forecast_wider_than_its_inputs_is_left_alone() -> None:
    step = Figure(0.010, 0.003, 0.004)
    same, said = no_narrower_than_inputs(step, [_cell("a", 100.0, 5.0)])
    assert same == step and said is None
