"""benchmarks/own_job_overhead.py (the probe's cost against the same script run bare): its
judgement on made-up rounds (the 1 % budget by the ratio's 95 % upper bound, only on a step of
at least 20 ms; a loss that differs in any run is caught), and one real round of
the smallest job, which keeps the script running. Its figures are a benchmark's, never
asserted here."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.processes import REPO_ROOT, start, stop

SCRIPT = REPO_ROOT / "benchmarks" / "own_job_overhead.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("own_job_overhead", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("own_job_overhead", module)  # its dataclass looks itself up
    spec.loader.exec_module(module)
    return module


def test_the_budget_is_judged_by_the_upper_bound_on_a_long_enough_step(bench: ModuleType) -> None:
    assert bench.verdict(1.0099, 0.030, 10).endswith("within the 1 % budget")
    assert "not within the 1 % budget (10 rounds)" in bench.verdict(1.0101, 0.030, 10)
    assert "not judged" in bench.verdict(1.001, 0.0199, 10)  # under 20 ms: not the step
    assert bench.verdict(None, 0.030, 1).startswith("one round: no interval")


def rounds_of(bench: ModuleType, bare: list[float], probed: list[float]) -> list[dict[str, object]]:
    """Made-up rounds: each side's steps all at the given seconds (their CPU time half of
    it), the same losses."""
    losses = [2.5, 2.25, 2.0]

    def run(step: float) -> object:
        return bench.Run(
            step_s=[step] * 3,
            cpu_s=[step / 2] * 3,
            losses=list(losses),
            wall_s=1.0,
            probe_steps=None,
        )

    return [{"bare": run(b), "probed": run(p)} for b, p in zip(bare, probed, strict=True)]


def test_the_report_takes_the_ratio_over_rounds_and_catches_a_changed_loss(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    args = bench.argparse.Namespace(warmup=1, steps=2, dropout=0.1)
    rounds = rounds_of(bench, [0.030, 0.031, 0.029], [0.0303, 0.0313, 0.0292])
    high, same = bench.report(rounds, args)
    out = capsys.readouterr().out
    assert same and high is not None and 1.0 < high < 1.02
    assert "geometric mean over 3 rounds: 1.0089 (95 % interval" in out
    # the CPU's added half of the wall time's: 0.0015 ms, 0.0015 ms, 0.001 ms over the bare step
    assert "probed - bare as a share of the bare step: +0.44 % (95 % interval" in out
    assert "losses: rank 0's 3 losses identical bit for bit in all 6 runs" in out
    rounds[1]["probed"].losses[2] += 1e-9  # type: ignore[attr-defined]
    _, same = bench.report(rounds, args)
    assert not same
    assert "losses: DIFFER from round 1's bare run in round 2 probed" in capsys.readouterr().out


@pytest.mark.slow  # a benchmark's smoke run: two real torchrun jobs and the work-alone process
def test_one_round_of_the_smallest_job(tmp_path: Path) -> None:
    output, record = tmp_path / "out.txt", tmp_path / "rounds.json"
    argv = [sys.executable, str(SCRIPT), "--rounds", "1", "--world", "1", "--warmup", "2"]
    argv += ["--steps", "4", "--hidden", "16", "--batch", "4", "--json", str(record)]
    argv += ["--work-pairs", "2", "--work-block", "5"]
    proc = start(argv, output, env={"TMPDIR": str(tmp_path), "OMP_NUM_THREADS": "1"})
    try:
        code = proc.wait(timeout=300)
    finally:
        stop(proc, marker=str(tmp_path))
    text = output.read_text(encoding="utf-8", errors="replace")
    assert code == 0, text
    assert re.search(r"; 1-min load average before: \d+\.\d\d$", text, re.M), text
    assert re.search(
        r"^round 1 \((bare, probed|probed, bare)\): median step bare \d+\.\d\d ms, probed "
        r"\d+\.\d\d ms, ratio \d+\.\d{4}; CPU \d+\.\d\d ms, \d+\.\d\d ms$",
        text,
        re.M,
    ), text
    assert "geometric mean over 1 rounds" in text and "verdict: one round: no interval" in text
    assert "losses: rank 0's 6 losses identical bit for bit in all 2 runs" in text
    assert re.search(
        r"^the probe's work alone \(2 pairs of blocks of 5 steps, .*: median step on \d+\.\d us, "
        r"off \d+\.\d us; on - off [+-]\d+\.\d us a step \(95 % interval .* us\); the thread's "
        r"CPU time, median of the pairs: [+-]\d+\.\d us$",
        text,
        re.M,
    ), text
    assert re.search(r"^  its upper bound over the bare median step \(\d+\.\d\d ms\): ", text, re.M)
    (saved,) = json.loads(record.read_text())["rounds"]
    assert saved["bare"]["probe_steps"] is None and saved["probed"]["probe_steps"] == [4]
    assert len(saved["bare"]["step_s"]) == len(saved["probed"]["step_s"]) == 6
    assert len(json.loads(record.read_text())["probe_work"]["pairs"]) == 2
    assert not list(tmp_path.glob("own-job-overhead-*")), "the work directory is removed"
