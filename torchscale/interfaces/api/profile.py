"""`run_profile` and `analyze_traces`: what `torchscale profile` and `torchscale profile analyze
DIR` do, each in one call returning typed results (docs/profiling.md). Neither prints: the notes
for the user (device, model, world size, profiler) come back in the result and through
`on_start`, before the ranks launch."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.cell import Status
from torchscale.contracts.errors import TraceError, TraceInputError
from torchscale.orchestration.profiling.standalone import (
    ProfileOptions,
    ProfilePlan,
    Target,
    plan_profile,
)

if TYPE_CHECKING:
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.orchestration.profiling.session import ProfiledCell

__all__ = ["ProfileOptions", "ProfileRun", "TraceAnalysis", "analyze_traces", "run_profile"]


@dataclass(frozen=True)
class ProfileRun:
    """One profiled run: what was chosen (`plan`), what ran and its analysis (`profiled`).
    `exit_code` is the command's: 1 when the run failed or its traces gave no analysis."""

    plan: ProfilePlan
    profiled: ProfiledCell

    @property
    def exit_code(self) -> int:
        ok = self.profiled.result.status == Status.OK and self.profiled.analysis is not None
        return 0 if ok else 1


def run_profile(
    options: ProfileOptions | None = None,
    output_dir: Path | str = "results",
    *,
    env: Mapping[str, str] | None = None,
    on_start: Callable[[ProfilePlan], None] | None = None,
) -> ProfileRun:
    """Profile one cell as `torchscale profile` does; results go to
    OUTPUT_DIR/<options.name>/profile/<cell>/ (the run's result, traces, analysis.json).
    `env`: what the ranks inherit (default: this process's environment)."""
    from torchscale.offline.results.store import ResultStore, check_output_dir
    from torchscale.orchestration.profiling.session import launch_profiled
    from torchscale.orchestration.schedulers.local.launcher import machine_here

    plan = plan_profile(options or ProfileOptions(), machine_here())
    store = ResultStore.for_experiment(Path(output_dir), plan.config.experiment_name)
    check_output_dir(store.root)
    ranks_env = os.environ if env is None else env
    if plan.planned.skip_reason is None and plan.planned.training.compile:
        # as `benchmark` does: without a toolchain the compiled cell fails at its first step
        # with inductor's traceback; refuse in one line (ToolNotFoundError) before launching
        from torchscale.orchestration.validate.compile_toolchain import require_toolchain

        checked = require_toolchain(
            {plan.planned.cell.device}, ranks_env, cache_dir=store.compile_cache_dir
        )
        ranks_env = checked.env  # a node-local cache when the experiment's cannot hold one
        if checked.fallback is not None:
            plan.notes.append(checked.fallback)
    if on_start is not None:
        on_start(plan)
    profiled = launch_profiled(plan.planned, store, ranks_env, plan.request)
    return ProfileRun(plan, profiled)


@dataclass(frozen=True)
class TraceAnalysis:
    """`analyze_traces`' answer: the analysis, and where it was saved (None: the trace
    directory is not writable and no `output` was given)."""

    analysis: ProfileAnalysis
    saved: Path | None
    destination: Path


def analyze_traces(
    trace_dir: Path | str, *, target: Target = "sync_stalls", output: Path | str | None = None
) -> TraceAnalysis:
    """Analyse one trace per rank (Kineto JSON or Nsight Systems SQLite) from any PyTorch job;
    save analysis.json to `output` (default: TRACE_DIR/analysis.json, skipped when that
    directory is read-only; an unwritable `output` is an error). A torchscale profile folder
    is analysed with its run's result.json, as the profiled run was: its measured windows are
    the untraced steps the traced ones are judged against."""
    from torchscale.offline.results.directory_layout import ProfileRun
    from torchscale.offline.results.documents import read_cell
    from torchscale.orchestration.profiling.analyze import analyze_directory, write_analysis

    directory = Path(trace_dir)
    run = ProfileRun(directory).result_path
    cell = read_cell(run).doc if run.is_file() else None
    if cell is not None and cell.status is not Status.OK:
        cell = None
    try:
        analysis = analyze_directory(
            directory,
            target=target,
            tool=cell.profile.tool if cell is not None and cell.profile is not None else None,
            strategy=cell.cell.strategy if cell is not None else None,
            cell=cell,
        )
    except TraceError as exc:  # the traces named are the input: unusable ones exit 2
        if isinstance(exc, TraceInputError):
            raise
        raise TraceInputError(str(exc)) from None
    destination = Path(output) if output is not None else ProfileRun(directory).analysis_path
    saved = write_analysis(analysis, destination, required=output is not None)
    return TraceAnalysis(analysis, saved, destination)
