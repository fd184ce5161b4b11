"""`build_report`: what `torchscale report` does, in one call: read a results directory (and
a baseline), build the report, render one format, write it atomically, and say what a CI gate
should conclude.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.errors import EXIT_NOT_JUDGED, EXIT_REGRESSION
from torchscale.interfaces.api.report_generate import ReportOutcome, ReportRequest, generate

if TYPE_CHECKING:
    from torchscale.interfaces.report.model import Report
    from torchscale.interfaces.report.progress import OnStep
    from torchscale.interfaces.report.sections.baseline import GateSummary

__all__ = ["EXIT_NOT_JUDGED", "EXIT_REGRESSION", "ReportRun", "build_report"]


@dataclass(frozen=True)
class ReportRun:
    """The report built (`outcome`: the model, the rendered bytes, where they were written,
    build and render times) and the baseline comparison's summary (`gate`, None without a
    baseline). `exit_code` is the command's: with `fail_on_regression` and a baseline,
    EXIT_REGRESSION when a cell regressed, else EXIT_NOT_JUDGED when no matched cell could be
    judged (or none matched); otherwise 0."""

    outcome: ReportOutcome
    gate: GateSummary | None
    fail_on_regression: bool = False

    @property
    def report(self) -> Report:
        return self.outcome.report

    @property
    def exit_code(self) -> int:
        if not self.fail_on_regression or self.gate is None:
            return 0
        if self.report.regressions:
            return EXIT_REGRESSION
        return EXIT_NOT_JUDGED if self.gate.nothing_judged else 0


def build_report(
    source: Path | str,
    fmt: str = "html",
    *,
    output: Path | str | None = None,
    baseline: Path | str | None = None,
    cost_per_gpu_hour: float | None = None,
    prices: Mapping[str, float] | None = None,
    title: str | None = None,
    fail_on_regression: bool = False,
    html_link: str | None = None,
    width: int | None = None,
    full: bool = False,
    interactive: bool = False,
    on_step: OnStep | None = None,
) -> ReportRun:
    """Report on `source` (one experiment's results, or a folder of several) as
    `torchscale report -s SOURCE -f FMT` does (parameters: docs/python-api.md; the flags they
    mirror: docs/cli.md). `html_link`: where the HTML report is published, for the Markdown to
    link; `interactive`: HTML charts drawn by plotly rather than SVG; `prices`: a price per
    experiment name."""
    from torchscale.interfaces.report.sections.baseline import gate_summary

    outcome = generate(
        ReportRequest(
            source=Path(source),
            fmt=fmt,
            output=Path(output) if output is not None else None,
            baseline=Path(baseline) if baseline is not None else None,
            cost_per_gpu_hour=cost_per_gpu_hour,
            prices=dict(prices or {}),
            title=title,
            html_link=html_link,
            width=width,
            full=full,
            interactive=interactive,
        ),
        on_step,
    )
    return ReportRun(outcome, gate_summary(outcome.report), fail_on_regression)
