"""benchmarks/straggler_detection.py keeps running (how well the straggler
verdict finds stragglers of every kind, written as a user writes them, is measured, so CI runs
the measurement's smallest grid): two ranks, `torchscale profile` only, a sleep in backward at
30 % of the balanced step and its balanced run, one repeat, few steps, the balanced step taken
from a saved record (--reuse-steps: no calibration run). The output's shape is asserted, never
a rate: the rates are a benchmark's, on whatever machine runs it. The tables, the targets'
verdicts and the pooling of saved files are checked on synthetic records (--load), and the
scenario plug-ins are built outside a rank, where they must start nothing."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.processes import REPO_ROOT, live_children, processes_mentioning, start, stop

SCRIPT = REPO_ROOT / "benchmarks" / "straggler_detection.py"
SCENARIOS = REPO_ROOT / "benchmarks" / "straggler_scenarios.py"
OUTCOMES = {"right", "wrong rank", "wrong kind", "nobody", "named"}
CONFUSION_HEAD = ("truth", "n", "compute", "input", "host", "comm", "-", "other rank", "nobody")
KIND_HEAD = ("kind", "n", "right rank", "judged", "right kind", "judged")
BALANCED_HEAD = ("scenario", "n", "nobody named", "judged", "named with caveat")
EXTRA_HEAD = ("scenario", "size", "command", "ranks", "asked", "added", "step", "vs bal.")


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def _module() -> ModuleType:
    return _load("straggler_detection", SCRIPT)


def _flat(text: str) -> str:
    """The output with its wrapping undone: one space between words."""
    return " ".join(text.split())


def _table(text: str, head: Sequence[str]) -> list[list[str]]:
    """The rows (cells split on 2+ spaces) of the first table headed `head` in `text`."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if line.startswith("  ") and re.split(r" {2,}", line.strip()) == list(head):
            rows = []
            for row in lines[at + 1 :]:
                cells = re.split(r" {2,}", row.strip())
                if not row.startswith("  ") or len(cells) != len(head):
                    break
                rows.append(cells)
            return rows
    raise AssertionError(f"no table headed {head}:\n{text}")


def _row(rows: list[list[str]], *first: str) -> list[str]:
    found = [row for row in rows if row[: len(first)] == list(first)]
    assert len(found) == 1, (first, rows)
    return found[0]


# ------------------------------------------------------------------------ the real run


@pytest.mark.slow  # the benchmark's real runs (torchrun profiles)
def test_the_smallest_grid_prints_its_tables_and_the_targets(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    records = tmp_path / "runs.json"
    steps = tmp_path / "steps.json"  # the group's balanced step, so no calibration run
    balanced = {"command": "profile", "model": "mlp", "ranks": 2, "scenario": "balanced"}
    steps.write_text(
        json.dumps({"version": 2, "runs": [{**balanced, "step_ms": 10.0, "wait_share": 0.1}]}),
        encoding="utf-8",
    )
    argv = [
        sys.executable,
        str(SCRIPT),
        *("--kinds", "balanced,sleep", "--sizes", "30", "--ranks", "2"),
        *("--commands", "profile", "--repeats", "1", "--steps", "2", "--profile-steps", "2"),
        *("--reuse-steps", str(steps), "--json", str(records)),
    ]
    proc = start(argv, output, env={"TMPDIR": str(tmp_path), "COLUMNS": "80"})
    try:
        code = proc.wait(timeout=240)
    finally:
        stop(proc, marker=str(tmp_path))
    text = output.read_text(encoding="utf-8", errors="replace")
    assert code == 0, text
    flat = _flat(text)
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    before = r"^1-min load average before: \d+\.\d\d \(5-min \d+\.\d\d, \d+ cores\)$"
    assert re.search(before, text, re.M), text
    assert "2 case(s) x 1 repeat(s) + 0 calibration run(s) = 2 runs; estimated" in flat
    assert "balanced step of profile mlp x2: 10.0 ms, 9.0 ms of it on a CPU" in flat
    done = re.findall(
        r"^  \[([12])/2\] profile mlp x2 (balanced|sleep 30%, \+[\d.]+ ms): ([a-z ]+) \(",
        text,
        re.M,
    )  # each run's line as it ends (the cases shuffled)
    assert sorted(i for i, _, _ in done) == ["1", "2"], text
    assert {s.split(",")[0] for _, s, _ in done} == {"balanced", "sleep 30%"}, text
    assert {o for _, _, o in done} <= OUTCOMES, text
    # the load statement
    assert re.search(
        r"machine: \d+ cores; 1-min load average before \d+\.\d\d, after \d+\.\d\d, at the "
        r"runs' ends median \d+\.\d\d, max \d+\.\d\d\.",
        flat,
    ), text
    assert re.search(r"^(QUIET|LOADED): ", text, re.M), text
    # the confusion matrix: one run of each, counted in exactly one column
    assert "confusion at an extra time of 30% of the balanced step" in flat
    confusion = _table(text, CONFUSION_HEAD)
    assert [row[:2] for row in confusion] == [["balanced: nobody", "1"], ["sleep: compute", "1"]]
    for row in confusion:
        assert sum(map(int, row[2:])) == 1, row
    # the targets, and the per-kind tables they are judged in
    assert (
        "targets at an extra time of 30% of the step, per true kind: right rank >= 90% of the "
        "runs, right rank and kind >= 80%, balanced runs name nobody >= 95%."
    ) in flat
    verdict = r"not settled|missed"  # one run settles nothing as met
    kinds = _table(text, KIND_HEAD)
    assert len(kinds) == 1 and kinds[0][:2] == ["compute", "1"], kinds
    for rate in (kinds[0][2], kinds[0][4]):
        assert re.fullmatch(r"[01] (0|100)% \[\d+-\d+\]", rate), kinds
    assert re.fullmatch(verdict, kinds[0][3]) and re.fullmatch(verdict, kinds[0][5]), kinds
    clean = _table(text, BALANCED_HEAD)
    assert len(clean) == 1 and clean[0][:2] == ["balanced", "1"], clean
    assert re.fullmatch(verdict, clean[0][3]) and clean[0][4] in ("0", "1"), clean
    assert "the same, by command and rank count (30%):" in flat
    assert "an interval clears 95 % from 72 runs, 90 % from 36 and 80 % from 17" in flat
    extra = _table(text, EXTRA_HEAD)
    assert [row[:4] for row in extra] == [
        ["balanced", "-", "profile", "2"],
        ["sleep", "30%", "profile", "2"],
    ], extra
    # the rank's own measure ('-' when the run ended before its record's first rewrite)
    assert re.fullmatch(r"\d+\.\d ms|-", _row(extra, "sleep")[5]), extra
    assert re.search(r"^\(\d+ s\)$", text, re.M), text
    # the records: one per run, none failed, the sleep added on the target rank
    data = json.loads(records.read_text(encoding="utf-8"))
    assert data["version"] == 2 and data["load_after"] is not None
    runs = data["runs"]
    assert sorted(r["scenario"] for r in runs) == ["balanced", "sleep"], runs
    assert all(r["outcome"] in OUTCOMES and not r["calibration"] for r in runs), runs
    sleep = next(r for r in runs if r["scenario"] == "sleep")
    assert sleep["share"] == 0.3 and sleep["extra_ms"] > 0 and sleep["target_rank"] == 1
    assert sleep["added"]["scenario"] == "sleep" and sleep["added"]["rank"] == 1, sleep
    assert not any("leftover_hogs" in r for r in runs), runs
    assert not any(tmp_path.glob("straggler-detection-*")), "the runs' directory is removed"
    assert not processes_mentioning(str(tmp_path)), "every process started is gone"


# ------------------------------------------------------------------------ saved records


def _run(
    sd: ModuleType,
    scenario: str,
    named_rank: int | None = None,
    named_kind: str | None = None,
    share: float = 0.3,
    **extra: Any,
) -> dict[str, Any]:
    """A run's record as measure() writes it; the verdict named `named_rank` with `named_kind`
    (nobody: None)."""
    case = sd.Case("profile", "mlp", 2, scenario, None if scenario == "balanced" else share)
    named = named_rank is not None
    record = {
        "command": case.command,
        "model": case.model,
        "ranks": case.ranks,
        "scenario": case.scenario,
        "share": case.share,
        "expected_kind": case.expected_kind,
        "target_rank": case.target_rank,
        "balanced_step_ms": 10.0,
        "balanced_busy_ms": 9.0,
        "extra_ms": 10.0 * (case.share or 0.0),
        "exit_code": 0,
        "wall_s": 12.0,
        "load_1m": 0.4,
        "outcome": sd.outcome(case, named, named_rank, named_kind),
        "named": named,
        "named_rank": named_rank,
        "named_kind": named_kind,
        "named_phase": None,
        "kind_rule": None,
        "not_named": None if named else "no rank last often enough",
        "summary": f"rank {named_rank} is a straggler" if named else "no straggler",
        "caveat": None,
        "source": "traces",
        "busy": False,
        "step_ms": 10.0 + 10.0 * (case.share or 0.0),
        "wait_share": 0.1,
        "calibration": False,
        "repeat": 0,
    }
    if case.share is not None:
        record["added"] = {"scenario": scenario, "calls": 4, "added_ms_mean": record["extra_ms"]}
    return {**record, **extra}


def _saved(
    path: Path,
    runs: list[dict[str, Any]],
    before: float = 0.4,
    after: float = 0.6,
    left_out: dict[str, str] | None = None,
) -> Path:
    data = {
        "version": 2,
        "grid": {
            "kinds": [],
            "commands": ["profile"],
            "models": ["mlp"],
            "batch_size": 8,
            "steps": 12,
            "profile_steps": 10,
            "bench_repeats": 2,
        },
        "left_out": left_out or {},
        "cores": 2,
        "load_before": [before, before, before],
        "load_after": [after, after, after],
        "runs": runs,
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _report(
    sd: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *paths: Path,
    columns: int = 200,
) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(sys, "argv", ["straggler_detection.py", "--load", *map(str, paths)])
    sd.main()
    text = capsys.readouterr().out
    too_wide = [line for line in text.splitlines() if len(line) > columns]
    assert not too_wide, too_wide
    return text


def test_targets_are_judged_by_their_intervals() -> None:
    sd = _module()
    assert (sd.runs_to_settle(0.95), sd.runs_to_settle(0.90), sd.runs_to_settle(0.80)) == (
        72,
        36,
        17,
    )
    assert sd.judge(36, 36, 0.90) == "met"  # [90.3 %, 100 %] clears 90 %
    assert sd.judge(35, 35, 0.90) == "not settled"  # all right, too few to clear it
    assert sd.judge(17, 17, 0.80) == "met"
    assert sd.judge(5, 10, 0.95) == "missed"  # [18.7 %, 81.3 %] lies below
    assert sd.judge(0, 0, 0.95) == "not measured"
    assert sd.short_rate(17, 17) == "17 100% [80-100]"
    assert sd.short_rate(0, 10) == "0 0% [0-31]"
    assert sd.short_rate(0, 0) == "-"
    case = sd.Case("profile", "mlp", 4, "compute-forward", 0.3)
    assert (case.target_rank, case.expected_kind) == (3, "compute")
    assert sd.outcome(case, True, 3, "compute") == "right"
    assert sd.outcome(case, True, 3, "host") == "wrong kind"
    assert sd.outcome(case, True, 3, None) == "wrong kind"
    assert sd.outcome(case, True, 0, "compute") == "wrong rank"
    assert sd.outcome(case, False, None, None) == "nobody"
    balanced = sd.Case("benchmark", "mlp", 2, "balanced")
    assert balanced.expected_kind is None
    assert sd.outcome(balanced, True, 1, "compute") == "named"
    assert sd.outcome(balanced, False, None, None) == "nobody"
    assert {sd.Case("profile", "mlp", 2, s, 0.3).expected_kind for s in sd.SCENARIOS} == {
        None,
        *sd.KINDS,
    }


def test_saved_runs_give_the_confusion_matrix_and_the_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = _module()
    runs = [
        # sleep (compute) at 30 %: each cell of its row once, and nobody
        _run(sd, "sleep", 1, "compute"),
        _run(sd, "sleep", 1, "host"),  # right rank, wrong kind
        _run(sd, "sleep", 1, None),  # right rank, no kind
        _run(sd, "sleep", 0, "compute"),  # wrong rank
        _run(sd, "sleep", None),  # nobody
        *[_run(sd, "communication", 1, "communication") for _ in range(36)],  # met
        *[_run(sd, "input", None) for _ in range(10)],  # missed
        # balanced: 5 of 10 name someone (3 the last rank, 1 with the busy caveat, 2 rank 0)
        *[_run(sd, "balanced", None) for _ in range(5)],
        *[_run(sd, "balanced", 1, "compute") for _ in range(2)],
        _run(sd, "balanced", 1, "compute", caveat="busy machine: other work ran"),
        *[_run(sd, "balanced", 0, None) for _ in range(2)],
        # another size: its own matrix (with every balanced run), left out of the targets
        _run(sd, "compute-backward", 1, "compute", share=0.6),
    ]
    text = _report(sd, monkeypatch, capsys, _saved(tmp_path / "runs.json", runs))
    flat = _flat(text)
    assert "straggler detection over kinds: 62 run(s) of profile" in flat
    assert "machine: 2 cores; 1-min load average before 0.40, after 0.60" in flat
    assert re.search(r"^QUIET: .* judged 0 of 62 busy", text, re.M), text
    confusion = _table(text, CONFUSION_HEAD)  # 30 %, the first
    assert _row(confusion, "balanced: nobody") == [
        "balanced: nobody",
        "10",
        "3",
        "0",
        "0",
        "0",
        "0",
        "2",
        "5",
    ]
    assert _row(confusion, "sleep: compute") == [
        "sleep: compute",
        "5",
        "1",
        "0",
        "1",
        "0",
        "1",
        "1",
        "1",
    ]
    assert _row(confusion, "input: input")[1:] == ["10", "0", "0", "0", "0", "0", "0", "10"]
    assert _row(confusion, "communication: communication")[1:] == [
        "36",
        "0",
        "0",
        "0",
        "36",
        "0",
        "0",
        "0",
    ]
    assert not [row for row in confusion if row[0].startswith("compute-backward")], confusion
    at_60 = text.split("confusion at an extra time of 60%")[1]
    confusion_60 = _table(at_60, CONFUSION_HEAD)
    assert [row[:3] for row in confusion_60] == [
        ["balanced: nobody", "10", "3"],
        ["compute-backward: compute", "1", "1"],
    ]
    # the targets, at 30 % only: compute is the 5 sleep runs
    kinds = _table(text, KIND_HEAD)
    rate = sd.short_rate
    assert _row(kinds, "compute") == [
        "compute",
        "5",
        rate(3, 5),
        "not settled",
        rate(1, 5),
        "missed",
    ]
    assert _row(kinds, "input") == ["input", "10", rate(0, 10), "missed", rate(0, 10), "missed"]
    assert _row(kinds, "communication") == [
        "communication",
        "36",
        rate(36, 36),
        "met",
        rate(36, 36),
        "met",
    ]
    assert not [row for row in kinds if row[0] == "host"], "a kind not run is not listed"
    # a balanced run that names someone counts against the balanced target
    assert _table(text, BALANCED_HEAD) == [["balanced", "10", rate(5, 10), "missed", "1"]]
    by_command = _table(text, ("kind", "command", "ranks", *KIND_HEAD[1:]))
    assert _row(by_command, "compute", "profile", "2")[3:] == [
        "5",
        rate(3, 5),
        "not settled",
        rate(1, 5),
        "missed",
    ]
    assert "per size (judged only at 30%):" in flat
    sizes = _table(text, ("kind", "size", "n", "right rank", "right kind"))
    assert _row(sizes, "compute", "60%") == ["compute", "60%", "1", rate(1, 1), rate(1, 1)]
    extra = _table(text, EXTRA_HEAD)
    assert _row(extra, "sleep")[:6] == ["sleep", "30%", "profile", "2", "3.0 ms", "3.0 ms"]
    # the runs not right, in the diagnosis' own words; a right one is not among them
    wrong = flat.split("runs not right, in the diagnosis' own words:")[1]
    assert "profile mlp x2 sleep 30% (repeat 0): wrong kind: rank 1 is a straggler" in wrong
    assert "profile mlp x2 sleep 30% (repeat 0): wrong rank: rank 0 is a straggler" in wrong
    assert "profile mlp x2 input 30% (repeat 0): nobody: no straggler" in wrong
    assert (
        "profile mlp x2 balanced (repeat 0): named: rank 1 is a straggler; caveat: busy "
        "machine: other work ran"
    ) in wrong
    assert "communication" not in wrong and "compute-backward" not in wrong
    assert "failed or skipped runs" not in flat


def test_a_failed_run_is_left_out_of_the_rates_with_its_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = _module()
    error = "starting 2 ranks\nRuntimeError: rank 1 exited with code 1\nTraceback ends here\n"
    failed = {k: v for k, v in _run(sd, "sleep").items() if k not in ("named", "added")}
    failed.update(outcome="failed", exit_code=1, error=error)  # no reason: read from `error`
    skipped = {**failed, "outcome": "skipped", "exit_code": None, "error": None}
    skipped["reason"] = "no balanced step of its group (every balanced run failed)"
    runs = [_run(sd, "balanced"), _run(sd, "sleep", 1, "compute"), failed, skipped]
    text = _report(sd, monkeypatch, capsys, _saved(tmp_path / "runs.json", runs))
    flat = _flat(text)
    assert "4 run(s) of profile" in flat
    assert _row(_table(text, CONFUSION_HEAD), "sleep: compute")[:3] == ["sleep: compute", "1", "1"]
    assert _row(_table(text, KIND_HEAD), "compute") == [
        "compute",
        "1",
        sd.short_rate(1, 1),
        "not settled",
        sd.short_rate(1, 1),
        "not settled",
    ]
    assert "failed or skipped runs (no diagnosis; left out of every rate): 2" in flat
    assert "profile mlp x2 sleep 30%: failed, exit 1: RuntimeError: rank 1 exited with code 1" in (
        flat
    )
    assert (
        "profile mlp x2 sleep 30%: skipped, exit None: no balanced step of its group (every "
        "balanced run failed)"
    ) in flat
    assert "runs not right" not in flat, "a failed run is no verdict"


def test_several_saved_files_are_pooled_within_the_width(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = _module()
    quiet = _saved(
        tmp_path / "a.json",
        [_run(sd, "balanced"), _run(sd, "balanced")],
        1.5,
        2.5,
        left_out={"input": "batches"},
    )
    busy = [_run(sd, "sleep", 1, "compute", busy=True) for _ in range(2)]
    loaded = _saved(tmp_path / "b.json", busy, 0.5, 3.5)
    text = _report(sd, monkeypatch, capsys, quiet, loaded, columns=60)
    flat = _flat(text)
    assert "4 run(s) of profile" in flat
    assert "left out: input (this torchscale's ModelBundle has no 'batches' field)" in flat
    # the load: the lowest before, the highest after; half the runs busy is a loaded machine
    assert "machine: 2 cores; 1-min load average before 0.50, after 3.50" in flat
    assert re.search(r"^LOADED: ", text, re.M) and "telemetry judged 2 of 4 busy" in flat
    assert re.search(r"^  truth +n +compute", text, re.M), text  # the matrix, split to fit
    assert re.search(r"^  balanced: nobody +2 +0", text, re.M), text
    assert re.search(r"^  sleep: compute +2 +2", text, re.M), text
    assert re.search(r"^  compute +2 +2 100% \[\d+-100\]", text, re.M), text
    assert re.search(r"^  balanced +2 +2 100% \[\d+-100\]", text, re.M), text


def test_an_issue_38_file_is_refused_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = _module()
    old = tmp_path / "old.json"  # version 1 had no key: an --inject-delay grid
    old.write_text(
        json.dumps(
            {
                "grid": {"batch_size": 8, "steps": 8, "profile_steps": 8},
                "conditions": {"quiet": {"load_before": [1.0], "load_after": [2.0]}},
                "runs": [
                    {
                        "model": "tiny-mlp",
                        "ranks": 2,
                        "condition": "quiet",
                        "delay_ms": 40.0,
                        "phase": "backward",
                        "outcome": "right",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    new = _saved(tmp_path / "new.json", [_run(sd, "balanced")])
    for paths in ((old,), (new, old)):
        with pytest.raises(SystemExit) as stopped:
            _report(sd, monkeypatch, capsys, *paths)
        message = str(stopped.value.code)
        assert "(the --inject-delay grid), not this script's" in message, message
        assert "straggler_detection.py of that time" in message, message
        assert "confusion" not in capsys.readouterr().out, "nothing is reported from it"


# ------------------------------------------------------------------------ the plug-ins


def test_the_scenarios_build_outside_a_rank_and_on_meta_without_side_effects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from torchscale.rank.models.bundle import ModelBundle

    scenarios = _load("straggler_scenarios", SCENARIOS)

    def forbidden(what: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError(f"{what} outside a rank")

        return call

    # no calibration, no pinning of this process to a core, no hog
    monkeypatch.setattr(scenarios, "_Burn", forbidden("calibration"))
    monkeypatch.setattr(scenarios, "_pin_process", forbidden("pinning"))
    monkeypatch.setattr(subprocess, "Popen", forbidden("a process started"))
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    record = tmp_path / "record.json"
    options = {"extra_ms": 50.0, "step_ms": 20.0, "target_rank": 0, "record": str(record)}
    options |= {"width": 16, "depth": 2}
    children = set(live_children())
    assert set(scenarios.SCENARIOS) == set(_module().SCENARIOS)

    def build(where: str) -> None:
        for scenario, factory in scenarios.SCENARIOS.items():
            bundle = factory(**options)  # calibration, pinning, a process: forbidden above
            assert isinstance(bundle, ModelBundle), (where, scenario)
            net = bundle.model
            assert net.in_forward is None and net.around_output is None, (where, scenario)
            if scenario == "input":
                batches = bundle.batches(2, torch.device("cpu"))
                assert batches.seconds == 0.0 and batches.log is None, where

    build("outside a rank")
    # a host process planning a cell builds on meta, with a rank's environment
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with torch.device("meta"):
        build("on meta")
    assert not scenarios._hogs, "no hog started"
    assert not record.exists(), "nothing recorded"
    assert set(live_children()) <= children, "no process started"
