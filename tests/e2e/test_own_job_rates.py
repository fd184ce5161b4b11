"""benchmarks/own_job_rates.py (how often a user's own job's straggler is named right,
and a balanced one names nobody, as rates over runs): its scenarios and its tally. The runs
themselves are the benchmark's (a launch each, a rate over several: never a per-run assert)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.processes import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # as `python benchmarks/own_job_rates.py` has it
    try:
        spec = importlib.util.spec_from_file_location(
            "own_job_rates", BENCHMARKS / "own_job_rates.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault("own_job_rates", module)  # its dataclass looks itself up
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_every_scenario_runs_a_script_past_its_stop_and_held_out_ones_know_nothing_of_us(
    bench: ModuleType,
) -> None:
    labels = [s.label for s in bench.SCENARIOS]
    assert len(set(labels)) == len(labels)
    for scenario in bench.SCENARIOS:
        assert scenario.script.is_file(), scenario.script
        assert scenario.script.name in bench.LENGTH  # the job outlasts W + N
        if scenario.held_out:
            assert "torchscale" not in scenario.script.read_text()  # written as a user would
    kinds = {s.expected[1] for s in bench.SCENARIOS if s.held_out and s.expected}
    assert kinds == {"compute", "input"}
    assert any(s.held_out and s.expected is None for s in bench.SCENARIOS)  # balanced, held out


def test_the_tally_counts_the_expected_outcome_and_says_what_else_was_named(
    bench: ModuleType,
) -> None:
    slow = next(s for s in bench.SCENARIOS if s.expected == (1, "input", None))
    outcomes = [
        (1, "input", None, "data", None),
        (1, "input", 3, "data", None),
        None,
        (0, "host", None, None, None),
    ]
    line = bench.summary(slow, outcomes)
    assert "rank 1, input" in line and "2/4 [" in line  # any pattern will do
    assert line.endswith("otherwise: (0, 'host', None, None, None), None")
    # work every Nth step: its rank, kind and period, or not right; where in the step, of those
    periodic = next(s for s in bench.SCENARIOS if s.expected == (0, "compute", 4))
    outcomes = [
        (0, "compute", 4, "loop", None),
        (0, "compute", None, "loop", None),
        (0, "compute", 8, "forward", None),
    ]
    line = bench.summary(periodic, outcomes)
    assert "rank 0, compute, every 4th" in line and "1/3 [" in line and "in loop 1/1 [" in line
    # more work: how often the calibration read it so, of the runs that named it
    more = next(s for s in bench.SCENARIOS if s.device == "straggler.more_work")
    outcomes = [
        (1, "compute", None, "forward", "straggler.more_work"),
        (1, "compute", None, "backward", "x"),
        None,
    ]
    line = bench.summary(more, outcomes)
    assert "2/3 [" in line and "read as straggler.more_work 1/2 [" in line
    balanced = next(s for s in bench.SCENARIOS if s.expected is None)
    line = bench.summary(balanced, [None, None, "no straggler verdict"])
    assert "nobody named" in line and "2/3 [" in line and "no straggler verdict" in line
