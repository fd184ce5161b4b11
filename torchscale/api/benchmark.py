"""`run_benchmark`: a whole benchmark in one call, returning typed results (docs/python-api.md).

It is what `torchscale benchmark` does with a local launcher: plan the config's
cells, run the sweep, then the suites the config turns on (the collective sweep, the max-batch
search, profiles of the cells its trigger selects), and hand back everything they produced with
the exit code the command would set. It prints nothing; a caller that wants progress passes
`BenchmarkEvents`, which is how the CLI prints as it goes.

Layer 4 (entry points) of docs/architecture.md, with the rest of `torchscale.api`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.comm.launch import CommLaunch, CommRequest
    from torchscale.comm.result import CommResult
    from torchscale.config.schema import BenchConfig
    from torchscale.data.prepare import DataReady
    from torchscale.memory.result import MaxBatchResult
    from torchscale.memory.runner import SearchGroup
    from torchscale.memory.search import ProbeOutcome
    from torchscale.plan import Machine, Plan, PlannedCell
    from torchscale.profiling.session import ProfiledCell
    from torchscale.profiling.trigger import Selected
    from torchscale.results.store import ResultStore
    from torchscale.schema.cell_result import CellResult
    from torchscale.sweep import SweepOutcome


def _ignore(*args: object) -> None:
    return None


@dataclass(frozen=True)
class BenchmarkEvents:
    """Callbacks as the job goes; each defaults to doing nothing. The job never prints."""

    # the sweep (torchscale.sweep.SweepHooks): (cell, index, total, will_launch)
    on_cell_start: Callable[[PlannedCell, int, int, bool], None] = _ignore
    on_cell_done: Callable[[CellResult, bool], None] = _ignore  # (result, reused)
    on_data: Callable[[DataReady], None] = _ignore
    # the sweep is over (`run.sweep`, `run.nothing_measured`); the suites follow
    on_sweep_done: Callable[[BenchmarkRun], None] = _ignore
    # the config's comm: section, one sweep per world size
    on_comm_start: Callable[[CommRequest, CommLaunch], None] = _ignore
    on_comm_done: Callable[[CommResult, Path], None] = _ignore  # (result, where stored)
    # memory.max_batch_search
    on_max_batch_start: Callable[[], None] = _ignore
    on_probe: Callable[[SearchGroup, int, ProbeOutcome], None] = _ignore
    on_max_batch_done: Callable[[list[MaxBatchResult]], None] = _ignore
    # profiling: (cell selected, a note on the tool chosen)
    on_profile_start: Callable[[Selected, str | None], None] = _ignore


@dataclass
class BenchmarkRun:
    """Everything one `run_benchmark` produced. `exit_code` is the command's: 1 when a cell
    failed, nothing was measured, --fail-fast stopped the sweep, a comm sweep failed or a
    max-batch search ended on a failure other than running out of memory; else 0."""

    plan: Plan
    store: ResultStore
    sweep: SweepOutcome
    nothing_measured: str | None
    comm: list[CommResult] = field(default_factory=list)
    comm_ok: bool = True
    max_batch: list[MaxBatchResult] = field(default_factory=list)
    max_batch_ok: bool = True
    profiles: list[tuple[Selected, ProfiledCell]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        broken = self.sweep.failures or self.nothing_measured or self.sweep.stopped_early
        return 1 if broken or not self.comm_ok or not self.max_batch_ok else 0


def machine_for(config: BenchConfig) -> Machine:
    """The nodes cells run on: this one (local), or as the launcher's config describes them
    (Slurm, k8s: the submitting host's GPUs say nothing about the nodes')."""
    from torchscale import host
    from torchscale.plan import Machine

    launcher = config.launcher
    if launcher.kind == "slurm":
        cores = launcher.slurm.cpus_per_task or host.usable_cores()
        return Machine(gpu_count=launcher.slurm.gpus_per_node or 0, cpu_cores=cores)
    if launcher.kind == "k8s":
        return Machine(gpu_count=launcher.k8s.gpus_per_node or 0, cpu_cores=host.usable_cores())
    return Machine(gpu_count=host.cuda_gpu_count(), cpu_cores=host.usable_cores())


def plan_benchmark(config: BenchConfig) -> Plan:
    """The config's cells on the machines its launcher names (nothing runs)."""
    from torchscale.plan import build_plan

    return build_plan(config, machine_for(config))


def run_benchmark(
    config: BenchConfig,
    output_dir: Path | str = "results",
    *,
    resume: bool = False,
    fail_fast: bool = False,
    env: Mapping[str, str] | None = None,
    events: BenchmarkEvents | None = None,
    plan: Plan | None = None,
) -> BenchmarkRun:
    """Run the config on this node, as `torchscale benchmark -c CONFIG -o OUTPUT_DIR` does:
    results go to OUTPUT_DIR/<experiment_name>; `env` is what the ranks inherit (default: this
    process's environment); `plan`: `plan_benchmark(config)` when the caller has it already.
    Slurm and Kubernetes launchers are the CLI's for now."""
    from torchscale.results.store import ResultStore, check_output_dir
    from torchscale.sweep import SweepHooks, nothing_measured, run_sweep
    from torchscale.worker.environment import capture_environment

    if config.launcher.kind != "local":
        raise UsageError(
            f"run_benchmark runs launcher.kind local; {config.launcher.kind} sweeps run through "
            "`torchscale benchmark`"
        )
    events = events or BenchmarkEvents()
    base_env = os.environ if env is None else env
    plan = plan or plan_benchmark(config)
    store = ResultStore.for_experiment(Path(output_dir), config.experiment_name)
    check_output_dir(store.root)
    store.write_environment(capture_environment())
    hooks = SweepHooks(events.on_cell_start, events.on_cell_done, events.on_data)
    outcome = run_sweep(plan, store, base_env, resume=resume, fail_fast=fail_fast, hooks=hooks)
    run = BenchmarkRun(plan, store, outcome, nothing_measured(outcome.results, len(plan.cells)))
    events.on_sweep_done(run)
    if outcome.stopped_early:
        return run
    _comm_after(run, base_env, events)
    _max_batch_after(run, base_env, events)
    if plan.config.profiling.enabled:
        from torchscale.profiling.session import profile_after_sweep

        run.profiles = profile_after_sweep(
            plan, store, base_env, outcome.results, events.on_profile_start
        )
    return run


def _comm_after(run: BenchmarkRun, env: Mapping[str, str], events: BenchmarkEvents) -> None:
    """The config's `comm:` section: one collective sweep per world size, stored in
    <experiment>/comm/; the cells' results are never touched."""
    from torchscale.comm.from_config import comm_failed, comm_requests
    from torchscale.comm.launch import comm_launch, new_run_id, run_comm

    for request in comm_requests(run.plan):
        launch = comm_launch(request, run.store.root, env, new_run_id(request))
        events.on_comm_start(request, launch)
        result = run_comm(launch, request)
        run.comm.append(result)
        events.on_comm_done(result, launch.result_path)
        run.comm_ok = run.comm_ok and not comm_failed(result)


def _max_batch_after(run: BenchmarkRun, env: Mapping[str, str], events: BenchmarkEvents) -> None:
    """The config's `memory.max_batch_search`: the largest batch per device of each cell
    group, one fresh torchrun per probe, stored in <experiment>/max_batch/."""
    if not run.plan.config.memory.max_batch_search:
        return
    from torchscale.data.prepare import prepare_data
    from torchscale.memory.runner import run_max_batch_search

    prepare_data(run.plan.config.data)  # the probes read it too (cached: a manifest check)
    events.on_max_batch_start()
    run.max_batch = run_max_batch_search(run.plan, run.store, env, events.on_probe)
    events.on_max_batch_done(run.max_batch)
    run.max_batch_ok = all(r.status == "ok" and r.max_batch is not None for r in run.max_batch)
