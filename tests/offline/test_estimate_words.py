"""Why a figure has no interval (`Estimate.reason`) and why it is null (`unavailable`) are
stored as codes, worded when shown: today's writers store no sentence there."""

from __future__ import annotations

from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.offline.analysis.uncertainty import judged, one_unit, percentile_of_steps


def _stored_reasons(node: Any) -> list[Any]:
    """Every Estimate's stored reason in a result's JSON, at any depth."""
    if isinstance(node, list):
        return [r for item in node for r in _stored_reasons(item)]
    if not isinstance(node, dict):
        return []
    found = [r for value in node.values() for r in _stored_reasons(value)]
    if {"value", "low", "high", "n", "measurable"} <= node.keys():
        found.append(node.get("reason"))
    return found


def test_todays_intervals_store_their_reasons_as_codes() -> None:
    assert one_unit(2.0, "repeat").reason == Finding(
        code="estimate.one_unit", figures={"unit": "repeat"}
    )
    noise = judged(0.01, -0.02, 0.03, n=10)
    assert noise.reason == Finding(code="estimate.inside_noise", figures={"edge": 0.0})
    assert say(noise.reason) == "not measurable above noise: its 95 % interval reaches 0"
    above = judged(0.9, 0.8, 1.2, n=10, upper=1.0)
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
