"""A profile's findings get the advice that applies to its run, as a sweep's do: an injected
straggler (the run's own --inject-delay) is said to be artificial, with no advice to check the
host, and one host gets no socket-interface advice. The fixture is a real 2-rank CPU profile
with `--inject-delay 1:backward:50` (result schema 14)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate, Problem
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.model import Findings, Report, ReportFinding
from torchscale.interfaces.report.parts.findings import INJECTED_ADVICE, diagnosis_finding
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources

FIXTURE = Path(__file__).parents[1] / "fixtures" / "cpu_profile_injected"
HOST_WORDS = ("host of rank", "taskset", "OMP_NUM_THREADS", "frequency scaling")


def findings(report: Report) -> list[ReportFinding]:
    blocks = [b for s in report.sections for b in s.blocks if isinstance(b, Findings)]
    return [f for b in blocks for f in b.findings]


def build(source: Path) -> Report:
    return build_report(read_sources(source), ReportOptions(generated_at="2026-01-01T00:00:00Z"))


def test_an_injected_straggler_is_artificial_and_advises_nothing_about_the_host() -> None:
    found = findings(build(FIXTURE))
    straggler = [f for f in found if "injected" in f.title]
    assert straggler, [f.title for f in found]
    for finding in straggler:
        assert finding.recommendation == INJECTED_ADVICE
        assert finding.evidence[0].startswith("artificial: --inject-delay made rank 1")
        assert finding.severity == "info"
    every = " ".join(f.recommendation or "" for f in found)
    assert not any(word in every for word in HOST_WORDS), every


def test_a_profile_on_one_host_gets_no_socket_interface_advice(tmp_path: Path) -> None:
    source = tmp_path / "profile"
    shutil.copytree(FIXTURE, source)
    (analysis_path,) = source.glob("*/profile/*/analysis.json")
    analysis = json.loads(analysis_path.read_text(encoding="utf-8"))
    analysis["target"] = "comm"  # which reports exposed communication
    findings_ = analysis["diagnosis"]["findings"]  # the one copy (schema 10)
    for n, item in enumerate(findings_):
        if item["category"] == "straggler":  # a coded exposed-communication problem instead
            figures = {"backend": "gloo", "gloo": True, "nodes": None}  # hosts not known
            findings_[n] = {
                "finding": {"code": "problem.exposed_comm", "figures": figures},
                "category": "exposed_comm",
                "cost_share": item["cost_share"],
            }
    analysis_path.write_text(json.dumps(analysis), encoding="utf-8")
    found = [f for f in findings(build(source)) if f.title == "Exposed gloo communication"]
    assert found
    for finding in found:  # the run says one host: the words are chosen so
        assert "SOCKET_IFNAME" not in (finding.recommendation or "")
        assert "bucket_cap_mb" in (finding.recommendation or "")


def test_the_verdict_alone_marks_a_straggler_injected() -> None:
    """The verdict says it (`StragglerVerdict.injected`), with or without the delays' record."""
    cost = Estimate(value=0.4, low=None, high=None, n=1, measurable=True)
    slower = {"device": "cpu", "rank": 1, "kind": "compute", "phase": "backward"}
    item = Problem(
        finding=Finding(code="problem.straggler", figures=slower),
        category="straggler",
        cost_share=cost,
    )
    plain = diagnosis_finding(item, source="run", caveat=None)
    assert plain.recommendation.startswith("Check the host of rank 1: CPU frequency scaling")
    assert plain.recommendation == item.recommendation and "injected" not in plain.title
    marked = diagnosis_finding(item, source="run", caveat=None, verdict_injected=True)
    assert marked.recommendation == INJECTED_ADVICE
    assert marked.title.endswith("(injected delay)") and marked.evidence[0].startswith("artificial")
