"""Terminal rendering of a profile in the published style (docs/profiling.md). Every figure about
where step time goes is the run's one diagnosis (`ProfileAnalysis.diagnosis`) in the sentences
of `report/diagnosis_text.py`, which every surface uses. The default output is short (about 15
lines at 80 columns); `verbose` (-v) adds the cross-checks, evidence, fixes and notes."""

from __future__ import annotations

from pathlib import Path

from torchscale.contracts.cell import Status
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Problem, StepPart
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis, RankFigures
from torchscale.contracts.wording import diagnosis_problems, spell
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import why as reason_words
from torchscale.contracts.wording.figures import plus_minus, readable_like, share_text
from torchscale.contracts.wording.profile import said
from torchscale.contracts.wording.spell import ms_or_s, pct, readable
from torchscale.interfaces.console.cells import cell_lines, cell_name, warning_lines
from torchscale.interfaces.console.diagnosis import diagnosis_lines, findings_lines
from torchscale.interfaces.console.lines import Line
from torchscale.interfaces.report.diagnosis_text import compute_word
from torchscale.offline.results.profile_figures import compile_mode

PART_LABELS = {
    "compute": "compute",
    "data": "data",
    "wait_for_peers": "waiting for peers",
    "exposed_transfer": "exposed transfer",
    "rest": "rest",
}
# detail lines each target adds under -v (besides the diagnosis and its findings)
TARGET_DETAILS = {
    "sync_stalls": ("waits",),
    "comm": ("comm",),
    "compute": ("compute",),
    "memory": ("memory",),
    "all": ("waits", "comm", "compute", "memory"),
}


def parts_text(parts: list[StepPart]) -> str:
    """'compute 56.3 % ±3.6 %, data ...': a model's parts with their intervals."""
    return ", ".join(f"{PART_LABELS[p.name]} {share_text(p.share)}" for p in parts)


def run_name(result: CellResult) -> str:
    """'gpt2 b8 x1 bf16 ddp compiled': the cell as reports name it, compiled or eager."""
    return f"{cell_name(result.cell)} {compile_mode(result)}"


def run_lines(
    result: CellResult,
    directory: Path,
    analysis: ProfileAnalysis | None = None,
    *,
    verbose: bool = False,
) -> list[Line]:
    """The profiled run in one line (its measured windows, before any traced step), its
    injected delays, how its traced steps compare (`traced_step_lines`), and, with `verbose`,
    every line of a sweep's cell. The diagnosis is the analysis' (`analysis_lines`), never
    printed twice."""
    if verbose or result.status is not Status.OK or analysis is None:
        lines = [Line("head", f"> [RUN] {run_name(result)}: {result.status}")]
        shown = result
        if analysis is not None and analysis.diagnosis is not None:
            unavailable = {k: v for k, v in result.unavailable.items() if k != "diagnosis"}
            shown = result.model_copy(update={"diagnosis": None, "unavailable": unavailable})
        lines += cell_lines(shown, verbose=verbose)
        target = analysis.target if analysis is not None else None
        if result.status is Status.OK and target in ("memory", "all") and result.memory:
            lines += _run_memory_lines(result)
        lines += traced_step_lines(result, analysis)
        lines.append(Line("info", f"> [RUN] traces and analysis: {directory}"))
        return lines
    lines = [run_head(result)]
    for delay in result.injected_delays:
        what = f"rank {delay.rank} +{spell.ms_plain(delay.ms)} in {delay.phase} each step"
        what += " (artificial)"
        lines.append(Line("warn", f"> [WARN] injected delay: {what}"))
    return lines + traced_step_lines(result, analysis)


def run_head(result: CellResult) -> Line:
    """'> [RUN] gpt2 b8 x1 bf16 ddp compiled: ok, 1,200 ±40 samples/s, step 6.6 ms median':
    the measured run in one line, its figures cut to their intervals."""
    figures = []
    if (thr := result.throughput) is not None:
        interval = result.intervals.samples_per_s if result.intervals is not None else None
        rate = readable(thr.samples_per_s)
        if interval is not None and interval.low is not None and interval.high is not None:
            rate = plus_minus(interval, readable_like(thr.samples_per_s))
        figures.append(spell.with_unit(rate, "samples/s"))
    if result.step_time is not None:
        figures.append(f"step {ms_or_s(result.step_time.p50)} median")
    return Line("head", f"> [RUN] {run_name(result)}: {', '.join(['ok', *figures])}")


def own_job_lines(result: CellResult, *, verbose: bool = False) -> list[Line]:
    """A measured job of the user's, answer first: its run line, then the one diagnosis
    (a named straggler leads it), then the warnings; `verbose`: every line of a sweep's cell.
    The diagnosis is the one the result holds: its traced window's where one was analysed
    (orchestration/profiling/own_job_window.py), else the phase timers'."""
    if verbose or result.status is not Status.OK:
        head = Line("head", f"> [RUN] {run_name(result)}: {result.status}")
        return [head, *cell_lines(result, verbose=verbose)]
    diagnosis = diagnosis_lines(
        result.diagnosis,
        reason_words(result.unavailable.get("diagnosis")),
        verbose=False,
        compute=compute_word(result),
    )
    return [run_head(result), *diagnosis, *warning_lines(result, verbose=False)]


# traced and untraced steps within this fraction of each other read as one step time: a mean
# against a median, of other steps, differs a little anyway
TRACED_STEP_TOLERANCE = 0.10


def traced_step_lines(result: CellResult, analysis: ProfileAnalysis | None) -> list[Line]:
    """'> [RUN] traced steps ran 2.2x slower (137 ms vs 62.4 ms): shares are of 137 ms': why
    the diagnosis' Step line (the traced steps' mean) is not the [RUN] line's median (the
    measured windows, no profiler), and which one its shares are of. Nothing when the two
    agree to TRACED_STEP_TOLERANCE or either is unknown. Kept under 80 columns for figures
    under 1,000 ms (the 80-column default of `profile`); `-v`'s capture-overhead note gives
    both medians with the overhead's interval."""
    diagnosis = analysis.diagnosis if analysis is not None else None
    traced = diagnosis.step_s.value if diagnosis is not None else None
    untraced = result.step_time.p50 if result.step_time is not None else None
    if traced is None or untraced is None or traced <= 0 or untraced <= 0:
        return []
    ratio = traced / untraced
    if abs(ratio - 1.0) < TRACED_STEP_TOLERANCE:
        return []
    how = f"{spell.times(ratio)} slower" if ratio > 1 else f"{spell.times(1 / ratio)} faster"
    text = (
        f"traced steps ran {how} ({ms_or_s(traced)} vs {ms_or_s(untraced)}): shares are of "
        f"{ms_or_s(traced)}"
    )
    return [Line("info", f"> [RUN] {text}")]


def _run_memory_lines(result: CellResult) -> list[Line]:
    memory = result.memory
    if memory is None:
        return []
    peaks = (
        ("peak allocated", memory.peak_allocated_bytes, ""),
        ("peak reserved", memory.peak_reserved_bytes, ""),
        ("peak RSS", memory.peak_rss_bytes, " (largest rank)"),
    )
    figures = [f"{name} {spell.mib(size)}{of}" for name, size, of in peaks if size is not None]
    static = memory.parameter_bytes + memory.gradient_bytes + memory.optimizer_state_bytes
    figures.append(f"parameters + gradients + optimizer state {spell.mib(static, 1)} per rank")
    return [Line("info", f"> [RUN] memory (measured windows, no profiler): {', '.join(figures)}")]


def _wait_lines(analysis: ProfileAnalysis) -> list[Line]:
    waits = []
    for rank in analysis.ranks:
        part = next((p for p in rank.parts if p.name == "wait_for_peers"), None)
        if part is not None:
            waits.append(f"rank {rank.rank} {share_text(part.share)}")
    if not waits or analysis.ranks_analysed < 2:
        return []
    if analysis.diagnosis is not None and analysis.diagnosis.rank_waits:
        return []  # the diagnosis' own per-rank waits are shown (-v)
    if analysis.diagnosis is not None and any(
        p.name == "wait_for_peers" and p.share.value is None and p.share.high is None
        for p in analysis.diagnosis.parts
    ):
        return []
    text = "> [ANALYSIS] Waiting for peers by rank (share of its own step): " + ", ".join(waits)
    return [Line("info", text)]


def _comm_lines(analysis: ProfileAnalysis) -> list[Line]:
    lines = []
    if analysis.overlap_pct is not None:
        text = (
            "> [ANALYSIS] Compute/communication overlap: "
            f"{spell.percent(analysis.overlap_pct)} of the "
            "communication time (HTA definition; the share of the step is the Step line's)"
        )
        lines.append(Line("info", text))
    steps = analysis.diagnosis.steps if analysis.diagnosis is not None else 0
    for op in analysis.ops:
        per = op.transfer_us / op.instances if op.instances else 0.0
        ranks = max(analysis.ranks_analysed, 1)
        wait = (
            f", waiting inside them {spell.profile_us(op.wait_us / ranks / steps)} per rank and "
            "step (hidden behind compute or not)"
            if steps
            else ""
        )
        text = f"{op.instances} matched instance(s), transfer {spell.profile_us(per)} each"
        lines.append(Line("info", f"> [ANALYSIS]   {op.op}: {text} (the shortest rank's){wait}"))
    if analysis.matched_collectives == 0 and analysis.ranks_analysed > 1:
        lines.append(Line("skip", "> [NOTE] no collective matched across the ranks"))
    return lines


def _own_parts(analysis: ProfileAnalysis, rank: RankFigures) -> list[StepPart]:
    """A rank's parts; one rank's are the diagnosis' (stored there, once)."""
    if rank.parts or len(analysis.ranks) > 1 or analysis.diagnosis is None:
        return rank.parts
    return analysis.diagnosis.parts


def _compute_lines(analysis: ProfileAnalysis) -> list[Line]:
    lines = []
    for rank in analysis.ranks:
        parts = _own_parts(analysis, rank)
        if parts:
            host = (
                f"; host wait (in rest) {spell.profile_us(rank.host_wait_us)} median"
                if rank.host_wait_us is not None
                else ""
            )
            lines.append(Line("info", f"> [ANALYSIS] rank {rank.rank}: {parts_text(parts)}{host}"))
    if analysis.top_kernels:
        for kernel in analysis.top_kernels:
            name = kernel.name if len(kernel.name) <= 80 else kernel.name[:77] + "..."
            share = f"{pct(kernel.share_of_compute)} of kernel time, {kernel.calls} call(s)"
            lines.append(Line("info", f"> [ANALYSIS]   kernel {name}: {share}"))
    elif analysis.device_type == "cpu":
        lines.append(Line("skip", "> [NOTE] CPU ranks: compute is host ops, no kernel breakdown"))
    return lines


def _memory_lines(analysis: ProfileAnalysis) -> list[Line]:
    share = analysis.memory_copy_share
    if share is None:
        where = "none on CPU ranks" if analysis.device_type == "cpu" else "no step model"
        return [Line("skip", f"> [NOTE] device copies: {where}")]
    what = "Device copies (memcpy/memset not under a kernel, part of compute)"
    return [Line("info", f"> [ANALYSIS] {what}: {share_text(share)} of the step")]


DETAILS = dict(waits=_wait_lines, comm=_comm_lines, compute=_compute_lines, memory=_memory_lines)


def _finding_cost(finding: Problem) -> str:
    return f"{share_text(finding.cost_share)} of the step"


def traced_steps(analysis: ProfileAnalysis) -> int:
    """The steps the traces cover on every rank: the diagnosis' own where the traces decided
    it, else (the phase timers' measured windows head it) the fewest any rank completed."""
    diagnosis = analysis.diagnosis
    if diagnosis is not None and diagnosis.source == "traces":
        return diagnosis.steps
    return min((r.steps for r in analysis.ranks), default=0)


def analysis_lines(
    analysis: ProfileAnalysis, *, result: CellResult | None = None, verbose: bool = False
) -> list[Line]:
    """The trace analysis: its diagnosis and findings for its target; `verbose` adds the
    cross-checks, evidence and fixes, the target's detail lines, notes and what is
    unavailable."""
    ranks = f"{analysis.ranks_analysed} rank(s)"
    if analysis.world_size and analysis.world_size != analysis.ranks_analysed:
        ranks += f" of {analysis.world_size}"
    backend = f", {analysis.backend}" if analysis.backend else ""
    steps = f", {traced_steps(analysis)} traced step(s)" if analysis.diagnosis else ""
    lines = [Line("head", f"> [ANALYSIS] Profiling complete: {ranks}{backend}{steps}")]
    lines += diagnosis_lines(
        analysis.diagnosis,
        reason_words(analysis.unavailable.get("diagnosis")),
        verbose=verbose,
        compute=compute_word(result),  # the profiled run's
    )
    if verbose:
        for name in TARGET_DETAILS.get(analysis.target, TARGET_DETAILS["all"]):
            lines += DETAILS[name](analysis)
    target = "" if analysis.target == "sync_stalls" else f" for --target {analysis.target}"
    more = len(analysis.other_findings)
    left = f" ({more} more left out by --target {analysis.target})" if more else ""
    verdict = analysis.diagnosis.straggler if analysis.diagnosis is not None else None
    lines += findings_lines(
        analysis.findings,
        verbose=verbose,
        heading=f"Found {{n}} bottleneck(s){target}{left}:",
        injected=bool(verdict is not None and verdict.injected),
        caveat=verdict_words.caveat(analysis.diagnosis) if analysis.diagnosis is not None else None,
        run=diagnosis_problems.run_of(result),
    )
    if not verbose:
        return lines
    if analysis.other_findings:
        left = "; ".join(f"{f.title} ({_finding_cost(f)})" for f in analysis.other_findings)
        why = f"left out by --target {analysis.target} (--target all shows them)"
        lines.append(Line("skip", f"> [NOTE] {why}: {left}"))
    lines += [Line("skip", f"> [NOTE] {said(note)}") for note in analysis.notes]
    lines += [
        Line("skip", f"> [UNAVAILABLE] {metric}: {reason_words(reason)}")
        for metric, reason in analysis.unavailable.items()
        if metric != "diagnosis" or analysis.diagnosis is not None  # its own line above
    ]
    return lines
