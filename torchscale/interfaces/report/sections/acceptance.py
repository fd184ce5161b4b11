"""Node acceptance: the `validate --level perf|burn` reports of an experiment's nodes as a node
x check matrix (each cell its figure and verdict word, so it reads without colour), the rows that
are not a PASS with their evidence, and the fleet's outliers (analysis/fleet.py) from 3 nodes."""

from __future__ import annotations

from collections.abc import Sequence

from torchscale.contracts.wording import say
from torchscale.contracts.wording.spell import three_digits
from torchscale.contracts.wording.validate_measured import detail
from torchscale.interfaces.report.model import Block, Column, Section, Severity, Table, Text
from torchscale.interfaces.report.parts.context import Context, present
from torchscale.orchestration.validate.check_result import CheckStatus, Measurement, ValidateReport
from torchscale.orchestration.validate.fleet_table import fleet_summary

SEVERITY: dict[CheckStatus, Severity] = {
    CheckStatus.FAIL: "bad",
    CheckStatus.WARN: "warn",
    CheckStatus.PASS: "good",
    CheckStatus.INFO: "info",
    CheckStatus.SKIP: "info",
}
ORDER = (CheckStatus.FAIL, CheckStatus.WARN, CheckStatus.PASS, CheckStatus.INFO, CheckStatus.SKIP)
# the matrix's columns in this order, then any other check
CHECK_ORDER = (
    *("matmul.fp32", "matmul.tf32", "matmul.bf16", "matmul.fp16", "matmul.fp8"),
    *("memory.copy", "memory.triad", "h2d", "d2h", "h2d.all", "d2h.all", "p2p.bw", "p2p.latency"),
    *("busbw.all_reduce", "busbw.all_gather", "busbw.reduce_scatter", "busbw.all_to_all"),
    *("burn.tflops", "burn.copy", "burn.fingerprint"),
)


def _reports(ctx: Context) -> list[ValidateReport]:
    """The newest report per host and level over the reported experiments."""
    newest: dict[tuple[str, str], ValidateReport] = {}
    for source in ctx.sources.experiments:
        for report in source.acceptance:
            key = (report.hostname, report.level)
            if key not in newest or report.created_at > newest[key].created_at:
                newest[key] = report
    return sorted(newest.values(), key=lambda r: (r.hostname, r.level))


def _worst(rows: Sequence[Measurement]) -> Measurement:
    return min(rows, key=lambda r: ORDER.index(r.status))


def _cell(rows: Sequence[Measurement]) -> str:
    """The figure and its verdict; several rows (a GPU's pairs): the worst one, said so."""
    row = _worst(rows)
    if row.value is None:
        return "n/a" if row.status is CheckStatus.SKIP else row.status.value
    text = three_digits(row.value, row.status.value)
    return text + (f" (worst of {len(rows)})" if len(rows) > 1 else "")


def _where(report: ValidateReport, gpu: int | None) -> str:
    if gpu is None:
        return report.hostname
    unit = "GPU" if report.device == "cuda" else "rank"
    return f"{report.hostname} {unit} {gpu}"


def _matrix(reports: Sequence[ValidateReport]) -> Table:
    found = {m.check for r in reports for m in r.measurements}
    checks = [c for c in CHECK_ORDER if c in found] + sorted(found - set(CHECK_ORDER))
    units = {m.check: m.unit for r in reports for m in r.measurements}
    rows = []
    for report in reports:
        places = sorted({m.gpu for m in report.measurements}, key=lambda g: -1 if g is None else g)
        for gpu in places:
            mine = [m for m in report.measurements if m.gpu == gpu]
            row: dict[str, object] = {"node": _where(report, gpu), "level": report.level}
            for check in checks:
                cells = [m for m in mine if m.check == check]
                if cells:
                    row[check] = _cell(cells)
            row["_severity"] = SEVERITY[_worst(mine).status]
            rows.append(row)
    columns = [Column(key="node", label="Node", align="left"), Column(key="level", label="Level")]
    columns += [Column(key=c, label=f"{c} ({units[c]})" if units.get(c) else c) for c in checks]
    return Table(
        id="acceptance-matrix",
        title="Node acceptance: each figure and its verdict",
        columns=columns,
        rows=rows,
        note="a figure against the expected value for the node's SKU (its source below); "
        "INFO: measured, with no reference to judge it by (an unknown SKU, a CPU); a node-level "
        "figure (busbw, a CPU's) is on the node's own row",
    )


def _findings(reports: Sequence[ValidateReport]) -> Table | None:
    rows = [
        {
            "node": _where(report, m.gpu),
            "check": m.title,
            "verdict": m.status.value,
            "measured": None if m.value is None else three_digits(m.value, m.unit),
            "expected": None if m.expected is None else three_digits(m.expected, m.unit),
            "evidence": detail(m),
            "_severity": SEVERITY[m.status],
        }
        for report in reports
        for m in report.measurements
        if m.status in (CheckStatus.FAIL, CheckStatus.WARN)
    ]
    if not rows:
        return None
    return Table(
        id="acceptance-findings",
        title="What did not pass, with its evidence",
        columns=[
            Column(key="node", label="Node", align="left"),
            Column(key="check", label="Check", align="left"),
            Column(key="verdict", label="Verdict", align="left"),
            Column(key="measured", label="Measured"),
            Column(key="expected", label="Expected"),
            Column(key="evidence", label="Evidence", align="left"),
        ],
        rows=rows,
        note="docs/validate.md, 'How to read a FAIL', says what to check for each",
    )


def _basic_lines(reports: Sequence[ValidateReport]) -> list[Block]:
    """Nodes with no measured figures (basic reports): their verdict alone."""
    return [
        Text(
            text=f"{r.hostname} ({r.level}): {say(r.verdict_basis)}",
            severity="good" if r.ok else "bad",
        )
        for r in reports
        if not r.measurements
    ]


def _sources(reports: Sequence[ValidateReport]) -> Text | None:
    cited = sorted(
        {m.expected_source for r in reports for m in r.measurements if m.expected_source}
    )
    if not cited:
        return None
    return Text(text="Expected values from: " + "; ".join(cited))


def build(ctx: Context) -> Section | None:
    """The section, or None when no experiment holds a validate report."""
    reports = _reports(ctx)
    if not reports:
        return None
    blocks: list[Block] = []
    measured = [r for r in reports if r.measurements]
    if measured:
        blocks.append(_matrix(measured))
        blocks += present(_findings(measured))
        outliers, line = fleet_summary(measured)
        blocks.append(
            Text(text="Fleet view: " + line, severity="warn" if len(outliers) else "info")
        )
        blocks += present(_sources(measured))
    blocks += _basic_lines(reports)
    return Section(id="acceptance", title="Node acceptance", blocks=blocks)
