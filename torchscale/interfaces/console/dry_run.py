"""What `--dry-run` prints (`plan_lines`), after the cells what runs then: profiles, the max
batch search, the config's comm runs."""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping

from torchscale.contracts.wording.spell import cv, limit_s, pct_whole, whole_s
from torchscale.interfaces.console.lines import Line
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.plan.planned import Plan


def plan_lines(
    plan: Plan, store: ResultStore, base_env: Mapping[str, str], reused: Collection[str] = ()
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
            from torchscale.interfaces.console.cells import REUSED  # the live table's module

            lines.append(Line("skip", f"   reuse: {REUSED}"))
            continue
        shared = planned.sharing_compile_cache(store.compile_cache_dir)  # as run_cell runs it
        command = shared.command(store.spec_path(cell_id), store.log_dir(cell_id), base_env)
        env = " ".join(f"{k}={v}" for k, v in sorted(command.env_overrides.items()))
        lines.append(Line("info", f"   argv: {shlex.join(command.argv)}"))
        dropped = "RANK/MASTER_*/PET_*/TORCHELASTIC_*"
        as_given = planned.job is not None and not planned.job.wrapped  # a user's own launcher
        inherited = "+ inherited" if as_given else f"+ inherited, minus {dropped}"
        lines.append(Line("info", f"   env:  {env} ({inherited})"))
        if planned.warnings:  # worded by the catalogue: imported when there is one to word
            from torchscale.contracts.wording.cell_warnings import warning_words

            lines += [Line("warn", f"   warn: {warning_words(w)}") for w in planned.warnings]
    to_run = [p for p in plan.runnable if p.cell.id not in reused]
    estimate = plan.estimate(to_run)
    kept = f", {len(plan.runnable) - len(to_run)} reused (--resume)" if reused else ""
    text = (
        f"{len(to_run)} cell(s) to run{kept}, {len(plan.cells) - len(plan.runnable)} "
        f"skipped; estimated >= {whole_s(estimate.seconds)} ({estimate.basis}); each cell is "
        f"killed after {limit_s(plan.launcher.cell_timeout_s)}"
    )
    lines.append(Line("info", text))
    profiling = plan.profiling
    if profiling.enabled:
        which = (
            "every ok cell"
            if profiling.trigger == "always"
            else f"ok cells whose exposed communication or wait for the slowest rank reaches "
            f"{pct_whole(profiling.stall_threshold)} of the step, or whose step-time CV reaches "
            f"{cv(profiling.variance_threshold)}"
        )
        how = f"with {profiling.tool} ({profiling.steps} traced step(s) per rank)"
        lines.append(
            Line("info", f"after the sweep: profile {which} {how} into profile/<cell_id>/")
        )
    lines += _comm_plan_lines(plan, store, base_env)
    memory = plan.memory
    if memory.max_batch_search:
        from torchscale.orchestration.memory.max_batch_runs import search_groups
        from torchscale.orchestration.memory.probe import PROBE_WARMUP_STEPS

        groups = search_groups(plan)
        text = (
            f"after the cells: max batch search for {len(groups)} group(s) (model, world "
            f"size, precision, strategy), batch up to {memory.max_batch_limit}, one torchrun "
            f"of {memory.probe_steps} step(s) after at least {PROBE_WARMUP_STEPS} warm-up "
            "step(s) per probe, into max_batch/"
        )
        lines.append(Line("info", text))
    return lines


def _comm_plan_lines(plan: Plan, store: ResultStore, base_env: Mapping[str, str]) -> list[Line]:
    """The config's `comm:` section as --dry-run shows it: one torchrun per world size."""
    if not plan.comm.enabled:  # none: the comm runs' plumbing is not imported
        return []
    from torchscale.orchestration.comm.from_config import comm_requests
    from torchscale.orchestration.comm.sweep_launch import comm_launch, new_run_id

    lines: list[Line] = []
    for request in comm_requests(plan):
        launch = comm_launch(request, store.root, base_env, new_run_id(request))
        ops = ", ".join(request.ops)
        what = f"{ops} on {request.ranks} rank(s), {len(launch.spec.sizes)} size(s)"
        lines.append(Line("info", f"after the cells: {what} into comm/"))
        lines.append(Line("info", f"   argv: {shlex.join(launch.command.argv)}"))
    return lines
