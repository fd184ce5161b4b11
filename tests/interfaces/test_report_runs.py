"""Several runs in the report, from copies of the real fixture results: several runs of one config
read as their median (the headline and the summary never quote the best run), and a sweep of
one world size has no scaling figure ("no base", never 100 %)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from torchscale.api import build_report
from torchscale.interfaces.console.sweep_tables import model_tables
from torchscale.interfaces.report.model import KeyFigures, Report, Table
from torchscale.results import load

FIXTURE = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture"


def run_copy(target: Path, name: str, factor: float, repeats: int = 4, seed: int = 0) -> Path:
    """The fixture experiment as another run named `name`, its ok cells `factor` x as fast
    (`repeats` repeats, 2 % noise, seeded)."""
    shutil.copytree(FIXTURE, target)
    config = target / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "experiment_name: v3_fixture", f"experiment_name: {name}"
        ),
        encoding="utf-8",
    )
    rng = np.random.default_rng(seed)
    for path in sorted((target / "cells").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        throughput = data.get("throughput")
        if throughput:
            median = throughput["samples_per_s"] * factor
            values = [float(v) for v in median * (1 + 0.02 * rng.standard_normal(repeats))]
            throughput["repeats"] = values
            throughput["samples_per_s"] = float(np.median(values))
            throughput["spread"] = (max(values) - min(values)) / float(np.median(values))
            for key in ("samples_per_s_per_device", "tokens_per_s"):
                if throughput.get(key) is not None:
                    throughput[key] *= factor
            data["repeats"] = repeats
        path.write_text(json.dumps(data), encoding="utf-8")
    return target


def figures(report: Report, section_id: str) -> dict[str, Any]:
    section = report.section(section_id)
    assert section is not None
    return {f.label: f for b in section.blocks if isinstance(b, KeyFigures) for f in b.figures}


def table(report: Report, table_id: str) -> Table:
    return next(
        b for s in report.sections for b in s.blocks if isinstance(b, Table) and b.id == table_id
    )


def test_the_headline_of_four_runs_is_their_median(tmp_path: Path) -> None:
    """One run 18 % faster than the other three: the summary quotes the median of the four
    (the same figure as the baseline table's pooled median), never the best run."""
    factors = [1.18, 1.0, 0.99, 1.01]
    now, base = tmp_path / "now", tmp_path / "base"
    for i, factor in enumerate(factors, 1):
        run_copy(now / f"run{i}", f"nightly-{i}", factor, seed=i)
        run_copy(base / f"run{i}", f"base-{i}", 1.0, seed=10 + i)
    built = build_report(now, "json", output=tmp_path / "r.json", baseline=base).report
    cells = load(now / "run1").cells
    mlp = cells[(cells["model_label"] == "tiny-mlp") & (cells["world_size"] == 1)].iloc[0]
    runs = []
    for i in range(1, 5):
        table_i = load(now / f"run{i}").cells
        runs.append(
            float(table_i.loc[table_i["cell_id"] == mlp["cell_id"], "samples_per_s"].iloc[0])
        )
    best = figures(built, "summary")["Highest throughput: tiny-mlp"]
    # the median of the runs (cut to the digits its interval supports), never the best run
    assert best.value == pytest.approx(float(np.median(runs)), rel=0.005)
    assert abs(best.value - max(runs)) > abs(best.value - float(np.median(runs)))
    assert "the median of 4 runs" in (best.note or "") and "not the best run" in (best.note or "")
    row = next(r for r in table(built, "summary-best").rows if r["model"] == "tiny-mlp")
    assert row["samples_per_s"] == float(np.median(runs)) and "[median of 4 runs]" in row["config"]
    low, high = row["samples_per_s_low"], row["samples_per_s_high"]
    # Student t over the runs, not their range: it reaches below the slowest run
    assert low is not None and high is not None and low < min(runs) < best.value < high
    # the baseline table's pooled "now" figure is the same median
    changes = {r["cell"]: r for r in table(built, "baseline-changes").rows}
    pooled = next(r for c, r in changes.items() if c.startswith("tiny-mlp b8 x1"))
    assert pooled["thr_now"] == row["samples_per_s"]
    assert pooled["runs"] == "4 vs 4"


def test_a_sweep_of_one_world_size_prints_no_base(tmp_path: Path) -> None:
    """Only world size 2 measured: no scaling figure anywhere, "no base" in the tables and
    empty in summary.csv's column (with the reason), never 100 %."""
    only = tmp_path / "w2"
    shutil.copytree(FIXTURE, only)
    for path in (only / "cells").glob("*__w1__*.json"):
        path.unlink()
    cells = load(only).cells
    ok = cells[cells["status"] == "ok"]
    assert len(ok) == 2 and ok["scaling_efficiency"].isna().all()
    assert ok["scaling_efficiency_reason"].str.startswith("no base").all()
    built = build_report(only, "json", output=tmp_path / "r.json").report
    rows = table(built, "summary-best").rows
    # (where the numbers cannot be used the best table shows no figure at all)
    assert {r.get("efficiency_text", "no base") for r in rows} == {"no base"}
    found = figures(built, "summary")
    assert all(
        f.value is None for label, f in found.items() if label.startswith("Scaling efficiency")
    )
    assert "100.0 %" not in json.dumps(rows)
    # the benchmark's own table (the terminal after a sweep)
    out = Console(width=160, file=io.StringIO())
    for rich_table in model_tables(pd.DataFrame(ok), 160).tables:
        out.print(rich_table)
    printed = out.file.getvalue()  # type: ignore[attr-defined]
    assert printed.count("no base") == 2 and "100 %" not in printed
