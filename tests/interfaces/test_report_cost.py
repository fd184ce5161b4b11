"""Prices in the report: one for every result set, one per result set (machines compared at
their own prices), or the config's cost.per_gpu_hour stored with the cells; bad prices are one
line and exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from torchscale.contracts.errors import UsageError
from torchscale.interfaces.api.report_generate import parse_prices
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Report, Table
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.analysis.cost import cost_table

V3_SWEEP = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture"
GENERATED_AT = "2026-01-01T00:00:00Z"


def copy_as(src: Path, root: Path, name: str, price: float | None = None) -> Path:
    """The fixture experiment under another name; with `price`, as if its config had said
    cost.per_gpu_hour (stored in every ok cell, as the sweep stores it)."""
    dest = root / name
    shutil.copytree(src, dest)
    config = dest / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "experiment_name: v3_fixture", f"experiment_name: {name}"
        ),
        encoding="utf-8",
    )
    if price is not None:
        for cell in (dest / "cells").glob("*.json"):
            data = json.loads(cell.read_text(encoding="utf-8"))
            if data.get("status") == "ok":
                data["data"] = None
                data["cost"] = {
                    "per_gpu_hour": price,
                    "gpu_hours_per_m_samples": None,
                    "cost_per_m_samples": None,
                    "cost_per_m_tokens": None,
                }
                cell.write_text(json.dumps(data), encoding="utf-8")
    return dest


def cost_rows(report: Report) -> list[dict[str, object]]:
    section = report.section("efficiency")
    assert section is not None
    tables = [b for b in section.blocks if isinstance(b, Table) and b.id == "efficiency-cost"]
    assert len(tables) == 1, "no cost table"
    return tables[0].rows


def build(root: Path, **options: object) -> Report:
    return build_report(
        read_sources(root),
        ReportOptions(generated_at=GENERATED_AT, **options),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], (None, {})),
        (["2.5"], (2.5, {})),
        (["h100=2.5", "h200=3.9"], (None, {"h100": 2.5, "h200": 3.9})),
        (["1.5", "a=2"], (1.5, {"a": 2.0})),
    ],
)
def test_prices_parse(values: list[str], expected: tuple[object, object]) -> None:
    assert parse_prices(values) == expected


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        (["-1"], "positive price"),
        (["a=x"], "positive price"),
        (["nan"], "positive price"),
        (["1", "2"], "more than one price"),
        (["a=1", "a=2"], "two prices for 'a'"),
    ],
)
def test_bad_prices_are_one_line(values: list[str], fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment) as caught:
        parse_prices(values)
    assert "\n" not in str(caught.value)


def test_cost_table_takes_a_price_per_cell() -> None:
    cells = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok", "failed"],
            "samples_per_s": [1000.0, 1000.0, 1000.0, None],
            "tokens_per_s": [None, None, None, None],
            "world_size": [1, 2, 2, 2],
        }
    )
    out = cost_table(cells, pd.Series([3.6, 1.8, float("nan"), 3.6]))
    assert list(out.index) == [0, 1]  # no price: left out; failed: left out
    assert out["cost_per_m_samples"].tolist() == pytest.approx([1.0, 1.0])


def test_the_stored_config_price_is_used_without_a_flag(tmp_path: Path) -> None:
    copy_as(V3_SWEEP, tmp_path, "h100", price=3.6)
    rows = cost_rows(build(tmp_path))
    assert rows and all(r["price"] == 3.6 for r in rows)
    # a bare --cost-per-gpu-hour overrides what was stored
    assert all(r["price"] == 1.0 for r in cost_rows(build(tmp_path, cost_per_gpu_hour=1.0)))


def test_each_result_set_at_its_own_price(tmp_path: Path) -> None:
    copy_as(V3_SWEEP, tmp_path, "h100")
    copy_as(V3_SWEEP, tmp_path, "h200")
    report = build(tmp_path, prices={"h100": 2.0, "h200": 4.0})
    rows = cost_rows(report)
    prices = sorted({r["price"] for r in rows})  # type: ignore[type-var]
    assert prices == [2.0, 4.0]
    by_price = {
        p: sorted(r["cost_samples"] for r in rows if r["price"] == p)  # type: ignore[type-var]
        for p in prices
    }
    # same measurements, twice the price: twice the cost, row for row
    assert by_price[4.0] == pytest.approx([2 * c for c in by_price[2.0]])  # type: ignore[operator]
    section = report.section("efficiency")
    assert section is not None
    table = next(b for b in section.blocks if isinstance(b, Table) and b.id == "efficiency-cost")
    assert "price" in [c.key for c in table.columns]


def test_a_price_for_an_unknown_result_set_is_refused(tmp_path: Path) -> None:
    copy_as(V3_SWEEP, tmp_path, "h100")
    result = CliRunner().invoke(
        app,
        [
            "report",
            "--source",
            str(tmp_path),
            "--format",
            "md",
            "--cost-per-gpu-hour",
            "h300=2",
            "--output",
            str(tmp_path / "r.md"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "no such result set" in result.output and "h100" in result.output
    assert "Traceback" not in result.output
