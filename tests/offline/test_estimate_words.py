"""Schema 20 stores why a figure has no interval (`Estimate.reason`) and why it is null
(`unavailable`) as codes; the reader turns the sentences schema 16-19 stored back into their
codes where today's words say them exactly (offline/results/upgrades/estimate_words.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.contracts.wording.estimates import SAID
from torchscale.offline.analysis.uncertainty import judged, one_unit, percentile_of_steps
from torchscale.offline.results.upgrades.stored_words import upgrade_v19
from torchscale.offline.results.versions import read_cell_result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# one finding per sentence schema 19 stored; today's words for it are those words
STORED_BY_19 = [
    *(Finding(code=code) for code in SAID),
    Finding(code="estimate.one_unit", figures={"unit": "repeat"}),
    Finding(code="estimate.inside_noise", figures={"edge": 0.0}),
    Finding(code="estimate.inside_noise", figures={"above": 1.0}),
    Finding(code="estimate.range_only", figures={"n": 3, "unit": "step"}),
    Finding(code="estimate.wait_not_separable", figures={"world_size": 4}),
    Finding(code="estimate.wait_not_separable", figures={"world_size": None}),
    Finding(
        code="estimate.rest_after",
        figures={"label": "waiting", "reason": {"code": "estimate.not_recorded", "figures": {}}},
    ),
]
UNAVAILABLE_BY_19 = [
    Finding(code="estimate.inside_noise", figures={"edge": 0.0}),  # a null share's copy
    Finding(code="unavailable.probe_failed", figures={"rank": 1, "error": "OSError: disk (x)"}),
    Finding(code="unavailable.probe_no_trace", figures={"notes": []}),
    Finding(
        code="unavailable.schedstat_unreadable",
        figures={"path": "/proc/thread-self/schedstat", "error": "FileNotFoundError: gone"},
    ),
]


NULL = {"value": None, "low": None, "high": None, "n": 0, "method": "m", "measurable": False}


def _read(estimate_reason: str) -> Any:
    estimate = {**NULL, "reason": estimate_reason}
    data = {"schema_version": 19, "warnings": [], "intervals": {"step_p50": estimate}}
    return upgrade_v19(data)["intervals"]["step_p50"]["reason"]


@pytest.mark.parametrize("finding", STORED_BY_19, ids=lambda f: f"{f.code}{f.figures}")
def test_an_estimates_reason_of_schema_19_reads_as_its_code(finding: Finding) -> None:
    assert _read(say(finding)) == finding.model_dump()


@pytest.mark.parametrize("finding", UNAVAILABLE_BY_19, ids=lambda f: f.code)
def test_a_reason_of_unavailable_of_schema_19_reads_as_its_code(finding: Finding) -> None:
    data = {"schema_version": 19, "warnings": [], "unavailable": {"x": say(finding)}}
    assert upgrade_v19(data)["unavailable"] == {"x": finding.model_dump()}


def test_words_today_does_not_say_stay_as_stored() -> None:
    assert _read("one step, give or take") == "one step, give or take"
    assert _read("not measurable above noise: its 95 % interval reaches 0.0") == (
        "not measurable above noise: its 95 % interval reaches 0.0"  # today says '0'
    )


def _stored_reasons(node: Any) -> list[Any]:
    """Every Estimate's stored reason in a result's JSON, at any depth."""
    if isinstance(node, list):
        return [r for item in node for r in _stored_reasons(item)]
    if not isinstance(node, dict):
        return []
    found = [r for value in node.values() for r in _stored_reasons(value)]
    if {"value", "low", "high", "n", "method", "measurable"} <= node.keys():
        found.append(node.get("reason"))
    return found


def test_todays_intervals_store_their_reasons_as_codes() -> None:
    assert one_unit(2.0, "repeat").reason == Finding(
        code="estimate.one_unit", figures={"unit": "repeat"}
    )
    noise = judged(0.01, -0.02, 0.03, n=10, method="m")
    assert noise.reason == Finding(code="estimate.inside_noise", figures={"edge": 0.0})
    assert say(noise.reason) == "not measurable above noise: its 95 % interval reaches 0"
    above = judged(0.9, 0.8, 1.2, n=10, method="m", upper=1.0)
    assert say(above.reason) == "not measurable above noise: its 95 % interval reaches above 1"
    assert say(percentile_of_steps([1.0, 2.0, 3.0], 50).reason) == "range of 3 steps, no interval"


def test_todays_worker_stores_no_sentence_in_an_estimate_or_unavailable() -> None:
    """A two-rank result with phases: every Estimate's reason and every reason of
    `unavailable` a code (the telemetry's, copied, are the telemetry's own: none here)."""
    from tests.rank.test_aggregate import make_rank, make_spec, run

    phases = {"data": 0.0, "forward": 0.004, "backward": 0.004, "optimizer": 0.001}
    steps = [(0.01, 0.011, 0.01, 0.012)] * 2
    ranks = [
        make_rank(0, [1.0, 1.0], steps, flops=1e9, phases={**phases, "grad_sync_wait": 0.001}),
        make_rank(1, [1.0, 1.0], steps, flops=1e9, phases={**phases, "grad_sync_wait": 0.0}),
    ]
    result = run(ranks, make_spec(world=2))
    reasons = [r for r in _stored_reasons(result.model_dump(mode="json")) if r is not None]
    assert reasons and all(not isinstance(r, str) for r in reasons), reasons
    words = {k: v for k, v in result.unavailable.items() if isinstance(v, str)}
    assert not words


@pytest.mark.parametrize(
    "path",
    sorted(FIXTURES.glob("results_v*/*.json")) + sorted(FIXTURES.glob("tp_profiled_v7/*.json")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_a_kept_result_read_today_gives_its_figures_reasons_as_codes(path: Path) -> None:
    """The point figures and intervals the reader derives for an older result are today's
    writers too: their reasons are codes, never a sentence."""
    read = read_cell_result(path)
    if read.result is None:
        pytest.skip(f"not a cell result: {read.problem}")
    reasons = [r for r in _stored_reasons(read.result.model_dump(mode="json")) if r is not None]
    assert reasons  # the result has figures without an interval to say why of
    assert all(not isinstance(r, str) for r in reasons), [r for r in reasons if isinstance(r, str)]
