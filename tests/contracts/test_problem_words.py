"""A ranked problem stores its code and figures, worded when shown: a sentence in its place is
refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from torchscale.contracts.schema.diagnosis import Problem

COST = {"value": 0.3, "low": 0.2, "high": 0.4, "n": 10, "measurable": True}


def test_a_problem_stored_as_sentences_is_refused() -> None:
    old = {
        "title": "Exposed gloo communication",
        "category": "exposed_comm",
        "cost_share": COST,
        "evidence": ["exposed transfer: 30.0 % of the step"],
        "recommendation": "Hide or shrink gradient communication.",
    }
    with pytest.raises(ValidationError):
        Problem.model_validate(old)


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
