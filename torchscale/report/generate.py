"""`torchscale report` as a library call: read the sources, build the model, render one format,
write it atomically. The CLI only prints what comes back and picks the exit code.

A report is produced from whatever is valid: unreadable inputs become `Report.skipped` lines,
never an abort, unless nothing at all can be read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from torchscale.atomic import write_bytes_atomic
from torchscale.cell import file_safe
from torchscale.errors import ResultsError, UsageError, describe_os_error
from torchscale.report.model import Report
from torchscale.report.render import FORMATS, SUFFIX, renderer


@dataclass(frozen=True)
class ReportRequest:
    source: Path
    fmt: str = "html"
    output: Path | None = None  # None: next to the results (`default_output`); term: stdout
    baseline: Path | None = None
    cost_per_gpu_hour: float | None = None
    title: str | None = None
    generated_at: str | None = None  # fixed in tests; None = now


@dataclass(frozen=True)
class ReportOutcome:
    report: Report
    content: bytes
    path: Path | None  # where it was written (None: terminal output not saved)
    build_s: float
    render_s: float


def _slug(text: str) -> str:
    slug = file_safe(text).strip("._-")
    return (slug or "torchscale")[:80]


def default_output(source: Path, report: Report, fmt: str) -> Path:
    """`<source>/<experiment>_report.<ext>`: named after the one experiment read, or after the
    source directory when it holds several."""
    names = [s.name for s in report.current_sources()]
    stem = names[0] if len(names) == 1 else source.resolve().name
    return source / f"{_slug(stem)}_report{SUFFIX[fmt]}"


def check_request(request: ReportRequest) -> None:
    """Command-line mistakes, found before any work."""
    if request.fmt not in FORMATS:
        raise UsageError(f"unknown format {request.fmt!r}: use one of {', '.join(FORMATS)}")
    if request.cost_per_gpu_hour is not None and not request.cost_per_gpu_hour > 0:
        raise UsageError("--cost-per-gpu-hour must be a positive price (e.g. 2.5)")
    if request.output is not None and request.output.is_dir():
        raise UsageError(f"--output {request.output} is a directory: give a file name")


def generate(request: ReportRequest) -> ReportOutcome:
    """Build and render one report; write it unless it is terminal output without --output."""
    from torchscale.report.build import ReportOptions, build_report
    from torchscale.report.sources import read_sources

    check_request(request)
    started = time.perf_counter()
    sources = read_sources(request.source)
    baseline = read_sources(request.baseline) if request.baseline is not None else None
    report = build_report(
        sources,
        ReportOptions(
            title=request.title,
            cost_per_gpu_hour=request.cost_per_gpu_hour,
            generated_at=request.generated_at,
        ),
        baseline=baseline,
    )
    built = time.perf_counter()
    content = renderer(request.fmt)(report)
    rendered = time.perf_counter()
    path = request.output
    if path is None and request.fmt != "term":
        path = default_output(request.source, report, request.fmt)
    if path is not None:
        try:
            write_bytes_atomic(path, content)
        except OSError as exc:
            raise ResultsError(
                f"cannot write the report to {path}: {describe_os_error(exc)} (use --output)"
            ) from None
    return ReportOutcome(report, content, path, built - started, rendered - built)
