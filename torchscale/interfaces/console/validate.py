"""What `torchscale validate` prints: the verdict, the checks that need a look, the measured
figures (-v), each worded from the report's findings at render time (contracts/wording)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from torchscale.contracts.wording import say
from torchscale.contracts.wording.spell import pct_whole, readable_unit
from torchscale.contracts.wording.validate_measured import detail, hint
from torchscale.interfaces.console.lines import Level, Line
from torchscale.interfaces.console.streams import Verbosity, print_lines, stdout

if TYPE_CHECKING:
    from torchscale.contracts.schema.validate_report import CheckResult, ValidateReport

# a check status' rich style
STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "SKIP": "dim", "INFO": "cyan"}


def render_measurements(report: ValidateReport) -> None:
    """Each perf/burn figure per GPU beside its expected value (verbose only: the check table
    above sums them up per check)."""
    from rich.table import Table

    table = Table(title="Measured")
    for name in ("Status", "Check", "Where", "Measured", "Expected", "Ratio"):
        table.add_column(name, no_wrap=True)
    for row in report.measurements:
        unit = "GPU" if report.device == "cuda" else "rank"
        where = "node" if row.gpu is None else f"{unit} {row.gpu}"
        value, expected = readable_unit(row.value, row.unit), readable_unit(row.expected, row.unit)
        style = STYLE[row.status.value]
        table.add_row(
            f"[{style}]{row.status.value}[/]",
            escape(row.title),
            where,
            value,
            expected,
            pct_whole(row.ratio),
        )
    stdout.print(table)


def render_report(report: ValidateReport) -> None:
    """The verdict first, then the checks that need a look (FAIL, WARN, INFO) as a table, and
    the passed and skipped ones in a line each; -v shows every
    check's row, --quiet only the rows that need a look."""
    from rich.table import Table

    counts = ", ".join(f"{n} {s.value}" for s, n in report.counts.items())
    level: Level = "head" if report.ok else "fail"
    verdict = say(report.verdict_basis)
    print_lines(stdout, [Line(level, f"{verdict}  ({counts})")])
    everything = Verbosity.level > 0
    shown = [c for c in report.checks if everything or c.status.value not in ("PASS", "SKIP")]
    if shown:
        table = Table(title=f"torchscale validate ({report.device}) on {escape(report.hostname)}")
        table.add_column("Status", no_wrap=True)
        table.add_column("Check", no_wrap=True)
        table.add_column("Detail / how to fix", overflow="fold")
        for check in shown:
            status = check.status.value
            cell = escape(check_words(check, everything))
            if hint(check):
                cell += f"\n[cyan]fix:[/] {escape(hint(check))}"
            table.add_row(f"[{STYLE[status]}]{status}[/]", escape(check.title), cell)
        stdout.print(table)
    if not everything and not Verbosity.quiet():
        print_lines(stdout, _summed_up(report))


def check_words(check: CheckResult, verbose: bool) -> str:
    """A check's detail: its findings in today's words where it has them (an old report reads
    by them too), its stored detail otherwise; -v adds the serial and UUID of every GPU a
    finding names, what an RMA asks for."""
    return "\n".join([detail(check)] + (named_gpus(check) if verbose and check.findings else []))


def named_gpus(check: CheckResult) -> list[str]:
    """'GPU 3: serial 1650..., UUID GPU-...' for each GPU the check's findings name."""
    named: dict[int, tuple[str, str]] = {}
    for finding in check.findings:
        figures = finding.figures
        if "uuid" in figures:
            named[figures["gpu"]] = (figures.get("serial") or "?", figures["uuid"] or "?")
        gpus = figures.get("gpus", [])
        for gpu, uuid, serial in zip(
            gpus, figures.get("uuids", []), figures.get("serials", []), strict=False
        ):
            named[gpu] = (serial or "?", uuid or "?")
    return [
        f"GPU {gpu}: serial {serial}, UUID {uuid}" for gpu, (serial, uuid) in sorted(named.items())
    ]


def _summed_up(report: ValidateReport) -> list[Line]:
    """'passed (9): Python, PyTorch, ...' and 'skipped (12): CUDA, GPUs, ...': what needs no
    look, in a line each (-v gives each its row and reason)."""
    lines = []
    for status, word in (("PASS", "passed"), ("SKIP", "skipped")):
        titles = [c.title for c in report.checks if c.status.value == status]
        if titles:
            text = f"{word} ({len(titles)}): " + ", ".join(titles)
            lines.append(Line("info" if status == "PASS" else "skip", text))
    lines.append(
        Line("skip", "-v: every check with its detail or reason; --json: the whole report")
    )
    return lines


NOTHING_KEPT = "nothing had finished: nothing was kept"


def _grouped(titles: list[str]) -> str:
    """'matmul fp32, bf16, memory copy': a kind's name once, before its first phase."""
    out: list[str] = []
    last = ""
    for title in titles:
        kind, _, what = title.partition(" ")
        out.append(what if kind == last and what else title)
        last = kind
    return ", ".join(out)


def perf_kept(phases: list[str], folder: Path | None, report: Path | None) -> str:
    """What a stopped perf or burn level kept, for the stop line."""
    if not phases:
        return NOTHING_KEPT
    where = f" in {folder / 'phases'}" if folder is not None else ""
    text = f"kept: {_grouped(phases)}{where}"
    return text + (f"; their report: {report}" if report is not None else "")


def workload_kept(finished: list[str], folder: Path, summary: str) -> str:
    """What a stopped workload level kept, for the stop line (`summary`: the file that says
    where it stopped)."""
    if not finished:
        return f"nothing had finished; {folder / summary} says where it stopped"
    return f"kept: {', '.join(finished)} in {folder} ({summary} says where it stopped)"
