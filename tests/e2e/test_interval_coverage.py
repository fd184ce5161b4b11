"""benchmarks/interval_coverage.py judges saved runs right: how often a run's
interval holds the other runs' median, per method, with the load that makes a verdict void.
Its counting is checked on synthetic saved runs (`--load`), no torchrun: the measurement itself
is a benchmark's, on whatever machine runs it (docs/methodology.md, "Uncertainty")."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.processes import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "interval_coverage.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("interval_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("interval_coverage", module)
    spec.loader.exec_module(module)
    return module


def saved(
    within_sd: float, between_sd: float, runs: int, load: float, seed: int = 0
) -> dict[str, Any]:
    """A saved measurement as the benchmark writes it, of synthetic lognormal runs, each run
    "printed" with the range of its repeats (what the bootstrap of 4 printed)."""
    rng = np.random.default_rng(seed)
    records = []
    for index in range(1, runs + 1):
        level = rng.normal(0.0, between_sd)
        repeats = [float(v) for v in 10_000 * np.exp(level + rng.normal(0.0, within_sd, 4))]
        records.append(
            {
                "index": index,
                "outcome": "ok",
                "load_1m": load,
                "repeats": repeats,
                "value": float(np.median(repeats)),
                "low": min(repeats),
                "high": max(repeats),
                "method": "bootstrap of the median over 4 repeats",
                "other_cores": 0.0,
            }
        )
    cell = {"model": "tiny-mlp", "batch": 16, "world": 2, "repeats": 4, "steps": 10}
    return {
        "cell": {**cell, "warmup": 3, "settle": 60.0},
        "load_before": [load, load, load],
        "load_after": [load, load, load],
        "runs": records,
    }


def report(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--load", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _check_quiet(text: str) -> None:
    """A quiet measurement's report: every method with its interval, the drift floor's widest."""
    assert "1-min load average: before 0.30, after 0.30" in text
    assert "host-load record called the machine busy: 0 of 30" in text
    names = (
        "as printed by the runs",
        "range of the repeats",
        "percentile bootstrap of the median",
        "Student t on log, n - 1 df, no drift term",
        r"median_of_repeats \(drift floor sd [\d.]+\)",
    )
    counts = {}
    for name in names:
        found = re.search(
            rf"^  {name}: (\d+)/30 = \d+% \(\d+% to \d+%\): (met|missed|not settled)$",
            text,
            re.M,
        )
        assert found, (name, text)
        counts[name] = int(found.group(1))
    # the printed ranges are the range, and the bootstrap of 4 is the same interval
    assert counts["as printed by the runs"] == counts["range of the repeats"]
    assert counts["percentile bootstrap of the median"] == counts["range of the repeats"]
    # drift twice the repeats' spread: the widened interval holds far more reruns
    now = counts[r"median_of_repeats \(drift floor sd [\d.]+\)"]
    assert now > counts["range of the repeats"] + 10
    assert re.search(r"^log throughput: between-run sd [\d.]+ beyond the repeats", text, re.M)


@pytest.mark.slow  # starts a child process
def test_a_quiet_measurement_prints_every_method_with_its_interval(tmp_path: Path) -> None:
    _check_quiet(report(tmp_path, saved(within_sd=0.02, between_sd=0.04, runs=30, load=0.3)))


def report_here(data: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    """What `interval_coverage.py --load` prints for `data`, its report run in this process."""
    capsys.readouterr()
    _module().report(data)
    return capsys.readouterr().out


def test_a_quiet_measurement_prints_every_method_with_its_interval_in_process(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same report, run in this process (no script started)."""
    _check_quiet(report_here(saved(within_sd=0.02, between_sd=0.04, runs=30, load=0.3), capsys))


def _check_busy(report_of: Callable[[dict[str, Any]], str]) -> None:
    """Checks that a busy load, or one run its host-load record called busy, gets no verdict."""
    text = report_of(saved(within_sd=0.05, between_sd=0.05, runs=6, load=3.0))
    assert "not a quiet machine" in text
    assert text.count("load too high to judge") == 5
    assert not re.search(r": (met|missed|not settled)$", text, re.M)
    # a quiet load but one run that saw other work (its own host-load record): no verdict either
    quiet = saved(within_sd=0.05, between_sd=0.05, runs=6, load=0.2)
    quiet["runs"][2] |= {"other_cores": 0.9, "busy": True}
    text = report_of(quiet)
    assert "host-load record called the machine busy: 1 of 6 (runs 3)" in text
    assert text.count("load too high to judge") == 5


@pytest.mark.slow
def test_a_busy_machine_gets_no_verdict(tmp_path: Path) -> None:
    _check_busy(lambda data: report(tmp_path, data))


def test_a_busy_machine_gets_no_verdict_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    _check_busy(lambda data: report_here(data, capsys))


def test_between_run_sd_finds_the_drift_beyond_the_repeats() -> None:
    module = _module()
    data = saved(within_sd=0.05, between_sd=0.08, runs=400, load=0.2, seed=1)
    between, within, _ = module.between_run_sd(data["runs"])
    assert between == pytest.approx(0.08, abs=0.01)
    assert within == pytest.approx(0.05, abs=0.005)
    none = saved(within_sd=0.05, between_sd=0.0, runs=400, load=0.2, seed=2)
    assert module.between_run_sd(none["runs"])[0] < 0.015


def test_each_run_is_judged_against_the_other_runs_median() -> None:
    module = _module()
    runs = [{"value": v} for v in (100.0, 110.0, 90.0, 300.0)]
    assert module.others_median(runs, 3) == 100.0  # the outlier is left out of its own target
    assert module.others_median(runs, 0) == 110.0
    assert module.covers((95.0, 105.0), 100.0) and not module.covers((95.0, 99.0), 100.0)
    assert module.covers((None, None), 100.0) is None
    assert module.verdict(30, 30, quiet=True) == "met"
    assert module.verdict(1, 30, quiet=True) == "missed"
    assert module.verdict(5, 6, quiet=True) == "not settled"
    assert module.verdict(30, 30, quiet=False) == "load too high to judge"
