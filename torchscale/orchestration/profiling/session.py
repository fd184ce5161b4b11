"""One profiled run of one cell: launch under the profiler, then analyse the traces.

A profiled run keeps everything in `<results>/<experiment>/profile/<cell_id>/`: the worker spec,
torchrun's logs, the run's own result (its measured windows, phase timings and straggler by
phase timers, taken before any profiled step), one trace per rank, and `analysis.json`. It never
writes into `cells/`, so profiling a cell after a sweep cannot change the sweep's results. The
traced steps' cost against the measured windows (torchscale/orchestration/profiling/overhead.py) is
one note (`profile.capture_overhead`) in the result's `profile.notes` and in the analysis' notes.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from torchscale.contracts.cell import Status
from torchscale.contracts.errors import (
    LaunchError,
    ResultsError,
    ToolNotFoundError,
    TorchScaleError,
    describe_os_error,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import say
from torchscale.contracts.wording.profile import note
from torchscale.contracts.worker_spec import DelaySpec, ProfileSpec
from torchscale.offline.results.directory_layout import ProfileRun
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.split_figures import with_split_reasons
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import ProfilingConfig
from torchscale.orchestration.launch.attempt import run_attempt
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.plan.planned import Plan, PlannedCell
from torchscale.orchestration.profiling.overhead import capture_overhead
from torchscale.orchestration.profiling.trigger import Selected

Tool = Literal["torch", "nsys"]
CONFIG_TOOL_KEY = "profiling.tool:"


@dataclass(frozen=True)
class ProfileRequest:
    """How to profile: which profiler, how many steps, what to analyse, any injected delay."""

    tool: Tool = "torch"
    wait_steps: int = 1
    warmup_steps: int = 2
    active_steps: int = 10
    record_shapes: bool = False
    with_stack: bool = False
    target: str = "sync_stalls"
    inject_delay: tuple[DelaySpec, ...] = ()


@dataclass
class ProfiledCell:
    """What one profiled run left: the run's result, the analysis (or why there is none)."""

    directory: Path
    result: CellResult
    analysis: ProfileAnalysis | None = None
    analysis_error: str | None = None
    notes: list[Finding] = field(default_factory=list)


def resolve_tool(requested: str, device: str, asked_by: str = "--tool") -> tuple[Tool, str | None]:
    """torch | nsys, from torch | nsys | auto, with a line saying why when auto chose: auto
    is torch.profiler, which runs wherever torch does; nsys only when asked for by name.
    `asked_by` names where the choice came from in messages: the flag, or the config key."""
    from torchscale.orchestration.profiling.nsys import find_nsys

    if requested == "torch":
        return "torch", None
    found = find_nsys()
    if requested == "nsys":
        if found is None:
            raise ToolNotFoundError(
                f"{asked_by} nsys: Nsight Systems (nsys) was not found on PATH or in "
                f"TORCHSCALE_NSYS; install it (docs/profiling.md) or use {asked_by} torch"
            )
        return "nsys", None
    # auto never takes nsys on its own: CUDA toolkits and NGC containers put nsys on PATH, and
    # a first profile should not ride a capture path that has not yet worked on this node
    if found is None:
        why = "no nsys found"
    elif device == "cuda":
        why = f"nsys is on PATH ({asked_by} nsys uses it)"
    else:
        why = "the cell runs on CPU"
    return "torch", f"{asked_by} auto: {why}: using torch.profiler"


def _prepare(directory: Path) -> None:
    """A fresh profile directory: traces of an earlier run must not mix with this one's."""
    try:
        if directory.exists():
            shutil.rmtree(directory)
        ProfileRun(directory).log_dir.mkdir(parents=True)
    except OSError as exc:
        raise ResultsError(f"cannot prepare {directory}: {describe_os_error(exc)}") from None


def _nsys_wrap(command: LaunchCommand, directory: Path) -> tuple[LaunchCommand, Finding | None]:
    """The torchrun launch inside `nsys profile` capturing only the profiled steps (the launch
    itself unchanged), and a note when the whole run must be captured instead."""
    from torchscale.orchestration.profiling.nsys import (
        cpu_nvtx_records,
        default_capture,
        find_nsys,
        wrap_launch,
    )

    nsys = find_nsys()
    if nsys is None:
        raise LaunchError("Nsight Systems (nsys) disappeared between planning and launch")
    gpu = "CUDA_VISIBLE_DEVICES" in command.env_overrides
    records, why = (True, None) if gpu else cpu_nvtx_records()
    capture = default_capture(gpu, records)
    why_dump = why.model_dump() if why else None
    whole = note("profile.whole_run", why=why_dump) if capture == "none" else None
    wrapped = wrap_launch(
        command, nsys, directory / "capture", gpu=gpu, capture=capture, tmp_dir=directory / "tmp"
    )
    return wrapped, whole


def launch_profiled(
    planned: PlannedCell, store: ResultStore, base_env: Mapping[str, str], request: ProfileRequest
) -> ProfiledCell:
    """Run `planned` once with the profiler on every rank; analyse what it wrote."""
    files = store.profile_run(planned.cell.id)
    directory = files.directory
    _prepare(directory)
    spec = planned.worker_spec(
        files.result_path, files.steps_path, store.peak_search_dirs
    ).model_copy(
        update={
            "profile": ProfileSpec(
                tool=request.tool,
                wait=request.wait_steps,
                warmup=request.warmup_steps,
                active=request.active_steps,
                record_shapes=request.record_shapes,
                with_stack=request.with_stack,
                trace_dir=str(directory),
            ),
            "inject_delay": list(request.inject_delay),
        }
    )
    spec_path = store.write_text(files.spec_path, spec.model_dump_json(indent=2))
    shared = planned.sharing_compile_cache(store.compile_cache_dir)  # the sweep's compiles
    command = shared.command(spec_path, files.log_dir, base_env)
    notes: list[Finding] = []
    if request.tool == "nsys":
        command, capture_note = _nsys_wrap(command, directory)
        notes += [capture_note] if capture_note else []
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # the directory was emptied before the launch: a result.json here is this launch's, and
    # is kept even when the ranks then hung in their shutdown (as a sweep keeps it); None when
    # rank 0 wrote none (or none that reads)
    path = files.result_path
    attempt = run_attempt(
        command, planned.launch.timeout_s, lambda: read_cell(path).doc if path.exists() else None
    )
    outcome = attempt.outcome
    if attempt.written is None:
        assert attempt.failure is not None
        failure = attempt.failure
        result = CellResult(cell=planned.cell, status=failure.status, error=failure.as_error())
    else:
        result = attempt.written
        result.warnings = result.warnings + attempt.warnings
    result.started_at = started
    result.wall_s = round(outcome.wall_s, 3)
    result.launch = {"argv": command.argv, "env": command.env_overrides}
    if result.status == Status.OK:  # the traced steps' overhead (or why none) as a note
        overhead, why_not = capture_overhead(result, directory, request.tool)
        unknown = note("profile.overhead_unknown", why=why_not.model_dump() if why_not else None)
        notes.append(overhead.note() if overhead else unknown)
    profiled = ProfiledCell(directory, result, notes=notes)
    if result.profile is not None:
        result.profile.notes = [*result.profile.notes, *profiled.notes]
    store.write_text(files.result_path, result.model_dump_json(indent=2))
    if result.status != Status.OK:
        profiled.analysis_error = failed_run_reason(result, command.log_path)
        return profiled
    analyse_into(profiled, request)
    if profiled.analysis is not None and profiled.analysis.diagnosis is not None:
        # one diagnosis per run: the result holds the analysis' (traces and phase timers
        # together), not a second one of its phase timers alone
        profiled.result = with_diagnosis(result, profiled.analysis.diagnosis)
        store.write_text(files.result_path, profiled.result.model_dump_json(indent=2))
    return profiled


LOG_LINE_CHARS = 200
# a raised exception's own line ("RuntimeError: ..."): the last one is what ended the run
_RAISED = re.compile(r"\b\w*(?:Error|Exception)\b: ")
# else a line that says so in words ("Agent launcher failed."), never a warning's
_SAYS_ERROR = re.compile(r"\b(?:error|failed|fatal)\b", re.IGNORECASE)
_WARNING = re.compile(r"\bwarn(?:ing)?\b|^W\d{4} ", re.IGNORECASE)


def failed_run_reason(result: CellResult, log: Path) -> str:
    """Why a profiled run left no traces, in one line: its failure's reason, the first error
    line of torchrun's log where the reason lacks it (a profiler that fails before the ranks
    start, e.g. nsys's "Agent launcher failed.", is said only there), and the log's path."""
    error = result.error
    reason = say(error.finding) if error is not None else f"status {result.status.value}"
    line, quoted = first_error_line(log), (error.exception if error else None) or ""
    said = f"; its log says: {line}" if line is not None and line not in quoted else ""
    return f"the profiled run failed, no traces to analyse: {reason}{said} (log: {log})"


def first_error_line(log: Path) -> str | None:
    """The line of `log` that says what went wrong, stripped and cut to LOG_LINE_CHARS: the
    last raised exception's line ('RuntimeError: ...'), else the first line saying error,
    failed or fatal that is not a warning (c10d's connect retries, torchelastic's notes);
    None when there is none or the log cannot be read."""
    raised: str | None = None
    said: str | None = None
    try:
        with log.open(encoding="utf-8", errors="replace") as handle:
            for raw in handle:
                line = raw.strip()
                if _WARNING.search(line):
                    continue
                if _RAISED.search(line):
                    raised = line
                elif said is None and _SAYS_ERROR.search(line):
                    said = line
    except OSError:
        return None
    found = raised or said
    return found[:LOG_LINE_CHARS] if found is not None else None


def with_diagnosis(result: CellResult, diagnosis: Diagnosis) -> CellResult:
    """The run's result holding `diagnosis` (the analysis' own, which already carries the run's
    no_sync window: `analyze_directory`), its unavailable reasons read off it, so the file
    gives one answer per question."""
    return result.model_copy(
        update={"diagnosis": diagnosis, "unavailable": with_split_reasons(result, diagnosis)}
    )


def analyse_into(profiled: ProfiledCell, request: ProfileRequest) -> None:
    """Analyse the traces of a finished profiled run and store analysis.json beside them."""
    from torchscale.orchestration.profiling.analyze import analyze_directory, write_analysis

    directory = profiled.directory
    try:
        if request.tool == "nsys":
            from torchscale.orchestration.profiling.nsys import (
                expect_report,
                export_sqlite,
                find_nsys,
            )

            nsys = find_nsys()
            if nsys is None:
                raise LaunchError("Nsight Systems (nsys) is no longer found: cannot export")
            export_sqlite(nsys, expect_report(directory / "capture"))
        analysis = analyze_directory(
            directory,
            target=request.target,
            tool=request.tool,
            strategy=profiled.result.cell.strategy,
            cell=profiled.result,
        )
    except TorchScaleError as exc:
        profiled.analysis_error = "; ".join(exc.lines())
        return
    analysis.notes += [n for n in profiled.notes if n not in analysis.notes]
    write_analysis(analysis, ProfileRun(directory).analysis_path)
    profiled.analysis = analysis


def request_from_config(
    settings: ProfilingConfig, device: str
) -> tuple[ProfileRequest, str | None]:
    """The request a sweep's `profiling:` section makes for a cell on `device`."""
    tool, note = resolve_tool(settings.tool, device, asked_by=CONFIG_TOOL_KEY)
    return ProfileRequest(
        tool=tool,
        warmup_steps=settings.warmup_steps,
        active_steps=settings.steps,
        record_shapes=settings.record_shapes,
        with_stack=settings.with_stack,
    ), note


def profile_after_sweep(
    plan: Plan,
    store: ResultStore,
    base_env: Mapping[str, str],
    results: Sequence[CellResult],
    on_start: Callable[[Selected, str | None, int, int], None] | None = None,
    on_done: Callable[[Selected, ProfiledCell, int, int], None] | None = None,
) -> list[tuple[Selected, ProfiledCell]]:
    """Profile the cells the config's trigger selects, one after another, after the sweep.
    `on_start(selected, note, index, total)` before each run (a note on the tool chosen;
    index from 0 of `total` runs), `on_done(selected, profiled, index, total)` after it: where
    the profiles stand, for a progress display."""
    from torchscale.orchestration.profiling.trigger import select_for_profiling

    settings = plan.profiling
    # a user's job is not torchscale's worker: its cells are not profiled here
    by_id = {planned.cell.id: planned for planned in plan.cells if planned.job is None}
    chosen = [
        (selected, by_id[selected.cell_id])
        for selected in select_for_profiling(results, settings)
        if selected.cell_id in by_id
    ]
    done = []
    for index, (selected, planned) in enumerate(chosen):
        request, note = request_from_config(settings, planned.cell.device)
        if on_start is not None:
            on_start(selected, note, index, len(chosen))
        profiled = launch_profiled(planned, store, base_env, request)
        done.append((selected, profiled))
        if on_done is not None:
            on_done(selected, profiled, index, len(chosen))
    return done
