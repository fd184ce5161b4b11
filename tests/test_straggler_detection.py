"""benchmarks/straggler_detection.py keeps running (issue 38: how well the straggler verdict
finds what is there is measured, so CI runs the measurement's smallest grid): one model, two
ranks, one 40 ms backward delay and its balanced run, one repeat, quiet only. The output's
shape is asserted, never a rate: the rates are a benchmark's, on whatever machine runs it."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.processes import REPO_ROOT, processes_mentioning, start, stop

SCRIPT = REPO_ROOT / "benchmarks" / "straggler_detection.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("straggler_detection", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("straggler_detection", module)
    spec.loader.exec_module(module)
    return module


def test_the_smallest_grid_prints_its_tables_and_the_targets(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    records = tmp_path / "runs.json"
    argv = [
        sys.executable,
        str(SCRIPT),
        *("--models", "tiny-mlp", "--ranks", "2", "--delays", "40", "--phases", "backward"),
        *("--repeats", "1", "--conditions", "quiet", "--steps", "8", "--profile-steps", "8"),
        *("--json", str(records)),
    ]
    proc = start(argv, output, env={"TMPDIR": str(tmp_path)})
    try:
        code = proc.wait(timeout=240)
    finally:
        stop(proc, marker=str(tmp_path))
    text = output.read_text(encoding="utf-8", errors="replace")
    assert code == 0, text
    assert re.search(r"^quiet: 2 cases x 1 repeat\(s\); 1-min load average before: \d", text, re.M)
    assert re.search(r"^quiet: 1-min load average after: \d", text, re.M), text
    assert "=== quiet ===" in text
    assert "WARNING: 'quiet' means no load started by this script" in text
    assert re.search(
        r"^  delay +phase +ranks +model +right +wrong rank +wrong phase +missed$", text, re.M
    )
    assert re.search(r"^  40 ms +backward +2 +tiny-mlp +[01]/1 +[01] +[01] +[01]$", text, re.M), (
        text
    )
    assert re.search(r"^  40 ms: right [01]/1 = [\d.]+% \(95 % interval ", text, re.M), text
    assert re.search(r"^  2 +tiny-mlp +[01]/1 +[01]/[01] +[01]/1$", text, re.M), text
    verdict = r"(met|missed|not settled|not measured)$"
    for target in (
        r"quiet: a 40 ms delay named right >= 95%: .*: ",
        r"hogs: a 40 ms delay named right >= 90%: 0/0 \(no runs\): ",
        r"quiet: balanced runs name nobody >= 95%: .*: ",
        r"hogs: every name in a balanced run carries the busy-machine caveat: .*: ",
    ):
        assert re.search(rf"^  {target}{verdict}", text, re.M), (target, text)
    runs = json.loads(records.read_text(encoding="utf-8"))["runs"]
    assert sorted(r["delay_ms"] or 0 for r in runs) == [0, 40]
    assert all(r["outcome"] != "failed" for r in runs), runs
    assert {r["outcome"] for r in runs} <= {"right", "wrong rank", "wrong phase", "missed"} | {
        "clean",
        "named",
    }
    assert not any(tmp_path.glob("straggler-detection-*")), "the runs' directory is removed"
    assert not processes_mentioning(str(tmp_path)), "every process started is gone"


def test_targets_are_judged_by_their_intervals() -> None:
    sd = _module()
    assert sd.runs_to_settle(0.95) == 72  # 0.025 ** (1 / n) >= 0.95
    assert sd.judge(24, 24, 0.95) == "not settled"
    assert sd.judge(72, 72, 0.95) == "met"
    assert sd.judge(10, 24, 0.95) == "missed"
    assert sd.judge(0, 0, 0.95) == "not measured"
    case = sd.Case("tiny-mlp", 4, 40.0, "forward")
    assert case.injected_rank == 3
    assert sd.outcome(case, True, 3, "forward") == "right"
    assert sd.outcome(case, True, 3, "backward") == "wrong phase"
    assert sd.outcome(case, True, 0, "forward") == "wrong rank"
    assert sd.outcome(case, False, None, None) == "missed"
    assert sd.outcome(sd.Case("tiny-mlp", 2), True, 1, "forward") == "named"


def test_saved_runs_report_a_name_without_the_caveat_under_hogs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = _module()
    base = {"model": "tiny-mlp", "ranks": 2, "exit_code": 0, "wall_s": 10.0, "load_1m": 3.0}
    runs = [
        {
            **base,
            "condition": "hogs",
            "delay_ms": None,
            "phase": None,
            "outcome": "named",
            "named": True,
            "named_rank": 1,
            "named_phase": "forward",
            "caveat": None,
            "busy": True,
            "summary": "rank 1 is a straggler in forward",
            "repeat": 0,
        },
        {
            **base,
            "condition": "hogs",
            "delay_ms": 40.0,
            "phase": "backward",
            "outcome": "right",
            "named": True,
            "named_rank": 1,
            "named_phase": "backward",
            "caveat": "busy machine",
            "busy": True,
            "repeat": 0,
        },
    ]
    data = {
        "grid": {"batch_size": 8, "steps": 8, "profile_steps": 8},
        "conditions": {"hogs": {"load_before": [2.0, 1.0, 1.0], "load_after": [4.0, 3.0, 2.0]}},
        "runs": runs,
    }
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["straggler_detection.py", "--load", str(saved)])
    sd.main()
    text = capsys.readouterr().out
    assert "1-min load average: before 2.00, after 4.00" in text
    assert "0/1 named carry it" in text
    assert re.search(r"carries the busy-machine caveat: .*: missed$", text, re.M), text
    assert "hogs: a 40 ms delay named right >= 90%: 1/1" in text
    assert "tiny-mlp x2 balanced (repeat 0): named: rank 1 is a straggler in forward" in text


def test_several_saved_files_are_pooled_with_the_busiest_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = _module()
    run = {
        "model": "tiny-mlp",
        "ranks": 2,
        "exit_code": 0,
        "wall_s": 10.0,
        "load_1m": 1.0,
        "condition": "quiet",
        "delay_ms": None,
        "phase": None,
        "outcome": "clean",
        "named": False,
        "caveat": None,
        "busy": False,
        "repeat": 0,
    }
    paths = []
    for index, (before, after) in enumerate(((1.5, 2.5), (0.5, 3.5))):
        data = {
            "grid": {"batch_size": 8, "steps": 8, "profile_steps": 8},
            "conditions": {"quiet": {"load_before": [before], "load_after": [after]}},
            "runs": [run],
        }
        paths.append(tmp_path / f"runs{index}.json")
        paths[-1].write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["straggler_detection.py", "--load", *map(str, paths)])
    sd.main()
    text = capsys.readouterr().out
    assert "1-min load average: before 0.50, after 3.50" in text
    assert "quiet: balanced runs name nobody >= 95%: 2/2" in text
