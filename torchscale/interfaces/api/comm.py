"""`run_comm`: what `torchscale comm` does, in one call returning a typed result (docs/comm.md):
the collective sweep through the one launch path, or an nccl-tests file read with `import_file`,
stored in OUTPUT_DIR/<name>/comm/. It prints nothing: the notes for the user come back in the
plan, through `on_plan` before anything is written and `on_start` before the ranks launch."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.errors import UsageError
from torchscale.orchestration.comm.planning import CommOptions, CommPlan

if TYPE_CHECKING:
    from torchscale.contracts.schema.comm_result import CommResult

__all__ = ["CommOptions", "CommPlan", "CommRun", "run_comm"]


@dataclass(frozen=True)
class CommRun:
    """One `run_comm`: the result and where it was stored (both None for a dry run), and what
    was launched (`plan`: None for an import). `exit_code` is the command's: 1 when the sweep
    did not finish, a row failed or computed wrong elements, or the bandwidth gate failed or
    could not be judged; else 0."""

    result: CommResult | None
    stored: Path | None
    plan: CommPlan | None

    @property
    def exit_code(self) -> int:
        from torchscale.orchestration.comm.from_config import comm_failed

        return 1 if self.result is not None and comm_failed(self.result) else 0


def run_comm(
    options: CommOptions | None = None,
    output_dir: Path | str = "results",
    *,
    env: Mapping[str, str] | None = None,
    dry_run: bool = False,
    on_plan: Callable[[CommPlan], None] | None = None,
    on_start: Callable[[CommPlan], None] | None = None,
) -> CommRun:
    """Measure collective bandwidth as `torchscale comm` does; the result goes to
    OUTPUT_DIR/<options.name>/comm/<run id>.json. `env`: what the ranks inherit (default: this
    process's environment). `dry_run`: resolve and build the launch, run nothing (an import
    is read and stored all the same, as the command does)."""
    options = options or CommOptions()
    experiment_dir = Path(output_dir) / options.name
    if options.import_file is not None:
        return _import(options.import_file, options, experiment_dir)
    if options.op is not None:
        raise UsageError("--op goes with --import (use --ops to choose what to run)")
    from torchscale.offline.results.store import check_output_dir
    from torchscale.orchestration.comm.planning import plan_comm
    from torchscale.orchestration.comm.sweep_launch import run_comm_launch
    from torchscale.orchestration.schedulers.local.launcher import machine_here

    base_env = os.environ if env is None else env
    plan = plan_comm(options, machine_here(), experiment_dir, base_env)
    if on_plan is not None:
        on_plan(plan)
    check_output_dir(experiment_dir, keep=not dry_run)  # a dry run answers as the run would
    if dry_run:
        return CommRun(None, None, plan)
    if on_start is not None:
        on_start(plan)
    result = run_comm_launch(plan.launch, plan.request)
    return CommRun(result, plan.launch.result_path, plan)


def _import(path: Path, options: CommOptions, experiment_dir: Path) -> CommRun:
    """An nccl-tests output file read, gated like a run, and stored beside the runs."""
    from torchscale.offline.comm.nccl_footer import apply_gate
    from torchscale.offline.comm.nccl_tests import read_nccl_tests
    from torchscale.offline.results.directory_layout import ResultLayout
    from torchscale.orchestration.comm.sweep_launch import store_result

    result = read_nccl_tests(path, op=options.op)
    if options.min_busbw_gbps is not None:
        apply_gate(result, options.min_busbw_gbps)
    stored = store_result(result, ResultLayout(experiment_dir).comm_result_path(result.id))
    return CommRun(result, stored, None)
