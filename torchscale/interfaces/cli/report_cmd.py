"""`torchscale report` (also spelled `torchscale report generate`, as in the published docs):
render a results directory as HTML, PDF, Markdown, JSON or terminal text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape

from torchscale.contracts.errors import EXIT_NOT_JUDGED, EXIT_REGRESSION
from torchscale.contracts.wording.spell import seconds, size_bytes
from torchscale.interfaces.cli.common import handle_errors
from torchscale.interfaces.cli.shared_options import VerbosityFlag
from torchscale.interfaces.console.streams import Verbosity, stderr, stdout

if TYPE_CHECKING:
    from torchscale.interfaces.api import ReportRun

Format = Literal["html", "pdf", "md", "json", "term"]

app = typer.Typer(
    help="Turn results into a report: HTML, PDF, Markdown, JSON or terminal "
    "(`torchscale report generate ...` is the same command).",
    no_args_is_help=False,
    invoke_without_command=True,
)

SourceOption = Annotated[
    Path,
    typer.Option(
        "--source",
        "-s",
        help="A results directory: one experiment, or a folder of several (one each).",
    ),
]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Output file (with a suffix: scaling.pdf), or a directory to write "
        "<experiment>_report.<ext> into (one that exists or a name without a suffix, created; "
        "default: the source directory; term: print only).",
    ),
]
BaselineOption = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="Results to compare against: matched cells, changes, and a verdict per cell by "
        "a stated rule (docs/regressions.md).",
    ),
]
FailOption = Annotated[
    bool,
    typer.Option(
        "--fail-on-regression",
        help=f"For CI: exit {EXIT_REGRESSION} when a cell is a regression by the rule or newly "
        f"fails; exit {EXIT_NOT_JUDGED} when nothing could be judged (no matched cell had "
        "enough repeats or a comparable load, or none matched); some cells not judged and no "
        "regression: exit 0 with a warning.",
    ),
]
CostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--cost-per-gpu-hour",
        metavar="[EXPERIMENT=]PRICE",
        help="Price of one GPU-hour: cost per million samples and tokens. PRICE for every "
        "result set, or EXPERIMENT=PRICE (repeat it) to compare machines at their own prices; "
        "default: the config's cost.per_gpu_hour stored with the results.",
        show_default=False,
    ),
]
TitleOption = Annotated[str | None, typer.Option("--title", help="Report title.")]
FullOption = Annotated[
    bool,
    typer.Option(
        "--full",
        help="Every section, table and chart. Without it, the decision and what carries it: "
        "-f term a summary of at most 60 lines, -f md a pull-request comment, -f pdf and "
        "-f json the short report (summary, scaling, failures, baseline; a profile's "
        "diagnosis). The HTML holds every section either way, without it each table's first "
        "rows and the costliest findings.",
    ),
]
InteractiveOption = Annotated[
    bool,
    typer.Option(
        "--interactive",
        help="-f html: charts drawn by plotly (zoom, a value per point on hover; plotly.js "
        "inlined, about 5 MB) instead of the PDF's SVG charts (hover a series for its values).",
    ),
]
HtmlLinkOption = Annotated[
    str | None,
    typer.Option(
        "--html-link",
        metavar="URL",
        help="Where the HTML report is published (URL or path): the Markdown report links to "
        "it (default: an HTML report found beside the Markdown).",
        show_default=False,
    ),
]


def _report(
    ctx: typer.Context,
    source: SourceOption = Path("./results"),
    fmt: FormatOption = "html",
    output: OutputOption = None,
    baseline: BaselineOption = None,
    fail_on_regression: FailOption = False,
    cost_per_gpu_hour: CostOption = None,
    title: TitleOption = None,
    html_link: HtmlLinkOption = None,
    full: FullOption = False,
    interactive: InteractiveOption = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Turn results into a report a stakeholder reads and an engineer acts on."""
    from torchscale.interfaces.api import build_report
    from torchscale.interfaces.api.report_generate import parse_prices
    from torchscale.interfaces.console.report_progress import ReportProgress
    from torchscale.interfaces.console.report_recap import summary_lines

    if ctx.invoked_subcommand is not None:  # `report generate`: that call does it
        return
    Verbosity.override(verbose)
    everyone, per_experiment = parse_prices(cost_per_gpu_hour or [])
    progress = ReportProgress(lines=fmt in ("pdf", "html"))
    try:
        run = build_report(
            source,
            fmt,
            output=output,
            baseline=baseline,
            cost_per_gpu_hour=everyone,
            prices=per_experiment,
            title=title,
            fail_on_regression=fail_on_regression,
            html_link=html_link,
            # printed: the terminal's width; a file is read elsewhere: COLUMNS when set, else
            # the renderer's 100 columns
            width=stdout.width if output is None or os.environ.get("COLUMNS") else None,
            full=full,
            interactive=interactive,
            on_step=progress.step,
        )
    finally:
        progress.stop()
    outcome, report = run.outcome, run.report
    if fmt == "term" and output is None:
        stdout.out(outcome.content.decode("utf-8").rstrip("\n"), highlight=False)
    elif not Verbosity.quiet():
        for line in summary_lines(report):
            stdout.print(escape(line))
    for skipped in report.skipped:
        stderr.print(f"[yellow]not read:[/] {escape(skipped.path)}: {escape(skipped.reason)}")
    if outcome.path is not None:
        stdout.print(
            f"[bold]report:[/] {escape(str(outcome.path))} "
            f"({size_bytes(len(outcome.content))}; built in {seconds(outcome.build_s)}, "
            f"rendered in {seconds(outcome.render_s)})"
        )
    _gate(run)
    raise typer.Exit(run.exit_code)


def _gate(run: ReportRun) -> None:
    """The baseline's outcome on stderr: the regressions, what could not be judged, and the
    largest changes (judged or not) with their intervals."""
    gate = run.gate
    if gate is None:
        return
    if gate.warning is not None:
        stderr.print(f"[yellow]warning:[/] {escape(gate.warning)}")
    elif gate.matched == 0:
        stderr.print("[yellow]warning:[/] no cell matches the baseline: nothing was compared")
    for line in gate.changes:
        stderr.print(f"  {escape(line)}", highlight=False)
    if run.report.regressions:
        stderr.print(f"[bold red]{run.report.regressions} regression(s)[/] against the baseline")
    elif run.exit_code == EXIT_NOT_JUDGED:
        stderr.print(
            f"[bold yellow]nothing judged against the baseline[/]: --fail-on-regression exits "
            f"{EXIT_NOT_JUDGED} (neither a pass nor a regression; docs/regressions.md)"
        )


# one command under two names: `torchscale report` and `torchscale report generate`
report = app.callback(invoke_without_command=True)(handle_errors(_report))
generate_command = app.command(
    "generate", help="The same as `torchscale report` (the spelling of the published docs)."
)(handle_errors(_report))
