"""`torchscale report`'s acceptance section, from the validate reports of an experiment: the
node x check matrix, what did not pass with its evidence, the fleet's outlier named, an old
(schema 1) report read, an unreadable one skipped with its reason, a hostile hostname escaped,
and the HTML and terminal renderings holding the matrix. (Markdown is the summary for a pull
request comment: it points at the full report, as for every section.)"""

from __future__ import annotations

import shutil
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.interfaces.api.report_generate import renderer
from torchscale.interfaces.console.report_term import render as render_term
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Report, Table, Text
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.orchestration.validate.check_result import CheckStatus, Measurement, ValidateReport

FIXTURES = Path(__file__).parents[1] / "fixtures"


FINE = Finding(code="perf.pass", figures={"ratio": 1.0, "expected": 792.0})
LOW = Finding(
    code="perf.fail",
    figures={"ratio": 0.757, "expected": 792.0, "pass_at": 0.9, "fail_below": 0.8},
)


def _node(
    host: str, bf16: float, status: CheckStatus = CheckStatus.PASS, finding: Finding = FINE
) -> str:
    rows = [
        Measurement(check="matmul.bf16", title="matmul bf16", gpu=g, value=bf16 - g,
                    unit="TFLOP/s", expected=792.0, expected_source="https://example.org/mamf",
                    ratio=(bf16 - g) / 792.0, status=status if g == 1 else CheckStatus.PASS,
                    finding=finding if g == 1 else FINE)
        for g in range(2)
    ] + [
        Measurement(check="busbw.all_reduce", title="busbw all_reduce", gpu=None, value=380.0,
                    unit="GB/s", status=CheckStatus.PASS, finding=FINE)
    ]  # fmt: skip
    report = ValidateReport(
        torchscale_version="0.10.0", created_at="2026-11-23T10:00:00+00:00", hostname=host,
        device="cuda", quick=False, ok=status is not CheckStatus.FAIL, counts={},
        verdict_basis=Finding(code="validate.ready", figures={"quick": False, "path": "GPU"}),
        checks=[], level="perf", sku="H100 SXM", measurements=rows,
    )  # fmt: skip
    return report.model_dump_json(indent=2)


def _experiment(tmp_path: Path) -> Path:
    root = tmp_path / "fleet"
    layout = ResultLayout(root)
    layout.acceptance_dir.mkdir(parents=True)
    for k in range(4):
        layout.acceptance_path(f"node{k}", "perf").write_text(_node(f"node{k}", 790.0))
    layout.acceptance_path("node4", "perf").write_text(_node("node4", 600.0, CheckStatus.FAIL, LOW))
    shutil.copy(FIXTURES / "validate_basic" / "node-a.json", layout.acceptance_path("old", "basic"))
    layout.acceptance_path("torn", "perf").write_text("{not json")
    return root


def _report(tmp_path: Path) -> Report:
    _experiment(tmp_path)
    return build_report(read_sources(tmp_path), ReportOptions(generated_at="2026-01-01T00:00:00Z"))


def test_the_matrix_has_every_node_and_gpu_and_what_failed_has_its_evidence(
    tmp_path: Path,
) -> None:
    report = _report(tmp_path)
    (section,) = [s for s in report.sections if s.id == "acceptance"]
    tables = {b.id: b for b in section.blocks if isinstance(b, Table)}
    matrix = tables["acceptance-matrix"]
    nodes = [row["node"] for row in matrix.rows]
    assert nodes[:3] == ["node0", "node0 GPU 0", "node0 GPU 1"]  # the node's own figures first
    assert "node4 GPU 1" in nodes and len(nodes) == 15
    node4 = next(row for row in matrix.rows if row["node"] == "node4 GPU 1")
    assert node4["matmul.bf16"] == "599 FAIL" and node4["_severity"] == "bad"
    [finding] = tables["acceptance-findings"].rows
    assert finding["node"] == "node4 GPU 1"
    assert finding["evidence"].startswith("76 % of the spec-sheet 792 (PASS from 90 %")
    texts = [b.text for b in section.blocks if isinstance(b, Text)]
    fleet = next(t for t in texts if t.startswith("Fleet view: "))
    assert "among 5 nodes" in fleet and "node4" in fleet
    assert not any("node0" in t for t in texts if t.startswith("Fleet view"))
    assert any("https://example.org/mamf" in t for t in texts)
    assert any(t.startswith("vm (basic): This node is ready") for t in texts)  # schema 1
    assert any("torn.perf.json" in s.path and "not valid JSON" in s.reason for s in report.skipped)


def test_only_validate_reports_make_an_experiment_and_none_make_no_section(
    tmp_path: Path,
) -> None:
    layout = ResultLayout(tmp_path / "x")
    layout.acceptance_dir.mkdir(parents=True)
    layout.acceptance_path("n", "perf").write_text(_node("n", 790.0))
    sections = build_report(read_sources(tmp_path), ReportOptions()).sections
    assert [s.id for s in sections if s.id == "acceptance"] == ["acceptance"]
    fixture = FIXTURES / "cpu_sweep_profile"
    plain = build_report(read_sources(fixture), ReportOptions()).sections
    assert not any(s.id == "acceptance" for s in plain)


def test_html_escapes_a_hostile_hostname_and_markdown_and_term_hold_the_matrix(
    tmp_path: Path,
) -> None:
    root = _experiment(tmp_path)
    ResultLayout(root).acceptance_path("evil", "perf").write_text(
        _node("<script>alert(1)</script>", 790.0)
    )
    report = build_report(read_sources(tmp_path), ReportOptions())
    html = renderer("html")(report).decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "599 FAIL" in html
    term = render_term(report, full=True).decode()
    assert "599 FAIL" in term
    assert max(len(line) for line in term.splitlines()) <= 100  # a file's width
