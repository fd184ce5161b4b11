"""One rule for what is ranked and one estimator for a compile gain, on every surface, on the kept
H100 workload outputs (tests/fixtures/h100_second_run/workload: GPT-2 b8 on one H100, ddp and
fsdp, eager and compiled, 4 repeats; tests/fixtures/h100_first_run: the first run, 2 repeats).

FSDP on one device shards nothing: no surface may rank or compare it. The
workload level and the report printed two figures for one compile gain, 1.52x [1.52, 1.85] and
1.57x [1.53, 1.84] (point 10): both now print the one `analysis.compile_gain`, and neither prints
the digits of a gain whose interval is wider than itself (the first run's 1.51x [1.14, 1.99])."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.h100_replay import WORKLOAD as FIRST_RUN
from tests.h100_replay import read_cells
from torchscale.contracts import wording
from torchscale.contracts.wording.validate_measured import detail as shown_detail
from torchscale.contracts.wording.validate_workload import gain_figure
from torchscale.interfaces.cli.app import app
from torchscale.offline.analysis import compile_gain as gain
from torchscale.offline.analysis.ranking import comparable, fsdp_on_one, shards_nothing
from torchscale.orchestration.validate import workload_judge as judge
from torchscale.orchestration.validate.check_result import CheckStatus

WORKLOAD = Path(__file__).parents[1] / "fixtures" / "h100_second_run" / "workload"
FASTER = 3.0  # FSDP on one GPU made this much faster than every other cell: first if ranked


def _report(source: Path, out: Path, fmt: str = "json") -> str:
    args = ["report", "-s", str(source), "-f", fmt, "--full", "-o", str(out)]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    return out.read_text(encoding="utf-8")


def _first_lines(report: dict[str, Any]) -> str:
    """The decision's lines: each model's, and the best."""
    decision = report["decision"]
    best = decision["best"]["text"] if decision["best"] else ""
    return " ".join([*(line["text"] for line in decision["models"]), best])


def _blocks(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for s in report["sections"] for b in s["blocks"]]


def _scaled(path: Path, factor: float) -> None:
    """The cell at `path` with its throughput (figure, repeats, interval) times `factor`."""
    cell = json.loads(path.read_text())
    thr = cell["throughput"]
    for key in ("samples_per_s", "samples_per_s_per_device", "tokens_per_s"):
        thr[key] *= factor
    thr["repeats"] = [v * factor for v in thr["repeats"]]
    for key in ("value", "low", "high"):
        cell["intervals"]["samples_per_s"][key] *= factor
    path.write_text(json.dumps(cell))


@pytest.fixture(scope="module")
def fsdp_fastest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The H100 workload's cells with FSDP on one GPU 3x faster than measured: the fastest
    cell by far, so a surface that ranks it names it."""
    runs = tmp_path_factory.mktemp("fsdp-fastest") / "runs"
    shutil.copytree(WORKLOAD / "runs", runs)
    for path in runs.glob("*/cells/*__fsdp__*.json"):
        _scaled(path, FASTER)
    return runs


def test_the_rule_is_fsdp_at_world_1_only() -> None:
    assert shards_nothing("fsdp", 1) and shards_nothing("fsdp", 1.0)
    assert not shards_nothing("fsdp", 2) and not shards_nothing("ddp", 1)
    assert not shards_nothing("fsdp", None)


def test_no_report_surface_ranks_or_compares_fsdp_on_one_gpu(
    fsdp_fastest: Path, tmp_path: Path
) -> None:
    report = json.loads(_report(fsdp_fastest, tmp_path / "r.json"))
    headline = _first_lines(report)
    blocks = _blocks(report)
    (best,) = [b for b in blocks if b.get("id") == "summary-best"]
    (gpu,) = [b for b in blocks if b.get("id") == "summary-gpu"]
    # the best, its runner-up, the headline's count and the GPU table: ddp only
    assert [r["config"] for r in best["rows"]] == ["b8 x1 bf16 ddp [compiled]"]
    assert "fsdp" not in best["rows"][0]["lead"]
    assert "the fastest of 2 configurations" in headline and "of 4" not in headline
    assert "never ranked or compared" in headline
    assert [r["config"] for r in gpu["rows"]] == ["b8 x1 bf16 ddp [compiled]"]
    figures = [f for b in blocks if b.get("type") == "key_figures" for f in b["figures"]]
    (highest,) = [f for f in figures if f["label"] == "Highest throughput: gpt2"]
    assert "ddp" in highest["note"] and "fsdp" not in highest["note"]
    # no layout table compares it with ddp
    assert not [b for b in blocks if b.get("id") == "strategies-side-by-side"]


def test_the_console_ranks_no_fsdp_on_one_gpu(fsdp_fastest: Path, tmp_path: Path) -> None:
    text = " ".join(_report(fsdp_fastest, tmp_path / "r.txt", "term").split())
    assert "Best configuration by throughput: gpt2 b8 x1 bf16 ddp [compiled]" in text
    assert "the fastest of 2 configurations" in text
    assert "Highest throughput: gpt2" in text and "Strategies side by side" not in text
    for ranked in (
        "Best configuration by throughput: gpt2 b8 x1 bf16 fsdp",
        "over gpt2 b8 x1 bf16 fsdp",
    ):
        assert ranked not in text


def test_no_ddp_is_named_where_none_ran_at_world_1(tmp_path: Path) -> None:
    """Only FSDP on one GPU: the report says it shards nothing without a DDP that never ran,
    and names no best among cells that may not be ranked."""
    runs = tmp_path / "runs"
    shutil.copytree(WORKLOAD / "runs", runs)
    for path in runs.glob("*/cells/*__ddp__*.json"):
        path.unlink()
    report = json.loads(_report(runs, tmp_path / "r.json"))
    blocks = _blocks(report)
    (gpu,) = [b for b in blocks if b.get("id") == "summary-gpu"]
    headline = _first_lines(report)
    said = wording.say(fsdp_on_one())
    assert said in gpu["note"] and "DDP" not in gpu["note"] and "DDP" not in headline
    assert [r["compiled_vs_eager"] for r in gpu["rows"]] == ["not compared"]
    (best,) = [b for b in blocks if b.get("id") == "summary-best"]
    assert [r["lead"] for r in best["rows"]] == [said]


def test_the_workload_level_compares_no_fsdp_on_one_gpu() -> None:
    eager, compiled = (
        read_cells(WORKLOAD / "runs" / "eager"),
        read_cells(WORKLOAD / "runs" / "compiled"),
    )
    for result in (*eager, *compiled):
        verdict = judge.judge_cell(result, result in compiled, WORKLOAD)
        if result.cell.strategy == "fsdp":
            assert "ddp" not in shown_detail(verdict).lower()
            assert verdict.data["finding"]["code"] == "ranking.fsdp_on_one"
    ratio = judge.judge_compile(eager, compiled)
    assert ratio.data["fsdp"]["code"] == "ranking.fsdp_on_one"
    assert "fsdp: FSDP on one device shards nothing" in shown_detail(ratio)


def test_comparable_leaves_out_only_fsdp_on_one() -> None:
    import pandas as pd

    frame = pd.DataFrame({"strategy": ["ddp", "fsdp", "fsdp", "tp"], "world_size": [1, 1, 2, 2]})
    assert comparable(frame).index.tolist() == [0, 2, 3]


# -- point 10: one compile gain -------------------------------------------------------------------


def _both_surfaces(runs: Path, tmp_path: Path) -> tuple[str, str, str]:
    """The compile gain of ddp as the workload level and the report's GPU table and headline
    print it."""
    checks = judge.judge_compile(read_cells(runs / "eager"), read_cells(runs / "compiled"))
    report = json.loads(_report(runs, tmp_path / "r.json"))
    (gpu,) = [b for b in _blocks(report) if b.get("id") == "summary-gpu"]
    headline = _first_lines(report)
    return shown_detail(checks), gpu["rows"][0]["compiled_vs_eager"], headline


def test_the_workload_level_and_the_report_print_one_compile_gain(tmp_path: Path) -> None:
    workload, table, headline = _both_surfaces(WORKLOAD / "runs", tmp_path)
    assert table == "1.57x [1.53, 1.84]"  # 4 + 4 repeats, percentile bootstrap
    assert f"ddp: compiled/eager {table}, compiled faster (4 + 4 repeats)" in workload
    assert f"compiled/eager {table}, compiled faster" in headline


RATIO = re.compile(r"\d\.\d\dx")  # a gain's digits: '1.51x'


def test_the_first_h100_runs_gain_is_wider_than_itself_on_both_surfaces(tmp_path: Path) -> None:
    """2 + 2 repeats give 1.51x [1.14, 1.99]: wider than the gain, so no digits of it, on the
    workload level and the report's first screen alike; the interval still excludes 1."""
    workload, table, headline = _both_surfaces(FIRST_RUN / "runs", tmp_path)
    assert table == "not measurable (2 + 2 repeats)"
    said = "compiled faster beyond noise, by a ratio not measurable (2 + 2 repeats)"
    assert f"ddp: {said}" in workload and said in headline
    assert not RATIO.search(workload) and not RATIO.search(headline)


def test_a_gain_wider_than_itself_prints_no_digits(tmp_path: Path) -> None:
    """The second H100 run's ddp cut to 2 repeats a side (eager 266 and 221, compiled 407 and
    408): Welch's t on 1 degree of freedom gives an interval around 1.7x far wider than the
    gain, which was printed with its digits on both surfaces."""
    runs = tmp_path / "runs"
    shutil.copytree(WORKLOAD / "runs", runs)
    for path in runs.glob("*/cells/*__ddp__*.json"):
        cell = json.loads(path.read_text())
        cell["throughput"]["repeats"] = cell["throughput"]["repeats"][1:3]
        path.write_text(json.dumps(cell))
    workload, table, headline = _both_surfaces(runs, tmp_path)
    assert table == "not measurable (2 + 2 repeats)"
    assert "ddp: compiled/eager not measurable (2 + 2 repeats);" in workload
    assert "compiled/eager not measurable (2 + 2 repeats)" in headline
    assert not RATIO.search(workload) and not RATIO.search(headline)


def _row(repeats: list[float], strategy: str = "ddp", world: int = 2) -> dict[str, Any]:
    joined = ";".join(f"{v:.6g}" for v in repeats)
    return {"strategy": strategy, "world_size": world, "samples_per_s_repeats": joined}


@pytest.mark.parametrize(
    ("compiled", "code"),
    [
        ([150.0, 152.0, 149.0, 151.0], gain.FASTER),
        ([70.0, 72.0, 69.0, 71.0], gain.SLOWER),
        ([95.0, 110.0, 98.0, 104.0], gain.NOT_MEASURABLE),  # 1.01x [0.95, 1.10]
        ([150.0], gain.NO_INTERVAL),
    ],
)
def test_a_compile_gain_is_judged_by_its_interval(compiled: list[float], code: str) -> None:
    eager = _row([100.0, 101.0, 99.0, 100.5])
    found = gain.compile_gain(_row(compiled), eager)
    assert found is not None and found.code == code
    if code == gain.NOT_MEASURABLE:
        assert wording.say(found) == "compiled/eager not measurable (4 + 4 repeats)"
        assert found.figures["low"] < 1 < found.figures["high"]  # kept, as figures
    else:
        assert wording.say(found).startswith(f"compiled/eager {gain_figure(found.figures)}")


def test_compiled_slower_beyond_its_interval_is_a_workload_warning() -> None:
    (ddp,) = [r for r in read_cells(WORKLOAD / "runs" / "eager") if r.cell.strategy == "ddp"]
    assert ddp.throughput is not None
    slow = ddp.throughput.model_copy(update={"repeats": [v / 2 for v in ddp.throughput.repeats]})
    verdict = judge.judge_compile([ddp], [ddp.model_copy(update={"throughput": slow})])
    assert verdict.status is CheckStatus.WARN and "compiled slower" in shown_detail(verdict)
    assert verdict.data["ddp"]["code"] == gain.SLOWER


def test_compiled_slower_by_a_margin_wider_than_itself_is_still_a_warning() -> None:
    """About 0.8x with its interval below 1 but wider than the gain: no digits, and still the
    workload level's WARN (the order holds)."""
    (ddp,) = [r for r in read_cells(WORKLOAD / "runs" / "eager") if r.cell.strategy == "ddp"]
    assert ddp.throughput is not None
    repeats = [250.0 * f for f in (0.55, 0.8, 0.82, 0.95)]  # eager: 221-266
    slow = ddp.throughput.model_copy(update={"repeats": repeats})
    verdict = judge.judge_compile([ddp], [ddp.model_copy(update={"throughput": slow})])
    assert verdict.data["ddp"]["code"] == gain.NOT_MEASURABLE
    assert verdict.status is CheckStatus.WARN
    said = "compiled slower beyond noise, by a ratio not measurable (4 + 4 repeats)"
    assert said in shown_detail(verdict)
