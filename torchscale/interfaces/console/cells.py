"""The sweep's lines for one cell: 'Running ...' as it starts, then its figures, diagnosis and
warnings. Each line carries its level (info, warn, fail, skip), chosen from the data, so the CLI
colours by level and never by searching the text."""

from __future__ import annotations

from torchscale.contracts import wording
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Problem
from torchscale.contracts.wording import diagnosis_problems, why
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.wording.figures import plus_minus, readable_like, value_format
from torchscale.contracts.wording.names import cell_title
from torchscale.contracts.wording.spell import format_value, megabytes_per_s, readable
from torchscale.contracts.wording.spell import ms_glued as _ms
from torchscale.contracts.wording.spell import pct_fine as _pct
from torchscale.interfaces.console.diagnosis import diagnosis_lines
from torchscale.interfaces.console.lines import Level, Line
from torchscale.interfaces.report.diagnosis_text import compute_word
from torchscale.offline.analysis.diagnosis.findings import is_host_bound_verdict
from torchscale.offline.analysis.uncertainty import two_scopes
from torchscale.orchestration.plan.planned import PlannedCell

STATUS_LEVEL: dict[Status, Level] = {
    Status.OK: "info",
    Status.SKIPPED: "skip",
    Status.FAILED: "fail",
    Status.OOM: "fail",
    Status.TIMEOUT: "fail",
}


def ranks_text(count: int, device: str) -> str:
    """'1 GPU', '2 GPUs', '1 CPU rank', '4 CPU ranks': CPU ranks are never called GPUs."""
    noun = "GPU" if device == "cuda" else "CPU rank"
    return f"{count} {noun}{'' if count == 1 else 's'}"


def cell_name(cell: CellIdentity) -> str:
    """'tiny-gpt2 b4 x2 fp32 ddp', as the reports name a cell (the id, with its hash, is for
    finding files)."""
    return cell_title(cell, cell.parallel.slug(cell.strategy) if cell.parallel else cell.strategy)


def running_line(planned: PlannedCell, position: str | None = None) -> Line:
    """'> Running ... (Batch 4, fp32, ddp)...', then where the sweep stands when given
    (`position`: 'cell 2/6, 1m05s elapsed, ETA 3m10s', torchscale.interfaces.report.progress)."""
    cell = planned.cell
    spread = f" over {cell.nodes} nodes" if cell.nodes > 1 else ""
    layout = cell.parallel.slug(cell.strategy) if cell.parallel else cell.strategy
    where = f" {position}" if position else ""
    on = f"on {ranks_text(cell.world_size, cell.device)}{spread}"
    how = f"(Batch {cell.batch_size}, {cell.precision}, {layout})...{where}"
    return Line("info", f"> Running {cell.label} {on} {how}")


REUSED = "ok in a previous run (--resume), not rerun"  # a cell --resume kept


def reused_line(result: CellResult) -> Line:
    return Line("info", f"> [INFO] {cell_name(result.cell)}: {REUSED}")


def cell_lines(result: CellResult, *, verbose: bool = False) -> list[Line]:
    """The published per-cell lines (throughput, latency) with their intervals, then the
    run's diagnosis (`report/diagnosis_text.py`; `verbose` adds its cross-checks), then
    warnings."""

    if result.status is not Status.OK:
        tag = "SKIP" if result.status is Status.SKIPPED else "FAIL"
        reason = wording.say(result.error.finding) if result.error else ""
        return [Line(STATUS_LEVEL[result.status], f"> [{tag}] {result.status}: {reason}")]
    thr, steps, intervals = result.throughput, result.step_time, result.intervals
    lines: list[Line] = []
    if thr is not None:
        unit = "img/sec" if result.model_kind == "vision" else "samples/sec"
        tokens = f" ({readable(thr.tokens_per_s)} tokens/sec)" if thr.tokens_per_s else ""
        figure = readable(thr.samples_per_s)
        if intervals is not None:
            figure = plus_minus(intervals.samples_per_s, readable_like(thr.samples_per_s))
        lines.append(Line("info", f"> [INFO] Average Throughput: {figure} {unit}{tokens}"))
    if steps is not None:
        seconds = value_format("seconds")  # cut to the digits its interval supports
        p50, p95 = seconds(steps.p50), seconds(steps.p95)
        if intervals is not None:
            p50 = plus_minus(intervals.step_p50_s, seconds)
            p95 = plus_minus(intervals.step_p95_s, seconds)
        lines.append(Line("info", f"> [INFO] Iteration Latency: {p50} (p95 {p95})"))
        has_mfu = result.compute is not None and result.compute.mfu is not None
        if (
            scopes := two_scopes(intervals, mfu=has_mfu)
        ) is not None:  # why the two intervals differ
            lines.append(Line("info", f"> [INFO] Intervals: {wording.say(scopes)}"))
    lines += host_bound_lines(result, verbose=verbose)
    if result.cell.world_size > 1 or result.diagnosis is not None:
        lines += diagnosis_lines(
            result.diagnosis,
            why(result.unavailable.get("diagnosis")),
            verbose=verbose,
            compute=compute_word(result),
        )
    lines += compile_lines(result)
    if verbose:
        lines += fixed_cost_lines(result)
    lines += headline_lines(result)
    return lines + warning_lines(result, verbose=verbose)


def warning_lines(result: CellResult, *, verbose: bool) -> list[Line]:
    """The result's warnings, one line each (the busy machine once: `_shown_warnings`)."""
    return [Line("warn", f"> [WARN] {w}") for w in _shown_warnings(result, verbose)]


def host_bound_finding(result: CellResult) -> Problem | None:
    """The diagnosis' host-bound verdict (one per cell at most), by its fields."""
    findings = result.diagnosis.findings if result.diagnosis is not None else []
    return next((f for f in findings if is_host_bound_verdict(f)), None)


def host_bound_lines(result: CellResult, *, verbose: bool) -> list[Line]:
    """The diagnosis' host-bound finding, before the rest of the diagnosis (a host-bound step
    is noisier: the reader learns why first); `verbose` adds its evidence and fix."""
    finding = host_bound_finding(result)
    if finding is None:
        return []
    lines = [Line("warn", f"> [ANALYSIS] {finding.title}")]
    if verbose:
        lines += [Line("info", f">      evidence: {item}") for item in finding.evidence]
        fix = diagnosis_problems.recommendation(finding.finding, diagnosis_problems.run_of(result))
        lines.append(Line("info", f">      fix: {fix}"))
    return lines


def _shown_warnings(result: CellResult, verbose: bool) -> list[str]:
    """The cell's warnings, less the busy-machine one where the diagnosis' [CAVEAT] line has
    already said it (its figures are in the result and behind -v): one machine, said once."""
    caveat = verdict_words.caveat(result.diagnosis)
    if verbose or caveat is None or not caveat.startswith("busy machine"):
        return [warning_words(w) for w in result.warnings]
    return [warning_words(w) for w in result.warnings if w.kind != "busy machine"]


def compile_lines(result: CellResult) -> list[Line]:
    """'Compile: 25.3 s of the cell's 61.2 s, in the warm-up': what torch.compile cost this
    cell's process (every cell is a fresh one; what an earlier cell of the experiment compiled
    is loaded from its compile cache), beside what the whole cell took; no line for an eager
    cell."""
    compile_s = result.warmup.compile_s if result.warmup is not None else None
    if compile_s is None:
        return []
    of_cell = f" of the cell's {format_value(result.wall_s, 'seconds')}" if result.wall_s else ""
    took = f"{format_value(compile_s, 'seconds')}{of_cell}"
    return [
        Line("info", f"> [INFO] Compile: {took}, in the warm-up (outside the measured windows)")
    ]


FIXED_COST_NAMES = {
    "process_start_s": "process start",
    "device_init_s": "CUDA context",
    "process_group_init_s": "process group",
    "model_build_s": "model build",
    "warmup_s": "warm-up",
}


# what a cell pays before its first step, less the warm-up (whose compile is said on its own)
START_UP_STAGES = tuple(name for name in FIXED_COST_NAMES if name != "warmup_s")


def fixed_cost_lines(result: CellResult) -> list[Line]:
    """'Fixed costs: process start 7.3 s, CUDA context 0.16 s, ...': what the cell paid before
    its first measured step, stage by stage as the result stores them (-v)."""
    costs = result.fixed_costs
    if costs is None:
        return []
    parts = [
        f"{label} {format_value(getattr(costs, name), 'seconds')}"
        for name, label in FIXED_COST_NAMES.items()
        if getattr(costs, name) is not None
    ]
    if not parts:
        return []
    compile_s = result.warmup.compile_s if result.warmup is not None else None
    if compile_s is not None:
        parts[-1] += f" (compile {format_value(compile_s, 'seconds')} of it)"
    return [Line("info", f"> [INFO] Fixed costs: {', '.join(parts)}")]


def sweep_time_line(results: list[CellResult]) -> str | None:
    """'time: 2 cell(s) in 107 s; compile 54 s, start-up 31 s (-v: each cell)': where a
    sweep's minutes went, from what each cell stored (start-up: process start, CUDA context,
    process group and model build); None when no cell stored a wall time."""
    walls = [r.wall_s for r in results if r.wall_s is not None]
    if not walls:
        return None
    compile_s = sum(r.warmup.compile_s or 0.0 for r in results if r.warmup is not None)
    start_s = sum(
        getattr(r.fixed_costs, name) or 0.0
        for r in results
        if r.fixed_costs is not None
        for name in START_UP_STAGES
    )
    parts = [
        f"{label} {format_value(value, 'seconds')}"
        for label, value in (("compile", compile_s), ("start-up", start_s))
        if value > 0
    ]
    spent = f"; {', '.join(parts)} (-v: each cell)" if parts else ""
    return f"time: {len(walls)} cell(s) in {format_value(sum(walls), 'seconds')}{spent}"


def headline_lines(result: CellResult) -> list[Line]:
    """The input pipeline (when it reads data), the telemetry and the price (when the config
    gave one) of an ok cell: the figures the result holds, nothing derived."""
    lines: list[Line] = []
    data = result.data
    if data is not None and data.source != "synthetic" and data.wait_s is not None:
        workers = f", {data.num_workers} worker(s) per rank" if data.num_workers else ""
        share = f" ({_pct(data.share)} of the step)" if data.share is not None else ""
        read = (
            f", read {megabytes_per_s(data.read_bytes_per_s)}"
            if data.read_bytes_per_s is not None
            else ""
        )
        waits = f"the slowest rank waits {_ms(data.wait_s)} per step{share}{read}"
        lines.append(Line("info", f"> [INFO] Data ({data.source}{workers}): {waits}"))
    if (figures := _telemetry_figures(result)) is not None:
        lines.append(Line("info", f"> [INFO] Telemetry: {figures}"))
    cost = result.cost
    if cost is not None and cost.cost_per_m_samples is not None and cost.per_gpu_hour:
        hour = "GPU-hour" if result.cell.device == "cuda" else "rank-hour"
        tokens = (
            f", {format_value(cost.cost_per_m_tokens, 'money')} per M tokens"
            if cost.cost_per_m_tokens is not None
            else ""
        )
        samples = f"{format_value(cost.cost_per_m_samples, 'money')} per M samples{tokens}"
        at = f"{format_value(cost.per_gpu_hour, 'money')} per {hour}"
        lines.append(Line("info", f"> [INFO] Cost: {samples} at {at}"))
    return lines


def _telemetry_figures(result: CellResult) -> str | None:
    """'GPU util 97 %, 350 W, max 71 °C, SM 1,980 MHz, 2.13 samples/J': what NVML sampled (a CPU
    cell's load is the busy-machine warning's, when it matters)."""
    t = result.telemetry
    if t is None:
        return None
    figures = (
        ("GPU util {:.0f} %", t.gpu_util_pct_mean),
        ("{:,.0f} W", t.power_w_mean),
        ("max {:.0f} °C", t.temperature_c_max),
        ("SM {:,.0f} MHz", t.sm_clock_mhz_mean),
        ("{:,.3g} samples/J", t.samples_per_joule),
    )
    return ", ".join(text.format(value) for text, value in figures if value is not None) or None
