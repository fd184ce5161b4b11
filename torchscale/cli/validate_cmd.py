"""`torchscale validate`: vet this node for distributed training."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from torchscale.cli.common import Verbosity, handle_errors, stderr, stdout
from torchscale.cli.shared_options import VerbosityFlag

if TYPE_CHECKING:
    from torchscale.validate.check_result import ValidateReport

STATUS_STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "SKIP": "dim"}


class DeviceChoice(str, Enum):
    cuda = "cuda"
    cpu = "cpu"


def render_report(report: ValidateReport) -> None:
    """The report as a rich table, then the verdict."""
    from rich.table import Table

    table = Table(
        title=f"torchscale validate ({report.device}) on {escape(report.hostname)}",
        show_lines=False,
        expand=False,
    )
    table.add_column("Status", no_wrap=True)
    table.add_column("Check", no_wrap=True)
    table.add_column("Detail / how to fix", overflow="fold")
    for check in report.checks:
        status = check.status.value
        if Verbosity.quiet() and status in ("PASS", "SKIP"):
            continue
        cell = escape(check.detail)
        if check.hint:
            cell += f"\n[cyan]fix:[/] {escape(check.hint)}"
        table.add_row(f"[{STATUS_STYLE[status]}]{status}[/]", escape(check.title), cell)
    stdout.print(table)
    counts = ", ".join(f"{n} {s.value}" for s, n in report.counts.items())
    style = "green" if report.ok else "bold red"
    stdout.print(f"[{style}]{escape(report.verdict)}[/]  ({counts})")


@handle_errors
def validate(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a machine-readable JSON report.")
    ] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="Skip the live torchrun smoke test.")
    ] = False,
    device: Annotated[
        DeviceChoice,
        typer.Option("--device", help="Path to validate: cuda (GPU nodes) or cpu (gloo)."),
    ] = DeviceChoice.cuda,
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Where results will go (free-disk check).")
    ] = Path("./results"),
    timeout: Annotated[
        float, typer.Option("--timeout", min=1.0, help="Seconds before the smoke test is killed.")
    ] = 120.0,
    verbose: VerbosityFlag = None,
) -> None:
    """Check if this node meets the requirements for distributed training (exit 1 if not)."""
    from torchscale.validate.check_context import ValidateContext
    from torchscale.validate.run_checks import run_validation

    Verbosity.override(verbose)
    ctx = ValidateContext(
        device=device.value, output_dir=output_dir, quick=quick, smoke_timeout_s=timeout
    )
    if as_json or Verbosity.quiet():
        report = run_validation(ctx)
    else:
        with stderr.status("checking...") as status:
            report = run_validation(ctx, progress=lambda name: status.update(f"checking {name}"))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        render_report(report)
    raise typer.Exit(0 if report.ok else 1)
