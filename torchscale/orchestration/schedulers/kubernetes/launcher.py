"""`launcher.kind: k8s`: one job manifest per cell (and the worker specs its pods read), applied
with kubectl when `launcher.k8s.apply` is set and this is no dry run. torchscale does not follow
Kubernetes jobs: their ranks write results to the shared results volume (manifests.py).
Before writing, it warns of what would make the figures misleading: no shared results volume,
and multi-node NCCL cells left on TCP over the pod network (`network_warnings`)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.errors import UsageError
from torchscale.orchestration.schedulers.api import (
    BenchmarkEvents,
    BenchmarkRun,
    Env,
    LauncherEvent,
    LauncherSubmission,
    RunOptions,
)

if TYPE_CHECKING:
    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.plan.planned import Plan
    from torchscale.orchestration.schedulers.kubernetes.manifests import Applied

KIND = "k8s"
# the sweep state of a run handed on: 'running', and why torchscale cannot say how it ended
UNFOLLOWED = "handed to Kubernetes; torchscale does not follow its jobs"
UNAPPLIED = "manifests written, not applied (launcher.k8s.apply: false) nor followed"
NOTHING_APPLIED = "nothing applied: kubectl apply -f FILE (or launcher.k8s.apply: true)"


class KubernetesJobs:
    def machine(self, config: BenchConfig) -> Machine:
        """The nodes as the config describes them: the submitting host is not one of them."""
        from torchscale.contracts import host
        from torchscale.orchestration.plan.nodes import Machine

        gpus = config.launcher.k8s.gpus_per_node or 0
        source = "launcher.k8s.gpus_per_node" if gpus else None
        return Machine(gpu_count=gpus, cpu_cores=host.usable_cores(), gpus_source=source)

    def results_store(self, config: BenchConfig, output_dir: Path, dry_run: bool) -> ResultStore:
        from torchscale.offline.results.store import ResultStore

        if config.launcher.k8s.apply and not dry_run and shutil.which("kubectl") is None:
            raise UsageError("launcher.k8s.apply needs kubectl on PATH; nothing was written")
        return ResultStore.for_experiment(output_dir, config.experiment_name)

    def dry_run(
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun:
        """The manifests written for review; nothing applied."""
        return self._submit(plan, store, events, apply=False, dry_run=True)

    def run(
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun:
        return self._submit(plan, store, events, apply=plan.launcher.k8s.apply, dry_run=False)

    def _submit(
        self, plan: Plan, store: ResultStore, events: BenchmarkEvents, apply: bool, dry_run: bool
    ) -> BenchmarkRun:
        from torchscale.orchestration.schedulers.kubernetes.manifests import (
            apply_manifests,
            network_warnings,
            write_k8s_manifests,
        )

        settings = plan.launcher.k8s
        if settings.results_claim is None:
            events.on_warning(
                "launcher.k8s.results_claim is not set: the runtime must mount shared storage "
                f"at {settings.results_mount}, or the results stay in the pods"
            )
        for warning in network_warnings(plan):
            events.on_warning(warning)
        paths = write_k8s_manifests(plan, store, settings.pod_patch)
        skipped = sum(1 for p in plan.cells if p.skip_reason is not None)
        written = _written(store.k8s_dir, paths, skipped)
        event = LauncherEvent(KIND, "submitted", written.lines[-1], submission=written)
        events.on_launcher_event(event)
        if not dry_run:  # the report lists every planned cell, with a result or not yet
            from torchscale.contracts.schema.sweep_state import SweepState
            from torchscale.orchestration.sweep import planned_cells

            why = UNFOLLOWED if apply else UNAPPLIED
            planned = planned_cells(plan)
            store.write_sweep_state(
                SweepState(phase="running", planned=planned, finished=0, stopped_by=why)
            )
        applied = apply_manifests(paths) if apply else []
        submission = replace(written, closing=_applied_lines(applied), record=tuple(applied))
        return BenchmarkRun(plan, store, dry_run=dry_run, submission=submission)


def _written(directory: Path, paths: list[Path], skipped: int) -> LauncherSubmission:
    """The manifests written (one per cell; cells skipped by the plan have none), a line each,
    then their count."""
    count = f"{len(paths)} manifest(s) written under {directory}" + (
        f"; {skipped} cell(s) skipped" if skipped else ""
    )
    lines = (*(f"manifest: {path}" for path in paths), count)
    return LauncherSubmission(KIND, directory, tuple(paths), lines, record=())


def _applied_lines(applied: list[Applied]) -> tuple[str, ...]:
    """What `kubectl apply` said of each manifest; torchscale does not follow the jobs."""
    if not applied:
        return (NOTHING_APPLIED,)
    return tuple(f"applied {a.path}: {a.output.strip()}" for a in applied)
