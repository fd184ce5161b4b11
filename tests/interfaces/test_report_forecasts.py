"""The report's forecasts section (torchscale/interfaces/report/sections/forecasts.py) on a copy
of a real sweep with hand-made forecasts and a score: the track record sentence is the one
`prediction.score` defines, the table lists every forecast with what measured it, the charts draw
each forecast dashed beside its measured curve with its interval as a shaded band (the measured
points keep their bars), the JSON carries the same, and a report without forecasts has no such
section."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.forecast_samples import fixture_cell, fixture_copy, forecast_of
from torchscale.contracts.schema.forecast import ForecastKey
from torchscale.interfaces.api.report_generate import renderer
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.report import build, model
from torchscale.interfaces.report.estimates import compact
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.analysis.prediction.score import score, track_record
from torchscale.offline.results.forecast_store import write_forecast, write_score

OPTIONS = ReportOptions(generated_at="2026-11-22T12:00:00Z")


def _report(root: Path) -> model.Report:
    return build.build_report(read_sources(root), OPTIONS)


def _section(report: model.Report) -> model.Section:
    (section,) = [s for s in report.sections if s.id == "forecasts"]
    return section


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The fixture sweep, a forecast of tiny-gpt2 b16 at 2 ranks scored by its measured cell,
    and one at 4 ranks not measured yet."""
    root = fixture_copy(tmp_path)
    w1 = fixture_cell(root, "tiny-gpt2__b16__w1")
    w2 = fixture_cell(root, "tiny-gpt2__b16__w2")
    assert w1.throughput is not None
    base = w1.throughput.samples_per_s
    key2 = ForecastKey.of_cell(w2.cell)
    key4 = key2.model_copy(update={"world_size": 4})
    basis = (f"cells/{w1.cell.id}.json",)
    two = forecast_of(
        key2, 0.030, 0.026, 0.034, forecast_id="two", basis=basis, base_samples_per_s=base
    )
    four = forecast_of(
        key4, 0.036, 0.030, 0.042, forecast_id="four", basis=basis, base_samples_per_s=base
    )
    write_forecast(root, two)
    write_forecast(root, four)
    write_score(root, score(two, w2, f"cells/{w2.cell.id}.json", "2026-01-02T00:00:00Z"))
    return root


def test_no_forecasts_no_section(tmp_path: Path) -> None:
    report = _report(fixture_copy(tmp_path))
    assert "forecasts" not in [s.id for s in report.sections]


def test_the_track_record_and_the_table(root: Path) -> None:
    report = _report(root)
    ids = [s.id for s in report.sections]
    assert ids.index("forecasts") == ids.index("scaling") + 1
    section = _section(report)
    w2 = fixture_cell(root, "tiny-gpt2__b16__w2")
    made = score(forecast_of(ForecastKey.of_cell(w2.cell), 0.030, 0.026, 0.034), w2, "c", "t")
    record = track_record([made])
    sentence = section.blocks[0]
    assert isinstance(sentence, model.Text)
    assert sentence.text.startswith(record.sentence() + " (1 forecast not measured yet")
    figures = section.blocks[1]
    assert isinstance(figures, model.KeyFigures)
    values = {f.label: f.value for f in figures.figures}
    assert values["Forecasts made"] == 2 and values["Forecasts scored"] == 1
    assert values["Median absolute error"] == pytest.approx(abs(made.error))
    assert values["Inside their intervals"] == (1.0 if made.inside else 0.0)
    (table,) = [b for b in section.blocks if isinstance(b, model.Table)]
    by_world = {row["cell"].split(" x")[1].split()[0]: row for row in table.rows}
    assert by_world["2"]["measured"] == made.measured_step_s
    assert by_world["2"]["error"] == pytest.approx(made.error)
    assert by_world["2"]["held"] == ("inside" if made.inside else "outside")
    assert by_world["4"]["held"] == "not measured yet" and "measured" not in by_world["4"]
    # spelled as every figure with its interval is (predict prints it the same way)
    four = by_world["4"]  # the raw figure for JSON, and its text spelled as every figure is
    assert (four["step"], four["step_low"], four["step_high"]) == (0.036, 0.030, 0.042)
    assert four["step_text"] == compact(0.036, 0.030, 0.042, "seconds") == "36 ms ±6 ms"


def test_each_forecast_is_drawn_dashed_beside_its_measured_curve(root: Path) -> None:
    section = _section(_report(root))
    charts = {b.id: b for b in section.blocks if isinstance(b, model.Chart)}
    assert set(charts) == {"forecasts-step-tiny-gpt2"}
    chart = charts["forecasts-step-tiny-gpt2"]
    measured, forecast = chart.series
    w1 = fixture_cell(root, "tiny-gpt2__b16__w1")
    w2 = fixture_cell(root, "tiny-gpt2__b16__w2")
    assert w1.step_time is not None and w2.step_time is not None
    assert measured.style == "solid" and measured.x == [1, 2]
    # measured: the cells table's Step p50, the one statistic a forecast is made of and scored on
    assert measured.y == pytest.approx([w1.step_time.p50, w2.step_time.p50])
    assert chart.y_format == "seconds" and "Step p50" in (chart.note or "")
    assert forecast.style == "dashed" and forecast.reference_for == measured.name
    # a forecast's interval runs along its curve: a band; a measured point's is its own: a bar
    assert (measured.interval, forecast.interval) == ("bars", "band")
    assert "shaded band" in (chart.note or "")
    assert forecast.x == [2, 4]
    assert forecast.y == pytest.approx([0.030, 0.036])
    assert forecast.low == pytest.approx([0.026, 0.030])
    assert forecast.high == pytest.approx([0.034, 0.042])


def test_every_format_carries_it(root: Path) -> None:
    report = _report(root)
    data = json.loads(renderer("json")(report))
    (section,) = [s for s in data["sections"] if s["id"] == "forecasts"]
    assert model.Section.model_validate(section) == _section(report)
    (chart,) = [b for b in section["blocks"] if b.get("id") == "forecasts-step-tiny-gpt2"]
    assert [s["interval"] for s in chart["series"]] == ["bars", "band"]
    html = renderer("html")(report).decode()
    assert "forecasts-step-tiny-gpt2" in html and "Forecasts and what was measured" in html
    full = " ".join(term.render(report, full=True).decode().split())
    assert "forecasts scored: 1; median error" in full
    # the short JSON and PDF (a notebook's, a stakeholder's) keep the track record
    short = build.build_report(read_sources(root), replace(OPTIONS, scope="short"))
    assert isinstance(_section(short).blocks[0], model.Text)
    assert _section(short).blocks[0] == _section(report).blocks[0]


def test_a_corrupt_forecast_file_is_skipped_with_why(root: Path) -> None:
    (root / "forecasts" / "torn.json").write_text("{", encoding="utf-8")
    sources = read_sources(root)
    assert any(s.path.endswith("torn.json") for s in sources.skipped)
    section = _section(build.build_report(sources, OPTIONS))
    assert isinstance(section.blocks[0], model.Text)
    assert section.blocks[0].text.startswith("forecasts scored: 1")


def test_no_stored_sentence_is_parsed_in_the_section() -> None:
    """The once-said assumptions come from the findings' codes and figures: the section runs
    no pattern over text, which a stored sentence would be."""
    from torchscale.interfaces.report.sections import forecasts

    source = Path(forecasts.__file__).read_text(encoding="utf-8")
    assert "import re" not in source and "re.compile" not in source
