"""`launcher.kind: batchq`: one job file per cell in <experiment>/batchq/, "queued" at once;
each job reports the cell it runs, and the second a failed node check (a problem, which the
CLI shows even with --quiet). It runs nothing: what the CLI shows comes from the events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.orchestration.schedulers.api import (
    BenchmarkEvents,
    BenchmarkRun,
    LauncherEvent,
    LauncherSubmission,
    RunOptions,
)

if TYPE_CHECKING:
    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.plan.planned import Plan

KIND = "batchq"


class BatchQueue:
    def machine(self, config: BenchConfig) -> Machine:
        from torchscale.orchestration.plan.nodes import Machine

        return Machine(gpu_count=0, cpu_cores=4)

    def results_store(self, config: BenchConfig, output_dir: Path, dry_run: bool) -> ResultStore:
        from torchscale.offline.results.store import ResultStore

        return ResultStore.for_experiment(output_dir, config.experiment_name)

    def dry_run(
        self,
        plan: Plan,
        store: ResultStore,
        env: Mapping[str, str],
        options: RunOptions,
        events: BenchmarkEvents,
    ) -> BenchmarkRun:
        return self._queue(plan, store, events, dry_run=True)

    def run(
        self,
        plan: Plan,
        store: ResultStore,
        env: Mapping[str, str],
        options: RunOptions,
        events: BenchmarkEvents,
    ) -> BenchmarkRun:
        return self._queue(plan, store, events, dry_run=False)

    def _queue(
        self, plan: Plan, store: ResultStore, events: BenchmarkEvents, dry_run: bool
    ) -> BenchmarkRun:
        directory = store.root / KIND
        directory.mkdir(parents=True, exist_ok=True)
        cells = [p.cell.id for p in plan.cells if p.skip_reason is None]
        files = []
        for cell_id in cells:
            path = directory / f"{cell_id}.job"
            path.write_text(cell_id + "\n", encoding="utf-8")
            files.append(path)
        written = LauncherSubmission(
            launcher=KIND,
            directory=directory,
            files=tuple(files),
            lines=(*(f"job file: {path.name}" for path in files), f"{len(files)} job(s) queued"),
            followed=not dry_run,
        )
        events.on_launcher_event(
            LauncherEvent(KIND, "submitted", f"{len(files)} job(s) queued", submission=written)
        )
        for index, cell_id in enumerate(cells, start=1):
            events.on_launcher_event(
                LauncherEvent(KIND, "progress", f"> [BATCHQ] job {index}: running", cell_id)
            )
        events.on_launcher_event(
            LauncherEvent(
                KIND,
                "problem",
                "> [BATCHQ] job 2: node check: failed [gpu missing]",
                payload={"job": 2, "check": "node"},
            )
        )
        closing = ("batchq: nothing queued (dry run)",) if dry_run else ("batchq: left queued",)
        return BenchmarkRun(
            plan, store, dry_run=dry_run, submission=replace(written, closing=closing)
        )
