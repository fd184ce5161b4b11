"""Plain words: a finding appears once however many cells share it, advice only where it applies
(no socket-interface advice on one host, no DistributedSampler advice for synthetic data), the
technical terms explained in a last glossary section, and a title that names what was run."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import diagnosis_problems
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.model import Report, Table, Text
from torchscale.interfaces.report.parts.context import make_context
from torchscale.interfaces.report.parts.findings import collect_findings
from torchscale.interfaces.report.parts.words import GLOSSARY
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sections.summary import grouped_findings
from torchscale.interfaces.report.sources import read_sources

FIXTURES = Path(__file__).parents[1] / "fixtures"
SWEEP = FIXTURES / "cpu_busy_sweep" / "busy"
ADVICE = (
    "Hide or shrink gradient communication: DDP bucket_cap_mb, a bf16/fp16 compression comm "
    "hook; set GLOO_SOCKET_IFNAME to the fast interface. Give every rank the same work per "
    "step: equal batch sizes (DistributedSampler with drop_last=True), sequences bucketed."
)


@pytest.fixture(scope="module")
def report() -> Report:
    return build_report(read_sources(SWEEP), ReportOptions(generated_at="2026-11-22T12:00:00Z"))


def _problem(code: str, **figures: object) -> Finding:
    return Finding(code=code, figures=figures)


def test_advice_that_does_not_apply_is_never_said() -> None:
    """The words are chosen from the code and the run's facts, never cut out of stored words."""
    comm = _problem("problem.exposed_comm", backend="gloo", gloo=True, nodes=None)
    turns = _problem("problem.imbalance.turns", device="cpu")
    one_host = diagnosis_problems.Run(single_node=True, synthetic=True)
    for advice in (
        diagnosis_problems.recommendation(comm, one_host),
        diagnosis_problems.recommendation(turns, one_host),
    ):
        assert "SOCKET_IFNAME" not in advice and "DistributedSampler" not in advice
    assert "equal batch sizes, sequences bucketed" in diagnosis_problems.recommendation(
        turns, one_host
    )
    across = diagnosis_problems.Run(single_node=False, synthetic=False)
    assert "GLOO_SOCKET_IFNAME" in diagnosis_problems.recommendation(comm, across)
    assert "DistributedSampler with drop_last=True" in diagnosis_problems.recommendation(
        turns, across
    )


def test_a_finding_appears_once_with_its_count(report: Report) -> None:
    ctx = make_context(read_sources(SWEEP), ReportOptions(), None)
    findings = collect_findings(ctx)
    grouped = grouped_findings(ctx, findings)
    titles = [f.title for f, _ in grouped]
    assert len(titles) == len(set(titles))
    assert sum(count for _, count in grouped) == len(findings)
    summary = report.sections[0]
    lines = [b.text for b in summary.blocks if isinstance(b, Text) and "of the step:" in b.text]
    heads = [line.split(" (")[0].split(": ", 1)[1] for line in lines]
    assert len(heads) == len(set(heads)), lines
    assert len(grouped) < len(findings)  # the fixture's 4 cells share one finding
    assert any("(in 4 cells; the largest: " in line for line in lines), lines


def test_the_glossary_is_last_and_explains_the_terms_used(report: Report) -> None:
    last = report.sections[-1]
    assert last.id == "glossary"
    table = last.blocks[0]
    assert isinstance(table, Table)
    terms = [row["term"] for row in table.rows]
    assert "CV" in terms and all(GLOSSARY[t] for t in terms)
    assert len(terms) == len(set(terms))


def test_the_title_names_the_experiment(report: Report) -> None:
    assert report.title == "torchscale report: default_scaling"
    assert "standalone" not in report.title
