"""`run_benchmark`: what `torchscale benchmark` does, in one call (docs/python-api.md): plan
the config's cells on the nodes its launcher names, then hand the plan to that launcher
(`torchscale.orchestration.schedulers`). It prints nothing; a caller that wants progress passes
`BenchmarkEvents`, which is how the CLI prints as it goes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.orchestration.schedulers import launcher_for
from torchscale.orchestration.schedulers.api import BenchmarkEvents, BenchmarkRun, RunOptions

if TYPE_CHECKING:
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.plan.planned import Plan

__all__ = ["BenchmarkEvents", "BenchmarkRun", "machine_for", "plan_benchmark", "run_benchmark"]


def machine_for(config: BenchConfig) -> Machine:
    """The nodes cells run on: this one (local), or as the launcher's config describes them
    (Slurm, k8s: the submitting host's GPUs say nothing about the nodes')."""
    return launcher_for(config.launcher.kind).machine(config)


def plan_benchmark(config: BenchConfig) -> Plan:
    """The config's cells on the machines its launcher names (nothing runs)."""
    from torchscale.orchestration.plan.build import build_plan

    return build_plan(config, machine_for(config))


def run_benchmark(
    config: BenchConfig,
    output_dir: Path | str = "results",
    *,
    resume: bool = False,
    fail_fast: bool = False,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    events: BenchmarkEvents | None = None,
    plan: Plan | None = None,
) -> BenchmarkRun:
    """Run the config as `torchscale benchmark -c CONFIG -o OUTPUT_DIR` does: results go to
    OUTPUT_DIR/<experiment_name>; `env` is what the ranks inherit (default: this process's
    environment); `plan`: `plan_benchmark(config)` when the caller has it already. `dry_run`:
    what would run (Slurm scripts and Kubernetes manifests are written for review), checked as
    the real run checks it (output directory, tools, the cells `resume` would reuse); no cell
    runs."""
    launcher = launcher_for(config.launcher.kind)
    events = events or BenchmarkEvents()
    base_env = os.environ if env is None else env
    store = launcher.results_store(config, Path(output_dir), dry_run)
    if plan is None:
        plan = plan_benchmark(config)
    options = RunOptions(resume, fail_fast)
    if dry_run:
        return launcher.dry_run(plan, store, base_env, options, events)
    return launcher.run(plan, store, base_env, options, events)
