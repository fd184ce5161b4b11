"""The traced window of a user's job, on the host: the launch line under `nsys profile` when
asked, and the ranks' traces analysed by the built-in profile's own steps (session.py's
`analyse_into`: the same reader, the same combine, the same capture overhead) once the job
ended. The job's verdict stays its measured steps' (every rank's timers over every measured
step, as a built-in cell's): a traced window of a few steps holds one occurrence of work done
every Nth step, or none; its analysis is the detail beside it (analysis.json). Only where the
timers cannot split the step (FSDP's communication inside forward and backward) is the
traces' diagnosis the job's, the one evidence that separates them.

The ranks' folder is laid out as a built-in profile run's folder (`ProfileRun`): each rank's
`rank<k>.trace.json.gz` (or nsys's `capture.nsys-rep` and its SQLite export) and
`rank<k>.phases.json`, the run's `result.json` and `steps.jsonl` (its measured windows, which
the traced steps are judged against), and `analysis.json`; so `torchscale profile analyze`
of that folder reads it as it reads a built-in run's and gives the same verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.errors import ToolNotFoundError, UsageError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult, ProfileRecord
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.offline.results.directory_layout import ProfileRun
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.rank.own_job import PROFILER_WARMUP, TRACE_NOTE_FILE

if TYPE_CHECKING:
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.orchestration.own_job.command import OwnJobRequest
    from torchscale.orchestration.own_job.run import Launched
    from torchscale.rank.worker.measure import RankMeasurement

CAPTURE_BASE = "capture"  # nsys writes <ranks>/capture.nsys-rep, as in a built-in profile run
NSYS_TMP = "nsys-tmp"  # beside the ranks' folder: that one is emptied before the launch


def refuse_nsys(gpu_count: int, env: Mapping[str, str]) -> None:
    """`--tool nsys` with a command: one line and a non-zero exit where it cannot capture the
    window (no CUDA GPU: the capture starts at cudaProfilerStart; no nsys)."""
    from torchscale.orchestration.profiling.nsys import find_nsys, nsys_unavailable_reason

    if gpu_count < 1:
        raise UsageError(
            "--tool nsys with a command needs a CUDA GPU: nsys captures the traced steps from "
            "cudaProfilerStart, which a CPU rank cannot call (use --tool torch)"
        )
    if find_nsys(env) is None:
        raise ToolNotFoundError(f"--tool nsys: {nsys_unavailable_reason(env)}")


def under_nsys(command: LaunchCommand, directory: Path, env: Mapping[str, str]) -> LaunchCommand:
    """The user's launch line inside `nsys profile --capture-range=cudaProfilerApi
    --capture-range-end=stop ...` (nsys.py's argv, as the built-in profile wraps torchrun),
    its report written into the ranks' folder."""
    from torchscale.contracts.errors import LaunchError
    from torchscale.orchestration.profiling.nsys import find_nsys, wrap_launch

    nsys = find_nsys(env)
    if nsys is None:
        raise LaunchError("Nsight Systems (nsys) disappeared before the launch")
    ranks = ranks_dir(command)
    return wrap_launch(
        command,
        nsys,
        ranks / CAPTURE_BASE,
        gpu=True,
        capture="cudaProfilerApi",
        tmp_dir=directory / NSYS_TMP,
    )


def with_traces(result: CellResult, launched: Launched, request: OwnJobRequest) -> CellResult:
    """`run_own_job`'s `traced`: the result with its window's analysis (`analyse_window`), the
    ranks' reasons for no trace among its warnings; the analysis' own failure is a warning,
    never the run's."""
    from torchscale.orchestration.own_job.run import combined

    folder = ranks_dir(launched.command)
    skipped = trace_notes(folder)
    traced, _, why_not = analyse_window(result, combined([launched]), request, folder)
    if why_not is not None:  # the host's analysis, not one rank's
        figures = {"rank": None, "error": why_not}
        skipped.append(Finding(code="own_job.trace_failed", figures=figures))
    found = [CellWarning.of("other", n.code, dict(n.figures)) for n in skipped]
    traced.warnings = [*traced.warnings, *found]
    return traced


def ranks_dir(command: LaunchCommand) -> Path:
    from torchscale.rank.own_job import ENV_DIR

    return Path(command.env_overrides[ENV_DIR])


def trace_notes(folder: Path) -> list[Finding]:
    """Why ranks have no trace (`rank<k>.trace_note.json`: unavailable.own_profiler,
    own_job.trace_failed), by rank; an unreadable note is left out."""
    notes = []
    for path in sorted(folder.glob(TRACE_NOTE_FILE.format(rank="*"))):
        try:
            notes.append(Finding.model_validate(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            continue
    return notes


def analyse_window(
    result: CellResult,
    ranks: list[RankMeasurement],
    request: OwnJobRequest,
    folder: Path,
) -> tuple[CellResult, ProfileAnalysis | None, str | None]:
    """The job's result with its profile record (the verdict stays the measured steps', or the
    traces' where the timers have none), the traces' analysis, and why there is none. Writes
    the ProfileRun files into `folder` (module docstring)."""
    from torchscale.contracts.atomic import write_text_atomic
    from torchscale.contracts.wording.profile import note
    from torchscale.orchestration.profiling.overhead import capture_overhead
    from torchscale.orchestration.profiling.session import (
        ProfiledCell,
        ProfileRequest,
        analyse_into,
        with_diagnosis,
    )
    from torchscale.rank.worker.aggregate import step_records

    layout = ProfileRun(folder)
    skipped = trace_notes(folder)
    notes = list(skipped)
    files = sorted(p.name for p in folder.glob("rank*.trace.json.gz"))
    files += sorted(p.name for p in folder.glob(f"{CAPTURE_BASE}.nsys-rep"))
    overhead, why_not = capture_overhead(result, folder, request.tool)
    unknown = note("profile.overhead_unknown", why=why_not.model_dump() if why_not else None)
    notes.append(overhead.note() if overhead is not None else unknown)
    result = result.model_copy(
        update={
            "profile": ProfileRecord(
                tool=request.tool,
                trace_dir=str(folder),
                wait=0,
                warmup=PROFILER_WARMUP,
                active=request.trace_steps,
                files=files,
                capture_s=None,
                notes=list(notes),
            )
        }
    )
    write_text_atomic(layout.steps_path, step_records(ranks))
    write_text_atomic(layout.result_path, result.model_dump_json(indent=2))
    if not files:  # each rank's own reason is said already; else this is the reason
        return result, None, None if skipped else "no rank wrote a trace"
    profiled = ProfiledCell(folder, result, notes=notes)
    analyse_into(profiled, ProfileRequest(tool="nsys" if request.tool == "nsys" else "torch"))
    if profiled.analysis is None or profiled.analysis.diagnosis is None:
        return result, profiled.analysis, profiled.analysis_error
    if result.diagnosis is None:  # FSDP: only the traces split compute from communication
        result = with_diagnosis(result, profiled.analysis.diagnosis)
        write_text_atomic(layout.result_path, result.model_dump_json(indent=2))
    return result, profiled.analysis, None
