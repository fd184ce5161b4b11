"""`launcher.kind: local`: every cell on this node, one torchrun after another, then the suites
the config turns on (the collective sweep, the max-batch search, profiles of the cells its
trigger selects)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.orchestration.schedulers.api import BenchmarkEvents, BenchmarkRun, Env, RunOptions

if TYPE_CHECKING:
    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.plan.planned import Plan


def machine_here(gpu_memory: bool = False) -> Machine:
    """This node: its visible CUDA GPUs, the cores this process may use and, when asked (for
    `batch_sizes: auto`: it takes a child process and a few seconds), the smallest GPU's
    memory."""
    from torchscale.contracts import host
    from torchscale.orchestration.config.hardware import no_gpu_here
    from torchscale.orchestration.plan.nodes import Machine

    # torch takes seconds to import: asked only where it may see a GPU (a dry run or a
    # config's first error on a CPU node answers without it)
    gpus = 0 if "torch" not in sys.modules and no_gpu_here() else host.cuda_gpu_count()
    memory: int | None = None
    why: str | None = "no CUDA GPU here" if not gpus else "not read"
    if gpus and gpu_memory:
        memory, why = host.smallest_gpu_memory()
    return Machine(
        gpu_count=gpus,
        cpu_cores=host.usable_cores(),
        gpu_memory_bytes=memory,
        gpu_memory_unknown=why or "",
    )


class ThisNode:
    def machine(self, config: BenchConfig) -> Machine:
        return machine_here(gpu_memory=isinstance(config.batch_sizes, str))

    def results_store(self, config: BenchConfig, output_dir: Path, dry_run: bool) -> ResultStore:
        from torchscale.offline.results.store import ResultStore

        if config.profiling.enabled and config.profiling.tool == "nsys":
            from torchscale.orchestration.profiling.session import CONFIG_TOOL_KEY, resolve_tool

            # before the sweep, not after it: the profiles run last
            resolve_tool("nsys", "cuda", asked_by=CONFIG_TOOL_KEY)
        return ResultStore.for_experiment(output_dir, config.experiment_name)

    def dry_run(
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun:
        """The plan (argv, env, skips) is the answer, checked as the run would check it: the
        output directory probed (and left as it was), the cells --resume would reuse found."""
        from torchscale.offline.results.store import check_output_dir

        check_output_dir(store.root, keep=False)
        reused: list[str] = []
        if options.resume:  # the sweep's module (pandas) only when there is something to reuse
            from torchscale.orchestration.sweep import reusable_cells

            reused = reusable_cells(plan, store)
        return BenchmarkRun(plan, store, dry_run=True, reused=reused)

    def run(
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun:
        from torchscale.offline.results.store import check_output_dir
        from torchscale.orchestration.sweep import SweepHooks, nothing_measured, run_sweep
        from torchscale.rank.worker.run_environment import capture_environment

        env = _require_compile_toolchain(plan, store, env, events)  # before anything is written
        check_output_dir(store.root)
        store.write_environment(capture_environment())
        hooks = SweepHooks(
            events.on_cell_start, events.on_cell_done, events.on_data, events.on_forecast
        )
        outcome = run_sweep(
            plan, store, env, resume=options.resume, fail_fast=options.fail_fast, hooks=hooks
        )
        run = BenchmarkRun(plan, store, outcome, nothing_measured(outcome.results, len(plan.cells)))
        events.on_sweep_done(run)
        if outcome.stopped_early:
            return run
        _comm_after(run, env, events)
        _max_batch_after(run, env, events)
        if plan.profiling.enabled:
            from torchscale.orchestration.profiling.session import profile_after_sweep

            run.profiles = profile_after_sweep(
                plan, store, env, outcome.results, events.on_profile_start, events.on_profile_done
            )
        return run


def compile_devices(plan: Plan) -> set[str]:
    """The device types of the cells that will compile (skipped cells launch nothing)."""
    return {p.cell.device for p in plan.cells if p.skip_reason is None and p.training.compile}


def _require_compile_toolchain(
    plan: Plan, store: ResultStore, env: Env, events: BenchmarkEvents
) -> Env:
    """Without a toolchain every compiled cell (and max-batch probe, and profile) fails at its
    first step: refuse the run in one line instead (ToolNotFoundError), probed once per
    process, in the experiment's compile cache folder. The environment the launches inherit:
    with a node-local cache when that folder cannot hold one (said in one line)."""
    devices = compile_devices(plan)
    if not devices:
        return env
    from torchscale.orchestration.validate.compile_toolchain import require_toolchain

    return require_toolchain(devices, env, events.on_check, store.compile_cache_dir).env


def _comm_after(run: BenchmarkRun, env: Env, events: BenchmarkEvents) -> None:
    """The config's `comm:` section: one collective sweep per world size, stored in
    <experiment>/comm/; the cells' results are never touched."""
    from torchscale.orchestration.comm.from_config import comm_failed, comm_requests
    from torchscale.orchestration.comm.sweep_launch import comm_launch, new_run_id, run_comm_launch

    for request in comm_requests(run.plan):
        launch = comm_launch(request, run.store.root, env, new_run_id(request))
        events.on_comm_start(request, launch)
        result = run_comm_launch(launch, request)
        run.comm.append(result)
        events.on_comm_done(result, launch.result_path)
        run.comm_ok = run.comm_ok and not comm_failed(result)


def _max_batch_after(run: BenchmarkRun, env: Env, events: BenchmarkEvents) -> None:
    """The config's `memory.max_batch_search`: the largest batch per device of each cell
    group, one fresh torchrun per probe, stored in <experiment>/max_batch/."""
    if not run.plan.memory.max_batch_search:
        return
    from torchscale.orchestration.memory.max_batch_runs import run_max_batch_search
    from torchscale.rank.data.prepare import prepare_data

    prepare_data(run.plan.data)  # the probes read it too (cached: a manifest check)
    events.on_max_batch_start()
    run.max_batch = run_max_batch_search(run.plan, run.store, env, events.on_probe)
    events.on_max_batch_done(run.max_batch)
    run.max_batch_ok = all(r.status == "ok" and r.max_batch is not None for r in run.max_batch)
