"""`torchscale report` as a library call: read the sources, build the model, render one format,
write it atomically. The CLI only prints what comes back and picks the exit code. The formats
are listed here, above both their homes: the files' renderers in `report/render/`, the
terminal's in `console/report_term.py`.

A report is produced from whatever is valid: unreadable inputs become `Report.skipped` lines,
never an abort, unless nothing at all can be read.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from torchscale.contracts.atomic import write_bytes_atomic
from torchscale.contracts.cell import file_safe
from torchscale.contracts.errors import (
    ResultsError,
    ResultsInputError,
    UsageError,
    describe_os_error,
)
from torchscale.contracts.gc_pause import cyclic_gc_paused
from torchscale.interfaces.report.model import Report
from torchscale.interfaces.report.progress import OnStep, Step, ignore
from torchscale.interfaces.report.short import Scope
from torchscale.offline.results.store import check_output_dir

if TYPE_CHECKING:
    from torchscale.interfaces.report.sources import Sources

FORMATS = ("html", "pdf", "md", "json", "term")
SUFFIX = {"html": ".html", "pdf": ".pdf", "md": ".md", "json": ".json", "term": ".txt"}
# imported on demand, so that `--format md` never imports weasyprint
_MODULES = {
    "html": "torchscale.interfaces.report.render.html",
    "pdf": "torchscale.interfaces.report.render.pdf",
    "md": "torchscale.interfaces.report.render.markdown",
    "json": "torchscale.interfaces.report.render.json_format",
    "term": "torchscale.interfaces.console.report_term",
}


class Renderer(Protocol):
    def __call__(self, report: Report, **options: Any) -> bytes: ...


def renderer(fmt: str) -> Renderer:
    """The `render(report) -> bytes` function of a format (KeyError for an unknown one)."""
    module = importlib.import_module(_MODULES[fmt])
    render: Renderer = module.render
    return render


@dataclass(frozen=True)
class ReportRequest:
    source: Path
    fmt: str = "html"
    output: Path | None = None  # None: next to the results (`default_output`); term: stdout
    baseline: Path | None = None
    cost_per_gpu_hour: float | None = None
    title: str | None = None
    generated_at: str | None = None  # fixed in tests; None = now
    prices: Mapping[str, float] = field(default_factory=dict)  # experiment -> price
    html_link: str | None = None  # where the HTML report is (path or URL): the Markdown links it
    width: int | None = None  # term: columns at most (None: term.WIDTH, a file's)
    full: bool = False  # every section, not the decision and what carries it (`scope`)
    interactive: bool = False  # html: plotly charts (plotly.js inlined, 4.6 MB), not SVG


@dataclass(frozen=True)
class ReportOutcome:
    report: Report
    content: bytes
    path: Path | None  # where it was written (None: terminal output not saved)
    build_s: float
    render_s: float


def default_output(source: Path, report: Report, fmt: str) -> Path:
    """`<source>/<experiment>_report.<ext>`: named after the one experiment read, or after the
    source directory when it holds several."""
    names = [s.name for s in report.current_sources()]
    stem = file_safe(names[0] if len(names) == 1 else source.resolve().name).strip("._-")
    return source / f"{(stem or 'torchscale')[:80]}_report{SUFFIX[fmt]}"


def known_html(request: ReportRequest, report: Report, output: Path | None) -> str | None:
    """Where the HTML report is, for the Markdown (docs/reporting.md, `--html-link`): the URL or
    path given, else an HTML report beside the Markdown or at the default place, as an absolute
    path; None when there is none (the Markdown then says how to make it)."""
    if request.html_link:
        return request.html_link
    beside = [output.with_suffix(SUFFIX["html"])] if output is not None else []
    candidates = [*beside, default_output(request.source, report, "html")]
    found = next((c for c in candidates if c.is_file()), None)
    return str(found.resolve()) if found is not None else None


def parse_prices(values: Sequence[str]) -> tuple[float | None, dict[str, float]]:
    """`--cost-per-gpu-hour 2.5` (every result set) and `--cost-per-gpu-hour h100=2.5
    --cost-per-gpu-hour h200=3.9` (one per experiment, to compare machines at their prices)
    -> (price for all, {experiment: price})."""
    everyone: float | None = None
    per_experiment: dict[str, float] = {}
    for value in values:
        name, _, text = value.rpartition("=")
        try:
            price = float(text)
        except ValueError:
            price = math.nan
        if not math.isfinite(price) or price <= 0:
            raise UsageError(
                f"--cost-per-gpu-hour {value!r}: give a positive price (2.5) or "
                "EXPERIMENT=PRICE (h100=2.5)"
            )
        if not name:
            if everyone is not None:
                raise UsageError("--cost-per-gpu-hour: more than one price for every result set")
            everyone = price
        elif name in per_experiment:
            raise UsageError(f"--cost-per-gpu-hour: two prices for {name!r}")
        else:
            per_experiment[name] = price
    return everyone, per_experiment


def check_request(request: ReportRequest) -> None:
    """Command-line mistakes, found before any work."""
    if request.fmt not in FORMATS:
        raise UsageError(f"unknown format {request.fmt!r}: use one of {', '.join(FORMATS)}")
    for price in [request.cost_per_gpu_hour, *request.prices.values()]:
        if price is not None and not price > 0:
            raise UsageError("--cost-per-gpu-hour must be a positive price (e.g. 2.5)")
    if request.interactive and request.fmt != "html":
        raise UsageError(f"--interactive is for -f html (plotly charts), not -f {request.fmt}")
    if request.output is not None:  # its directory must take a file before any work
        folder = request.output if names_directory(request.output) else request.output.parent
        check_output_dir(folder, keep=True, what="the report")


def names_directory(output: Path) -> bool:
    """-o DIR or -o FILE (docs/cli.md, the one grammar): a directory when it is one or is new
    without a suffix (created); a file when it has a suffix (`-o scaling.pdf`) or is one."""
    return output.is_dir() or (not output.suffix and not output.exists())


def _read_input(path: Path) -> Sources:
    """The results named by -s or --baseline; one that cannot be used (missing, not a
    directory, empty, nothing usable in it) is an input error (exit 2), not a failed run."""
    from torchscale.interfaces.report.sources import read_sources

    try:
        return read_sources(path)
    except ResultsError as exc:
        if isinstance(exc, ResultsInputError):
            raise
        raise ResultsInputError(str(exc)) from None


def scope(request: ReportRequest) -> Scope:
    """What the request's format builds (docs/reporting.md, "Formats and sizes"): every section
    with --full, for the HTML (the short formats send their reader there) and the terminal (its
    summary counts what it leaves out); else the Markdown's summary or the short report."""
    if request.full or request.fmt in ("html", "term"):
        return "full"
    return "summary" if request.fmt == "md" else "short"


def render(request: ReportRequest, report: Report, on_step: OnStep = ignore) -> bytes:
    """The report in the request's format: the terminal's at its width, summary or full; the
    HTML's charts as SVG or interactive; the PDF saying how far it got."""
    by_format: dict[str, dict[str, Any]] = {
        "term": {"full": request.full} | ({"width": request.width} if request.width else {}),
        "pdf": {"on_step": on_step},
        "html": {"interactive": request.interactive, "on_step": on_step, "full": request.full},
        "md": {"full": request.full},
    }
    return renderer(request.fmt)(report, **by_format.get(request.fmt, {}))


def generate(request: ReportRequest, on_step: OnStep | None = None) -> ReportOutcome:
    """Build and render one report; write it unless it is terminal output without --output.
    `on_step` hears where the long work stands (building, then a PDF's charts and pages)."""
    check_request(request)
    on_step = on_step or ignore
    started = time.perf_counter()
    on_step(Step("build", 0, 1))
    sources = _read_input(request.source)
    baseline = _read_input(request.baseline) if request.baseline is not None else None
    known = {s.name for s in sources.experiments}
    unknown = sorted(set(request.prices) - known)
    if unknown:
        raise UsageError(
            f"--cost-per-gpu-hour names {', '.join(map(repr, unknown))}: no such result set "
            f"in {request.source} (there: {', '.join(sorted(known)) or 'none'})"
        )
    # the build makes millions of small objects that live until the report is written: the
    # collector's passes over them were ~20 % of a 500-cell HTML report and freed nothing
    with cyclic_gc_paused():
        from torchscale.interfaces.report.build import build_report
        from torchscale.interfaces.report.request import ReportOptions

        report = build_report(
            sources,
            ReportOptions(
                title=request.title,
                cost_per_gpu_hour=request.cost_per_gpu_hour,
                generated_at=request.generated_at,
                prices=request.prices,
                html_report=request.html_link,
                scope=scope(request),
            ),
            baseline=baseline,
        )
        path = request.output
        if path is None and request.fmt != "term":
            path = default_output(request.source, report, request.fmt)
        elif path is not None and names_directory(path):  # -o DIR, as every command takes it
            path = path / default_output(request.source, report, request.fmt).name
        if request.fmt == "md":
            report = report.model_copy(update={"html_report": known_html(request, report, path)})
        on_step(Step("build", 1, 1))
        built = time.perf_counter()
        content = render(request, report, on_step)
        rendered = time.perf_counter()
        if path is not None:
            try:
                write_bytes_atomic(path, content)
            except OSError as exc:
                raise ResultsError(
                    f"cannot write the report to {path}: {describe_os_error(exc)} (use --output)"
                ) from None
        return ReportOutcome(report, content, path, built - started, rendered - built)
