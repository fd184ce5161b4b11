"""Terminal rendering of a profile: the run's own figures, then the trace analysis in the
published style (`[ANALYSIS] ...` / `Found 2 bottleneck(s):` / ...).

Every figure about where step time goes comes from the analysis' one step model
(`ProfileAnalysis.attribution`): one "Step" line with its parts, one "Straggler" line with the
verdict, and the other estimates (arrival order, what-if, the run's phase timers) as [CHECK]
lines that say whether they agree. `--target` (`analysis.target`) picks the detail lines and
the findings; the Step and Straggler lines are always shown, being the model they detail.
"""

from __future__ import annotations

from pathlib import Path

from torchscale.cell import Status
from torchscale.report.estimates import plus_minus, with_interval
from torchscale.report.terminal import PART_LABELS, Level, Line, cell_lines, cell_name
from torchscale.schema.cell_result import Attribution, CellResult, Estimate, StepPart
from torchscale.schema.profile_analysis import FindingFigures, ProfileAnalysis

VERDICT_WORDS = {True: "agrees", False: "disagrees", None: "not judged"}
# detail lines each target shows (besides the Step and Straggler lines and its findings)
TARGET_DETAILS = {
    "sync_stalls": ("checks", "waits"),
    "comm": ("checks", "comm"),
    "compute": ("compute",),
    "memory": ("memory",),
    "all": ("checks", "waits", "comm", "compute", "memory"),
}


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _duration(seconds: float) -> str:
    """Seconds as ms (or s from 10 s on), three significant figures at least."""
    if abs(seconds) >= 10:
        return f"{seconds:.2f} s"
    ms = seconds * 1e3
    return f"{ms:.2f} ms" if abs(ms) >= 1 else f"{ms:.3f} ms"


def _us(us: float) -> str:
    return _duration(us / 1e6)


def share_text(estimate: Estimate) -> str:
    """A share of the step with ± (or why not), the way every profile line prints it."""
    if estimate.value is None and estimate.high is None:
        return "unknown"
    if estimate.value is None and estimate.high == 0:
        return "0.0%"  # exactly zero on every step (interval [0, 0]): measured, not noise
    return plus_minus(estimate, _pct)


def parts_text(parts: list[StepPart]) -> str:
    """'compute 56.3% ±3.6%, data ...': a model's parts with their intervals."""
    return ", ".join(f"{PART_LABELS[p.name]} {share_text(p.share)}" for p in parts)


def run_lines(
    result: CellResult, directory: Path, analysis: ProfileAnalysis | None = None
) -> list[Line]:
    """The profiled run's measured windows (before any traced step) and where it all is.
    With a trace analysis that has a step model, the run's own model (phase timers) is not a
    second headline: the analysis shows it as [CHECK] lines against the trace model, so only
    the run's throughput and latency lines are printed here."""
    lines = [Line("head", f"> [RUN] {cell_name(result.cell)}: {result.status}")]
    if analysis is not None and analysis.diagnosis is not None:
        unavailable = {k: v for k, v in result.unavailable.items() if k != "diagnosis"}
        shown = result.model_copy(update={"diagnosis": None, "unavailable": unavailable})
        lines += cell_lines(shown)
    else:
        lines += cell_lines(result)
    target = analysis.target if analysis is not None else None
    if result.status is Status.OK and target in ("memory", "all") and result.memory is not None:
        lines += _run_memory_lines(result)
    lines.append(Line("info", f"> [RUN] traces and analysis: {directory}"))
    return lines


def _run_memory_lines(result: CellResult) -> list[Line]:
    memory = result.memory
    if memory is None:
        return []
    mib = 2**20
    figures = []
    if memory.peak_allocated_bytes is not None:
        figures.append(f"peak allocated {memory.peak_allocated_bytes / mib:,.0f} MiB")
    if memory.peak_reserved_bytes is not None:
        figures.append(f"peak reserved {memory.peak_reserved_bytes / mib:,.0f} MiB")
    if memory.peak_rss_bytes is not None:
        figures.append(f"peak RSS {memory.peak_rss_bytes / mib:,.0f} MiB (largest rank)")
    static = memory.parameter_bytes + memory.gradient_bytes + memory.optimizer_state_bytes
    figures.append(f"parameters + gradients + optimizer state {static / mib:,.1f} MiB per rank")
    return [Line("info", f"> [RUN] memory (measured windows, no profiler): {', '.join(figures)}")]


def step_lines(attribution: Attribution | None, why_not: str | None) -> list[Line]:
    """The one Step line and the one Straggler line of the trace model."""
    if attribution is None:
        return [Line("warn", f"> [ANALYSIS] Step model: unavailable ({why_not or 'no steps'})")]
    over = f"mean over {attribution.ranks} rank(s) and {attribution.steps} step(s)"
    lines = [
        Line(
            "info",
            f"> [ANALYSIS] Step {plus_minus(attribution.step_s, _duration)} ({over}): "
            f"{parts_text(attribution.parts)}",
        )
    ]
    unknown = [p for p in attribution.parts if p.share.value is None and p.share.high is None]
    lines += [
        Line("skip", f"> [NOTE] {PART_LABELS[p.name]}: {p.share.reason}")
        for p in unknown
        if p.share.reason
    ]
    verdict = attribution.straggler
    if verdict is not None:
        level: Level = "warn" if verdict.named else "info"
        lines.append(Line(level, f"> [ANALYSIS] Straggler: {verdict.summary}"))
    return lines


def check_lines(attribution: Attribution | None) -> list[Line]:
    """The cross-checks of the model, each agreeing or not."""
    if attribution is None:
        return []
    lines = []
    for check in attribution.cross_checks:
        figure = ""
        if check.estimate is not None:
            # the long form: a share near 0 or 1 has a lopsided interval that ± would misstate
            figure = f"{with_interval(check.estimate, _pct)}, "
        lines.append(
            Line(
                "info" if check.agrees is not False else "warn",
                f"> [CHECK] {check.name}: {figure}{VERDICT_WORDS[check.agrees]}: {check.detail}",
            )
        )
    return lines


def _wait_lines(analysis: ProfileAnalysis) -> list[Line]:
    waits = []
    for rank in analysis.ranks:
        part = next((p for p in rank.parts if p.name == "wait_for_peers"), None)
        if part is not None:
            waits.append(f"rank {rank.rank} {share_text(part.share)}")
    if not waits or analysis.ranks_analysed < 2:
        return []
    if analysis.diagnosis is not None and any(
        p.name == "wait_for_peers" and p.share.value is None and p.share.high is None
        for p in analysis.diagnosis.parts
    ):
        return []
    return [
        Line(
            "info",
            "> [ANALYSIS] Waiting for peers by rank (share of its own step): " + ", ".join(waits),
        )
    ]


def _comm_lines(analysis: ProfileAnalysis) -> list[Line]:
    lines = []
    if analysis.overlap_pct is not None:
        lines.append(
            Line(
                "info",
                f"> [ANALYSIS] Compute/communication overlap: {analysis.overlap_pct:.1f}% of the "
                "communication time (HTA definition; the share of the step is the Step line's)",
            )
        )
    steps = analysis.diagnosis.steps if analysis.diagnosis is not None else 0
    for op in analysis.ops:
        per = op.transfer_us / op.instances if op.instances else 0.0
        ranks = max(analysis.ranks_analysed, 1)
        wait = (
            f", waiting inside them {_us(op.wait_us / ranks / steps)} per rank and step "
            "(hidden behind compute or not)"
            if steps
            else ""
        )
        lines.append(
            Line(
                "info",
                f"> [ANALYSIS]   {op.op}: {op.instances} matched instance(s), transfer "
                f"{_us(per)} each (the shortest rank's){wait}",
            )
        )
    if analysis.matched_collectives == 0 and analysis.ranks_analysed > 1:
        lines.append(Line("skip", "> [NOTE] no collective matched across the ranks"))
    return lines


def _compute_lines(analysis: ProfileAnalysis) -> list[Line]:
    lines = []
    for rank in analysis.ranks:
        if rank.parts:
            host = (
                f"; host wait (in rest) {_us(rank.host_wait_us)} median"
                if rank.host_wait_us is not None
                else ""
            )
            lines.append(
                Line("info", f"> [ANALYSIS] rank {rank.rank}: {parts_text(rank.parts)}{host}")
            )
    if analysis.top_kernels:
        for kernel in analysis.top_kernels:
            name = kernel.name if len(kernel.name) <= 80 else kernel.name[:77] + "..."
            lines.append(
                Line(
                    "info",
                    f"> [ANALYSIS]   kernel {name}: {_pct(kernel.share_of_compute)} of kernel "
                    f"time, {kernel.calls} call(s)",
                )
            )
    elif analysis.device_type == "cpu":
        lines.append(Line("skip", "> [NOTE] CPU ranks: compute is host ops, no kernel breakdown"))
    return lines


def _memory_lines(analysis: ProfileAnalysis) -> list[Line]:
    share = analysis.memory_copy_share
    if share is None:
        return [
            Line(
                "skip",
                "> [NOTE] device copies: none on CPU ranks"
                if analysis.device_type == "cpu"
                else "> [NOTE] device copies: no step model",
            )
        ]
    return [
        Line(
            "info",
            f"> [ANALYSIS] Device copies (memcpy/memset not under a kernel, part of compute): "
            f"{share_text(share)} of the step",
        )
    ]


MIRRORED = ("sync_stall_pct", "exposed_comm_pct", "straggler", "whatif")
DETAILS = {
    "checks": lambda a: check_lines(a.diagnosis),
    "waits": _wait_lines,
    "comm": _comm_lines,
    "compute": _compute_lines,
    "memory": _memory_lines,
}


def _finding_cost(finding: FindingFigures) -> str:
    if finding.cost_share is not None:
        return f"{share_text(finding.cost_share)} of the step"
    return f"{finding.cost_pct:.1f}% of the step"


def analysis_lines(analysis: ProfileAnalysis) -> list[Line]:
    """The trace analysis, rendered from its step model and for its target."""
    ranks = f"{analysis.ranks_analysed} rank(s)"
    if analysis.world_size and analysis.world_size != analysis.ranks_analysed:
        ranks += f" of {analysis.world_size}"
    backend = f", {analysis.backend}" if analysis.backend else ""
    lines = [
        Line(
            "head",
            f"> [ANALYSIS] Profiling complete: {ranks}{backend}, target {analysis.target}",
        )
    ]
    lines += step_lines(analysis.diagnosis, analysis.unavailable.get("diagnosis"))
    for name in TARGET_DETAILS.get(analysis.target, TARGET_DETAILS["all"]):
        lines += DETAILS[name](analysis)
    count = len(analysis.findings)
    lines.append(
        Line("info", f"> [ANALYSIS] Found {count} bottleneck(s) for --target {analysis.target}:")
    )
    for number, finding in enumerate(analysis.findings, 1):
        lines.append(Line("warn", f">   {number}. {finding.title} ({_finding_cost(finding)})"))
        lines += [Line("info", f">      evidence: {item}") for item in finding.evidence]
        lines.append(Line("info", f">      fix: {finding.recommendation}"))
    if analysis.other_findings:
        left = "; ".join(f"{f.title} ({_finding_cost(f)})" for f in analysis.other_findings)
        lines.append(
            Line(
                "skip",
                f"> [NOTE] left out by --target {analysis.target} (--target all shows them): "
                f"{left}",
            )
        )
    lines += [Line("skip", f"> [NOTE] {note}") for note in analysis.notes]
    # the older figures mirror the model: their reasons are the Step and Straggler lines
    shown = {"diagnosis"} if analysis.diagnosis is None else set(MIRRORED)
    lines += [
        Line("skip", f"> [UNAVAILABLE] {metric}: {reason}")
        for metric, reason in analysis.unavailable.items()
        if metric not in shown
    ]
    return lines
