"""A ranked problem stores its code and figures; an older result's sentences read as before."""

from __future__ import annotations

from torchscale.contracts.schema.cell_result import Problem

COST = {"value": 0.3, "low": 0.2, "high": 0.4, "n": 10, "method": "bootstrap", "measurable": True}


def test_a_stored_sentence_problem_words_as_before_and_is_marked_stored() -> None:
    old = {
        "title": "Exposed gloo communication",
        "category": "exposed_comm",
        "cost_share": COST,
        "evidence": ["exposed transfer: 30.0 % of the step"],
        "recommendation": "Hide or shrink gradient communication.",
    }
    problem = Problem.model_validate(old)
    assert problem.finding.code == "problem.stored"
    assert problem.title == old["title"]
    assert problem.evidence == old["evidence"]
    assert problem.recommendation == old["recommendation"]
    assert "title" not in problem.model_dump()


def test_a_coded_problem_is_worded_from_its_figures() -> None:
    problem = Problem.model_validate(
        {
            "finding": {"code": "problem.exposed_comm", "figures": {"backend": "NCCL"}},
            "category": "exposed_comm",
            "cost_share": COST,
        }
    )
    assert problem.title == "Exposed NCCL communication"
    assert problem.recommendation.startswith("Hide or shrink gradient communication")
