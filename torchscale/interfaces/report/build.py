"""Build the `Report` model from read results, by pure functions.

`read_sources` (report.sources) does all the reading; `build_report` only computes and lays
out: every figure, table and chart is decided here, so every renderer shows the same numbers.
One function per section (`report.sections.<id>.build(ctx)`) over a shared `Context`, listed
once in `SECTIONS` (docs/architecture.md, "A report section").
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import torchscale
from torchscale.interfaces.report.charts.limits import cap_chart
from torchscale.interfaces.report.model import Chart, Report, Section, Source, Table
from torchscale.interfaces.report.parts.context import Context, make_context, unreadable_cells
from torchscale.interfaces.report.parts.findings import collect_findings
from torchscale.interfaces.report.parts.headline import (
    description,
    hardware,
    measured_dates,
    verdict,
)
from torchscale.interfaces.report.parts.usability import judge
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sections import (
    acceptance,
    appendix,
    bottlenecks,
    collectives,
    efficiency,
    failures,
    forecasts,
    glossary,
    latency,
    memory,
    scaling,
    strategies,
    summary,
)
from torchscale.interfaces.report.sections import baseline as baseline_section
from torchscale.interfaces.report.short import kept_sections, left_out_line, trim
from torchscale.interfaces.report.sources import ExperimentSource, Sources
from torchscale.offline.results.directory_layout import STANDALONE_EXPERIMENT
from torchscale.offline.results.sweep_progress import NO_RESULT, label_of_cell_id, sweep_progress


def default_title(sources: Sources, baseline: Sources | None) -> str:
    """'torchscale report: a, b', or against a baseline what is compared: the experiment
    names, or their directories where the names are the same on both sides (a config re-run
    keeps its name), never 'x vs x'."""
    current = ", ".join(_named(s) for s in sources.experiments)
    if baseline is None:
        return f"torchscale report: {current}"
    base = ", ".join(_named(s) for s in baseline.experiments)
    if base == current:
        current, base = _distinct_paths(sources.path, baseline.path)
        if base == current:
            return f"torchscale report: {current} against itself"
    return f"torchscale report: {current} vs {base}"


def _named(source: ExperimentSource) -> str:
    """An experiment's name; for the placeholder a run without a config is stored under
    (STANDALONE_EXPERIMENT), what it holds: its profiled runs' cell ids without their hash,
    else 'communication benchmark' or 'acceptance checks'."""
    if source.name != STANDALONE_EXPERIMENT:
        return source.name
    runs = [label_of_cell_id(p.name) for p in source.profiles]
    if runs:
        return ", ".join(dict.fromkeys(runs))
    if source.comm:
        return "communication benchmark"
    return "acceptance checks" if source.acceptance else source.name


def _distinct_paths(current: Path, baseline: Path) -> tuple[str, str]:
    """The shortest trailing parts of two paths that tell them apart ('new/results' and
    'old/results'; the whole paths when one ends the other)."""
    a, b = current.parts, baseline.parts
    for depth in range(1, max(len(a), len(b)) + 1):
        left, right = a[-depth:], b[-depth:]
        if left != right:
            return str(Path(*left)), str(Path(*right))
    return str(current), str(baseline)


def source_summary(
    sources: Sources, role: Literal["current", "baseline"] = "current"
) -> list[Source]:
    """One `Source` per experiment: cell counts by status, profiles, schema versions. A cell
    its plan skipped by design counts with or without a result file (an older sweep wrote none
    for some), as the cells card counts it."""
    out = []
    for source in sources.experiments:
        statuses: list[str] = []
        versions: set[int] = set()
        unfinished = 0
        if source.experiment is not None:
            statuses = [r.status.value for r in source.experiment.results]
            versions = {r.schema_version for r in source.experiment.results}
            progress = sweep_progress(source.experiment, source.plan).cells
            unfinished = sum(c.state in NO_RESULT for c in progress)
            planned_skips = sum(c.state == "skipped" for c in progress)
            statuses += ["skipped"] * max(0, planned_skips - statuses.count("skipped"))
        versions |= {p.analysis.schema_version for p in source.profiles}
        out.append(
            Source(
                name=source.name,
                path=str(source.path),
                cells=len(statuses),
                ok=statuses.count("ok"),
                failed=sum(s in ("failed", "oom", "timeout") for s in statuses),
                skipped=statuses.count("skipped"),
                profiles=len(source.profiles),
                schema_versions=sorted(versions),
                role=role,
                unreadable=unreadable_cells(sources.skipped, source.path),
                comm_runs=len(source.comm),
                unfinished=unfinished,
            )
        )
    return out


def _unique_ids(sections: list[Section]) -> None:
    """Chart and table ids are unique in the report (HTML element ids): a repeated one gets a
    -2, -3 suffix (sections build distinct ids; this is the guarantee)."""
    seen: set[str] = set()
    for section in sections:
        for block in section.blocks:
            if isinstance(block, (Chart, Table)):
                base, number = block.id, 2
                while block.id in seen:
                    block.id = f"{base}-{number}"
                    number += 1
                seen.add(block.id)


def _against_baseline(ctx: Context) -> Section | None:
    """The comparison, only when a baseline was given (`--baseline`)."""
    return baseline_section.build(ctx) if ctx.baseline is not None else None


# A section's `build(ctx)` returns its `Section`, or None where it has nothing to show in this
# report. The report's sections, in reading order: adding one is its line here.
SectionBuilder = Callable[[Context], Section | None]
SECTIONS: tuple[SectionBuilder, ...] = (
    summary.build,
    scaling.build,
    forecasts.build,
    latency.build,
    efficiency.build,
    strategies.build,
    bottlenecks.build,
    memory.build,
    collectives.build,
    acceptance.build,
    _against_baseline,
    failures.build,
    appendix.build,
)


def _sections(ctx: Context, options: ReportOptions) -> list[Section]:
    """The sections of `options.scope`: every one, or a short format's (`report.short`: the
    others are never built, and what a short report leaves out is said in its summary)."""
    keep = kept_sections(options.scope, has_cells=bool(len(ctx.cells)))
    sections: list[Section] = []
    for build in SECTIONS:
        # a section's id is known once built; a short scope skips the builders of sections
        # it drops by their module's name (`sections.<id>`), the baseline's by its own
        if keep is not None and _section_id(build) not in keep:
            continue
        section = build(ctx)
        if section is not None and (keep is None or section.id in keep):
            # charts within the limits of `charts.limits` (tables keep every row)
            blocks = [cap_chart(b) if isinstance(b, Chart) else b for b in section.blocks]
            sections.append(section.model_copy(update={"blocks": blocks}))
    if options.scope != "short":
        return sections
    sections, charts = trim(sections)
    for index, section in enumerate(sections):
        if section.id == "summary":
            blocks = [*section.blocks, left_out_line(charts)]
            sections[index] = section.model_copy(update={"blocks": blocks})
    return sections


def _section_id(build: SectionBuilder) -> str:
    if build is _against_baseline:
        return "baseline"
    return build.__module__.rpartition(".")[2]


def build_report(
    sources: Sources, options: ReportOptions, baseline: Sources | None = None
) -> Report:
    """The report over `sources` (and against `baseline` when given: then the baseline
    section and `Report.regressions`), with the sections of `options.scope`."""
    ctx = make_context(sources, options, baseline)
    ctx.findings = collect_findings(ctx)
    if len(ctx.cells) or ctx.unreadable:
        ctx.usability = judge(ctx)
    sections = _sections(ctx, options)
    _unique_ids(sections)
    skipped = list(sources.skipped) + (list(baseline.skipped) if baseline else [])
    headline, decision = verdict(ctx)
    lead = [headline, *(decision.in_reading_order() if decision else [])]
    terms = glossary.build(sections, lead)
    if terms is not None:  # last: it explains the words of every section above
        sections.append(terms)
    generated = options.generated_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Report(
        torchscale_version=torchscale.__version__,
        title=options.title or default_title(sources, baseline),
        generated_at=generated,
        sources=source_summary(sources)
        + (source_summary(baseline, "baseline") if baseline is not None else []),
        sections=sections,
        regressions=ctx.comparison.regression_count if ctx.comparison is not None else None,
        not_judged=ctx.comparison.not_judged if ctx.comparison is not None else None,
        skipped=skipped,
        headline=headline,
        decision=decision,
        hardware=hardware(ctx),
        measured=measured_dates(ctx),
        description=description(ctx),
        html_report=options.html_report,
        source_path=str(sources.path),
    )
