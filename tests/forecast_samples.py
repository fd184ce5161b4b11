"""Hand-made forecasts for the tests of scoring, the sweep's scoring hook and the report's
forecasts section: a forecast of a fixture cell's key with the step and interval a test names."""

from __future__ import annotations

import shutil
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.schema.forecast import Forecast, ForecastKey, ForecastTerm
from torchscale.offline.results.documents import read_cell

# the formula of a hand-made forecast's one term (any finding: no test reads it)
HAND = Finding(code="forecast.term.gpu_unshared")
FIXTURE = Path(__file__).parent / "fixtures" / "cpu_default_sweep" / "default_scaling"


def fixture_copy(tmp_path: Path) -> Path:
    """A writable copy of the 8-cell fixture sweep (tiny-mlp and tiny-gpt2 at 1 and 2 ranks)."""
    root = tmp_path / "default_scaling"
    shutil.copytree(FIXTURE, root)
    return root


def fixture_cell(root: Path, stem_start: str) -> CellResult:
    """The one cell of `root` whose file name starts with `stem_start` ('tiny-gpt2__b16__w2')."""
    (path,) = sorted((root / "cells").glob(f"{stem_start}__*.json"))
    read = read_cell(path)
    assert read.doc is not None, read.problem
    return read.doc


def estimate(value: float, low: float | None, high: float | None) -> Estimate:
    return Estimate(value=value, low=low, high=high, n=3, measurable=True)


def forecast_of(
    key: ForecastKey,
    step_s: float,
    low: float | None,
    high: float | None,
    *,
    forecast_id: str = "f1",
    basis: tuple[str, ...] = ("cells/some_base.json",),
    base_samples_per_s: float | None = None,
) -> Forecast:
    """A forecast of `key`: its step `step_s` in [low, high], all of it compute; its throughput
    and efficiency follow from the step (efficiency against `base_samples_per_s` at one rank)."""
    samples = key.world_size * key.batch_size / step_s

    def rate(step: float | None) -> float | None:
        return None if step is None else key.world_size * key.batch_size / step

    efficiency = None
    if base_samples_per_s is not None:
        per = key.world_size * base_samples_per_s

        def eff(step: float | None) -> float | None:
            r = rate(step)
            return None if r is None else r / per

        efficiency = estimate(samples / per, eff(high), eff(low))
    return Forecast(
        id=forecast_id,
        created_at="2026-01-01T00:00:00Z",
        key=key,
        basis=list(basis),
        step_s=estimate(step_s, low, high),
        samples_per_s=estimate(samples, rate(high), rate(low)),
        scaling_efficiency=efficiency,
        dominant="compute",
        terms=[ForecastTerm(name="compute", seconds=estimate(step_s, low, high), how=HAND)],
    )
