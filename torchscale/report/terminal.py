"""Terminal rendering of a sweep: per-cell lines, the plan of a dry run, a table per model.

Each line carries its level (info, warn, fail, skip), chosen from the data, so the CLI colours
by level and never by searching the text; the tables are built from the flat cells table that
`torchscale.results.load` returns, so `report` renders the same numbers.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from torchscale.cell import CellIdentity, Status
from torchscale.flop_convention import MFU_CONVENTION_SHORT
from torchscale.plan import Plan, PlannedCell
from torchscale.report.diagnosis_text import diagnosis_lines
from torchscale.report.estimates import lopsided, plus_minus
from torchscale.report.fit import FitColumn, fit_table
from torchscale.report.render.formatting import format_value
from torchscale.report.terminal_lines import LEVEL_STYLE, Level, Line
from torchscale.results.store import ResultStore
from torchscale.schema.cell_result import CellResult

if TYPE_CHECKING:
    import pandas as pd

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
    nodes = f" ({cell.nodes} nodes)" if cell.nodes > 1 else ""
    layout = cell.parallel.slug(cell.strategy) if cell.parallel else cell.strategy
    return f"{cell.label} b{cell.batch_size} x{cell.world_size}{nodes} {cell.precision} {layout}"


def running_line(planned: PlannedCell, position: str | None = None) -> Line:
    """'> Running ... (Batch 4, fp32, ddp)...', then where the sweep stands when given
    (`position`: 'cell 2/6, 1m05s elapsed, ETA 3m10s', torchscale.report.progress)."""
    cell = planned.cell
    spread = f" over {cell.nodes} nodes" if cell.nodes > 1 else ""
    layout = cell.parallel.slug(cell.strategy) if cell.parallel else cell.strategy
    where = f" {position}" if position else ""
    return Line(
        "info",
        f"> Running {cell.label} on {ranks_text(cell.world_size, cell.device)}{spread} "
        f"(Batch {cell.batch_size}, {cell.precision}, {layout})...{where}",
    )


def reused_line(result: CellResult) -> Line:
    return Line(
        "info", f"> [INFO] {cell_name(result.cell)}: ok in a previous run (--resume), not rerun"
    )


PART_LABELS = {
    "compute": "compute",
    "data": "data",
    "wait_for_peers": "waiting for peers",
    "exposed_transfer": "exposed transfer",
    "rest": "rest",
}


def _pct(value: float) -> str:
    """One decimal, two below 1 % (a '±0.0%' would hide that the interval was measured)."""
    return f"{value * 100:.2f}%" if abs(value) < 0.01 else f"{value * 100:.1f}%"


def _ms(value: float) -> str:
    return f"{value * 1e3:.1f}ms"


def cell_lines(result: CellResult, *, verbose: bool = False) -> list[Line]:
    """The published per-cell lines (throughput, latency) with their intervals, then the
    run's diagnosis (`report/diagnosis_text.py`; `verbose` adds its cross-checks), then
    warnings."""

    if result.status is not Status.OK:
        tag = "SKIP" if result.status is Status.SKIPPED else "FAIL"
        reason = result.error.reason if result.error else ""
        return [Line(STATUS_LEVEL[result.status], f"> [{tag}] {result.status}: {reason}")]
    thr, steps, intervals = result.throughput, result.step_time, result.intervals
    lines: list[Line] = []
    if thr is not None:
        unit = "img/sec" if result.model_kind == "vision" else "samples/sec"
        tokens = f" ({thr.tokens_per_s:,.0f} tokens/sec)" if thr.tokens_per_s else ""
        figure = f"{thr.samples_per_s:,.0f}"
        if intervals is not None:
            figure = plus_minus(intervals.samples_per_s, lambda v: f"{v:,.0f}")
        lines.append(Line("info", f"> [INFO] Average Throughput: {figure} {unit}{tokens}"))
    if steps is not None:
        p50, p95 = _ms(steps.p50), _ms(steps.p95)
        if intervals is not None:
            p50, p95 = plus_minus(intervals.step_p50_s, _ms), plus_minus(intervals.step_p95_s, _ms)
        lines.append(Line("info", f"> [INFO] Iteration Latency: {p50} (p95 {p95})"))
    if result.cell.world_size > 1 or result.diagnosis is not None:
        lines += diagnosis_lines(
            result.diagnosis, result.unavailable.get("diagnosis"), verbose=verbose
        )
    lines += compile_lines(result)
    lines += headline_lines(result)
    lines += [Line("warn", f"> [WARN] {w}") for w in result.warnings]
    return lines


def compile_lines(result: CellResult) -> list[Line]:
    """'Compile: 25.3 s of the cell's 61.2 s, in the warm-up': what torch.compile cost this
    cell's process (every cell is a fresh one; what an earlier cell of the experiment compiled
    is loaded from its compile cache), beside what the whole cell took; no line for an eager
    cell."""
    compile_s = result.warmup.compile_s if result.warmup is not None else None
    if compile_s is None:
        return []
    of_cell = f" of the cell's {format_value(result.wall_s, 'seconds')}" if result.wall_s else ""
    return [
        Line(
            "info",
            f"> [INFO] Compile: {format_value(compile_s, 'seconds')}{of_cell}, in the warm-up "
            "(outside the measured windows)",
        )
    ]


def headline_lines(result: CellResult) -> list[Line]:
    """The input pipeline (when it reads data), the telemetry and the price (when the config
    gave one) of an ok cell: the figures the result holds, nothing derived."""
    lines: list[Line] = []
    data = result.data
    if data is not None and data.source != "synthetic" and data.wait_s is not None:
        workers = f", {data.num_workers} worker(s) per rank" if data.num_workers else ""
        share = f" ({_pct(data.share)} of the step)" if data.share is not None else ""
        read = (
            f", read {data.read_bytes_per_s / 1e6:,.0f} MB/s"
            if data.read_bytes_per_s is not None
            else ""
        )
        lines.append(
            Line(
                "info",
                f"> [INFO] Data ({data.source}{workers}): the slowest rank waits "
                f"{_ms(data.wait_s)} per step{share}{read}",
            )
        )
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
        lines.append(
            Line(
                "info",
                f"> [INFO] Cost: {format_value(cost.cost_per_m_samples, 'money')} per M "
                f"samples{tokens} at {format_value(cost.per_gpu_hour, 'money')} per {hour}",
            )
        )
    return lines


def _telemetry_figures(result: CellResult) -> str | None:
    """'GPU util 97%, 350 W, max 71 °C, SM 1,980 MHz, 2.13 samples/J': what NVML sampled (a CPU
    cell's load is the busy-machine warning's, when it matters)."""
    t = result.telemetry
    if t is None:
        return None
    figures = []
    if t.gpu_util_pct_mean is not None:
        figures.append(f"GPU util {t.gpu_util_pct_mean:.0f}%")
    if t.power_w_mean is not None:
        figures.append(f"{t.power_w_mean:,.0f} W")
    if t.temperature_c_max is not None:
        figures.append(f"max {t.temperature_c_max:.0f} °C")
    if t.sm_clock_mhz_mean is not None:
        figures.append(f"SM {t.sm_clock_mhz_mean:,.0f} MHz")
    if t.samples_per_joule is not None:
        figures.append(f"{t.samples_per_joule:,.3g} samples/J")
    return ", ".join(figures) or None


def plan_lines(
    plan: Plan,
    store: ResultStore,
    base_env: Mapping[str, str],
    reused: Collection[str] = (),
) -> list[Line]:
    """What --dry-run shows: every cell's exact argv and environment, what is skipped and why,
    what --resume keeps (`reused`), and the estimate of what is left to run."""
    lines = [Line("info", f"note: {note}") for note in plan.notes]
    for i, planned in enumerate(plan.cells, 1):
        cell_id = planned.cell.id
        lines.append(Line("head", f"{i}. {cell_id}"))
        if planned.skip_reason:
            lines.append(Line("skip", f"   skip: {planned.skip_reason}"))
            continue
        if cell_id in reused:
            lines.append(Line("skip", "   reuse: ok in a previous run (--resume), not rerun"))
            continue
        shared = planned.sharing_compile_cache(store.compile_cache_dir)  # as run_cell runs it
        command = shared.command(store.spec_path(cell_id), store.log_dir(cell_id), base_env)
        env = " ".join(f"{k}={v}" for k, v in sorted(command.env_overrides.items()))
        lines.append(Line("info", f"   argv: {shlex.join(command.argv)}"))
        lines.append(
            Line("info", f"   env:  {env} (+ inherited, minus RANK/MASTER_*/PET_*/TORCHELASTIC_*)")
        )
        lines += [Line("warn", f"   warn: {w}") for w in planned.warnings]
    to_run = [p for p in plan.runnable if p.cell.id not in reused]
    estimate = plan.estimate(to_run)
    kept = f", {len(plan.runnable) - len(to_run)} reused (--resume)" if reused else ""
    lines.append(
        Line(
            "info",
            f"{len(to_run)} cell(s) to run{kept}, {len(plan.cells) - len(plan.runnable)} "
            f"skipped; estimated >= {estimate.seconds:.0f} s ({estimate.basis}); each cell is "
            f"killed after {plan.launcher.cell_timeout_s:g} s",
        )
    )
    profiling = plan.profiling
    if profiling.enabled:
        which = (
            "every ok cell"
            if profiling.trigger == "always"
            else f"ok cells whose exposed communication or wait for the slowest rank reaches "
            f"{profiling.stall_threshold:.0%} of the step, or whose step-time CV reaches "
            f"{profiling.variance_threshold:.2f}"
        )
        lines.append(
            Line(
                "info",
                f"after the sweep: profile {which} with {profiling.tool} "
                f"({profiling.steps} traced step(s) per rank) into profile/<cell_id>/",
            )
        )
    lines += _comm_plan_lines(plan, store, base_env)
    memory = plan.memory
    if memory.max_batch_search:
        from torchscale.memory.max_batch_runs import search_groups

        groups = search_groups(plan)
        lines.append(
            Line(
                "info",
                f"after the cells: max batch search for {len(groups)} group(s) (model, world "
                f"size, precision, strategy), batch up to {memory.max_batch_limit}, one torchrun "
                f"of {memory.probe_steps} step(s) per probe, into max_batch/",
            )
        )
    return lines


def _comm_plan_lines(plan: Plan, store: ResultStore, base_env: Mapping[str, str]) -> list[Line]:
    """The config's `comm:` section as --dry-run shows it: one torchrun per world size."""
    from torchscale.comm.from_config import comm_requests
    from torchscale.comm.sweep_launch import comm_launch, new_run_id

    lines: list[Line] = []
    for request in comm_requests(plan):
        launch = comm_launch(request, store.root, base_env, new_run_id(request))
        lines.append(
            Line(
                "info",
                f"after the cells: {', '.join(request.ops)} on {request.ranks} rank(s), "
                f"{len(launch.spec.sizes)} size(s) into comm/",
            )
        )
        lines.append(Line("info", f"   argv: {shlex.join(launch.command.argv)}"))
    return lines


def _missing(value: Any) -> bool:
    """None or NaN (pandas fills missing figures with NaN)."""
    return value is None or value != value


def _fmt(value: Any, spec: str, scale: float = 1.0) -> str:
    if _missing(value):
        return "-"
    return format(float(value) * scale, spec)


# the per-model table: what may be abbreviated or left out when the terminal is narrow
# (torchscale.report.fit), lowest value first; what each column means goes in the note
TABLE_COLUMNS = (
    FitColumn("world", fact="world"),
    FitColumn("batch", fact="batch"),
    FitColumn("prec/strat", justify="left", fact=""),
    FitColumn("samples/s"),
    FitColumn("/device", short="/dev", drop=1, why_dropped="samples/s / world"),
    FitColumn("p50|p95 ms", short="p50|p95", drop=6),
    FitColumn("scaling", short="eff", drop=5),
    FitColumn("comm", drop=4),
    FitColumn("MFU", drop=3),
    FitColumn("peak MiB", short="MiB", drop=2),
    FitColumn("status", justify="left"),
)
COLUMN_NOTES = {
    "/device": "samples/s per device (GPU or CPU rank)",
    "samples/s": "median of repeats ± half its 95 % interval ([low, high] where lopsided)",
    "p50|p95 ms": "step time, milliseconds",
    "scaling": "scaling efficiency, '≈100%' linear within noise, 'no base' where no smaller "
    "world size was measured in its group",
    "comm": "exposed transfer share of the step (step model), '<x%' when not measurable "
    "above noise",
    "MFU": f"from the timed windows, {MFU_CONVENTION_SHORT}",
    "peak MiB": "CUDA peak allocated on GPUs, largest process peak RSS of any rank on CPU",
}
TABLE_NOTE_END = "'-': not measured here (reasons in cells/*.json 'unavailable')"
TABLE_NOTE = (
    "; ".join(f"{column}: {note}" for column, note in COLUMN_NOTES.items()) + "; " + TABLE_NOTE_END
)


@dataclass(frozen=True)
class SweepTables:
    """One table per model, sized to the terminal, and the note that explains them."""

    tables: list[Table]
    note: str


def _throughput(r: pd.Series) -> str:
    value, low, high = r["samples_per_s"], r.get("samples_per_s_low"), r.get("samples_per_s_high")
    if _missing(value) or _missing(low) or _missing(high):
        return _fmt(value, ",.0f")
    value, low, high = float(value), float(low), float(high)
    if lopsided(value, low, high):
        return f"{value:,.0f} [{low:,.0f}, {high:,.0f}]"
    return f"{value:,.0f}±{(high - low) / 2:,.0f}"


def _scaling(r: pd.Series) -> str:
    """Efficiency; above 1 only when its whole interval is (else linear within noise); 'no
    base' where the cell's group has no smaller world size to scale from."""
    value, low = r["scaling_efficiency"], r.get("scaling_efficiency_low")
    if _missing(value) and str(r.get("scaling_efficiency_reason") or "").startswith("no base"):
        return "no base"
    if not _missing(value) and float(value) > 1 and (_missing(low) or float(low) <= 1):
        return "≈100%"
    return _fmt(value, ".0%")


def _comm(r: pd.Series) -> str:
    """The step model's exposed transfer share; '<x%' when not measurable above noise."""
    value, high = r.get("exposed_transfer_share"), r.get("exposed_transfer_share_high")
    if _missing(value) and not _missing(high):
        return f"<{float(high):.0%}"
    if _missing(value):
        value = r["comm_overhead"]
        if not _missing(value) and not 0 <= float(value) <= 1:
            return "noise"  # an older result's point value outside its domain
    return _fmt(value, ".0%")


def _row_cells(r: pd.Series) -> list[str]:
    gpu_mem = r["peak_allocated_bytes"]
    mem = r["peak_rss_bytes"] if _missing(gpu_mem) else gpu_mem
    status = Status(r["status"])
    style = LEVEL_STYLE[STATUS_LEVEL[status]] or "green"
    nodes = r.get("nodes", 1)
    spread = f" ({int(nodes)}n)" if not _missing(nodes) and int(nodes) > 1 else ""
    return [
        f"{r['world_size']}{spread}",
        str(r["batch_size"]),
        escape(f"{r['precision']}/{r.get('layout') or r['strategy']}"),
        _throughput(r),
        _fmt(r["samples_per_s_per_device"], ",.0f"),
        f"{_fmt(r['step_p50_s'], '.1f', 1e3)}|{_fmt(r['step_p95_s'], '.1f', 1e3)}",
        _scaling(r),
        _comm(r),
        _fmt(r["mfu"], ".1%"),
        _fmt(mem, ",.0f", 2**-20),
        f"[{style}]{status}[/]",
    ]


def model_tables(table: pd.DataFrame, width: int) -> SweepTables:
    """One rich table per model from the flat cells table (results.frame.cells_table), each
    at most `width` columns wide (torchscale.report.fit: figures are never cut; columns are
    abbreviated or left out, and the note says which)."""
    models = [
        (str(model), [[Text.from_markup(c) for c in _row_cells(r)] for _, r in rows.iterrows()])
        for model, rows in table.groupby("model_label", sort=False)
    ]
    fitted = fit_table(TABLE_COLUMNS, [row for _, rows in models for row in rows], width)
    tables = [fitted.table(rows, title=model) for model, rows in models]
    shown = {c.header: fitted.label(c) for c in fitted.shown}
    explained = [f"{shown[c]}: {note}" for c, note in COLUMN_NOTES.items() if c in shown]
    note = "; ".join([*explained, TABLE_NOTE_END, *fitted.notes("summary.csv has every column")])
    return SweepTables(tables, note)
