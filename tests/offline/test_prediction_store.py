"""The forecast store: a forecast and its scores round-trip, a score never rewrites its
forecast, and a bad file is skipped with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.schema.forecast import (
    Forecast,
    ForecastKey,
    ForecastScore,
    ForecastTerm,
)
from torchscale.contracts.versioned import VersionError
from torchscale.offline.results.forecast_store import (
    forecast_path,
    new_forecast_id,
    read_forecasts,
    score_path,
    utc_now,
    write_forecast,
    write_score,
)
from torchscale.results import load_forecasts


def _estimate(value: float, low: float, high: float) -> Estimate:
    return Estimate(value=value, low=low, high=high, n=3, measurable=True)


def _key(world: int = 4) -> ForecastKey:
    return ForecastKey(
        model="tiny-mlp",
        label="tiny-mlp",
        batch_size=16,
        precision="fp32",
        strategy="ddp",
        world_size=world,
        device="cpu",
    )


def _forecast(key: ForecastKey) -> Forecast:
    created = utc_now()
    return Forecast(
        id=new_forecast_id(key, created),
        created_at=created,
        key=key,
        basis=["cells/a.json"],
        step_s=_estimate(0.010, 0.009, 0.012),
        samples_per_s=_estimate(6400.0, 5333.0, 7111.0),
        scaling_efficiency=_estimate(0.8, 0.7, 0.9),
        dominant="compute",
        terms=[
            ForecastTerm(
                name="compute",
                seconds=_estimate(0.01, 0.009, 0.012),
                how=Finding(code="forecast.term.gpu_unshared"),
            )
        ],
        assumptions=[Finding(code="forecast.no_comm_run")],
    )


def test_round_trip_and_score(tmp_path: Path) -> None:
    forecast = _forecast(_key())
    write_forecast(tmp_path, forecast)
    before = forecast_path(tmp_path, forecast.id).read_bytes()
    score = ForecastScore(
        forecast_id=forecast.id,
        cell_id="tiny-mlp__b16__w4__fp32__ddp__abcd1234",
        cell_file="cells/tiny-mlp__b16__w4__fp32__ddp__abcd1234.json",
        measured_step_s=0.0125,
        forecast_step_s=0.010,
        error=(0.010 - 0.0125) / 0.0125,
        inside=False,
        scored_at=utc_now(),
    )
    write_score(tmp_path, score)
    assert score_path(tmp_path, forecast.id, score.cell_id).is_file()
    assert forecast_path(tmp_path, forecast.id).read_bytes() == before
    stored = read_forecasts(tmp_path)
    assert stored.forecasts == [forecast]
    assert stored.scores_of(forecast.id) == [score]
    table = load_forecasts(tmp_path)
    assert len(table) == 1
    row = table.iloc[0]
    assert row["world_size"] == 4 and row["error"] == pytest.approx(-0.2)
    assert not row["inside"] and row["step_high_s"] == 0.012


def test_unscored_forecast_has_one_row(tmp_path: Path) -> None:
    write_forecast(tmp_path, _forecast(_key(8)))
    table = load_forecasts(tmp_path)
    assert list(table["world_size"]) == [8]
    assert table["scored_cell_id"].isna().all()


def test_bad_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    good = _forecast(_key())
    write_forecast(tmp_path, good)
    (tmp_path / "forecasts" / "torn.json").write_text("{")
    stored = read_forecasts(tmp_path)
    assert stored.forecasts == [good]
    reasons = {path.name: why for path, why in stored.skipped}
    assert list(reasons) == ["torn.json"] and "not valid JSON" in reasons["torn.json"]
    # a forecast of a newer version stops the read with the one line
    newer = json.loads(good.model_dump_json()) | {"schema_version": 99, "id": "newer"}
    (tmp_path / "forecasts" / "newer.json").write_text(json.dumps(newer))
    with pytest.raises(VersionError, match=r"forecast of schema 99; .*upgrade torchscale"):
        read_forecasts(tmp_path)


def test_key_of_a_cell_matches_its_forecast() -> None:
    cell = CellIdentity(
        id="tiny-mlp__b16__w4__fp32__ddp__abcd1234",
        definition_sha256="ab" * 32,
        model="tiny-mlp",
        label="tiny-mlp",
        batch_size=16,
        world_size=4,
        precision="fp32",
        strategy="ddp",
        device="cpu",
        backend="gloo",
    )
    assert ForecastKey.of_cell(cell) == _key(4)
    assert ForecastKey.of_cell(cell) != _key(8)


def test_an_empty_experiment_has_no_forecasts(tmp_path: Path) -> None:
    assert read_forecasts(tmp_path).forecasts == []
    assert load_forecasts(tmp_path).empty
