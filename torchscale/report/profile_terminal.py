"""Terminal rendering of a profile: the run's own figures, then the trace analysis in the
published style (`[ANALYSIS] Sync stall time: 15.0%` / `Found 2 bottleneck(s):` / ...)."""

from __future__ import annotations

from pathlib import Path

from torchscale.cell import Status
from torchscale.profiling.result import ProfileAnalysis
from torchscale.report.terminal import Line, cell_lines
from torchscale.results.schema import CellResult


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1e3:.1f} ms"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def run_lines(result: CellResult, directory: Path) -> list[Line]:
    """The profiled run's measured windows (before any traced step) and where it all is."""
    lines = [Line("head", f"> [RUN] {result.cell.id}: {result.status}")]
    lines += cell_lines(result)
    straggler = result.straggler
    if result.status is Status.OK and straggler is not None:
        phase = (
            f", slow phase {straggler.phase} +{straggler.gap_s * 1e3:.1f} ms"
            if (straggler.phase and straggler.gap_s is not None)
            else ""
        )
        lines.append(Line("info", f"> [RUN] phase timers: straggler rank {straggler.rank}{phase}"))
    lines.append(Line("info", f"> [RUN] traces and analysis: {directory}"))
    return lines


def analysis_lines(analysis: ProfileAnalysis) -> list[Line]:
    unit = "GPU" if analysis.device_type == "cuda" else "rank"
    ranks = f"{analysis.ranks_analysed} rank(s)"
    if analysis.world_size and analysis.world_size != analysis.ranks_analysed:
        ranks += f" of {analysis.world_size}"
    backend = f", {analysis.backend}" if analysis.backend else ""
    lines = [
        Line(
            "head",
            f"> [ANALYSIS] Profiling complete: {ranks}{backend}, cycle {_ms(analysis.cycle_us)}",
        )
    ]
    if analysis.sync_stall_pct is not None:
        lines.append(Line("info", f"> [ANALYSIS] Sync stall time: {analysis.sync_stall_pct:.1f}%"))
    else:
        reason = analysis.unavailable.get("sync_stall_pct", "not measurable")
        lines.append(Line("warn", f"> [ANALYSIS] Sync stall time: unavailable ({reason})"))
    if analysis.exposed_comm_pct is not None:
        lines.append(
            Line(
                "info",
                f"> [ANALYSIS] Exposed communication: {analysis.exposed_comm_pct:.1f}%, "
                f"comm/compute overlap {_pct(analysis.overlap_pct)}",
            )
        )
    straggler = analysis.straggler
    if straggler is not None:
        text = (
            f"> [ANALYSIS] Straggler: {unit} {straggler.rank} arrives last at "
            f"{straggler.last_arrival_share * 100:.0f}% of collectives"
        )
        if straggler.phase and straggler.phase_gap_us is not None:
            text += f"; its {straggler.phase} takes {_ms(straggler.phase_gap_us)} longer"
            if straggler.phase_gap_pct is not None:
                text += f" ({straggler.phase_gap_pct:.1f}% of the cycle)"
        lines.append(Line("warn", text))
    best = max(analysis.whatif, key=lambda w: w.speedup_pct, default=None)
    if best is not None and best.speedup_pct > 0:
        lines.append(
            Line(
                "info",
                f"> [ANALYSIS] What-if: if {unit} {best.rank} ran at the median, steps would be "
                f"{best.speedup_pct:.1f}% faster",
            )
        )
    lines.append(Line("info", f"> [ANALYSIS] Found {len(analysis.findings)} bottleneck(s):"))
    for number, finding in enumerate(analysis.findings, 1):
        lines.append(
            Line("warn", f">   {number}. {finding.title} ({finding.cost_pct:.1f}% of the cycle)")
        )
        lines += [Line("info", f">      evidence: {item}") for item in finding.evidence]
        lines.append(Line("info", f">      fix: {finding.recommendation}"))
    lines += [Line("skip", f"> [NOTE] {note}") for note in analysis.notes]
    lines += [
        Line("skip", f"> [UNAVAILABLE] {metric}: {reason}")
        for metric, reason in analysis.unavailable.items()
    ]
    return lines
