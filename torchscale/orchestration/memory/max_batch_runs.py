"""`memory.max_batch_search`: one search per group of the plan's runnable cells.

A group is a cell without its batch. Each search probes batches in fresh torchrun processes
(torchscale/orchestration/memory/probe.py), writes max_batch/<group>.json atomically and keeps
every probe's result under max_batch/probes/<group>/, starting at the largest batch the sweep
already ran ok for the group (else 1). On CPU it finds where the *host* runs out of memory (a
rank the kernel's OOM killer kills is a failure: a signal proves nothing about memory); on a
shared machine that pressure falls on everyone, so keep `memory.max_batch_limit` modest there.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from torchscale.contracts.cell import MAX_SLUG, CellIdentity, definition_hash, file_safe
from torchscale.contracts.errors import ResultsError, describe_os_error
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.max_batch import MaxBatchResult
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.memory.max_batch_result import build_result
from torchscale.orchestration.memory.probe import PROBE_WARMUP_STEPS, CellProber
from torchscale.orchestration.memory.search import ProbeOutcome, search_max_batch
from torchscale.orchestration.plan.planned import Plan, PlannedCell


@dataclass(frozen=True)
class SearchGroup:
    """The cells of a plan that differ only in their batch."""

    id: str  # file-safe: label, world size, precision, strategy, device, definition hash
    definition_sha256: str  # of the cell definition without batch and measurement
    cells: tuple[PlannedCell, ...]  # the group's cells in plan order

    @property
    def cell(self) -> CellIdentity:
        return self.cells[0].cell

    def identity(self) -> dict[str, Any]:
        """The result's identity fields: the group's, and those its cells share."""
        shared = ("model", "label", "world_size", "precision", "strategy", "device", "backend")
        cell = {name: getattr(self.cell, name) for name in (*shared, "nodes")}
        return {"group": self.id, "definition_sha256": self.definition_sha256, **cell}


OnProbe = Callable[[SearchGroup, int, ProbeOutcome], None]
DeviceTotal = Callable[[Mapping[str, str]], tuple[int | None, Finding | None]]


def group_definition(planned: PlannedCell) -> str:
    """The cell's canonical definition without its batch and measurement (probes set both)."""
    payload = json.loads(planned.definition)
    payload.pop("batch_size", None)
    payload.pop("measurement", None)
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def search_groups(plan: Plan) -> list[SearchGroup]:
    """The distinct groups of the plan's runnable cells, in plan order (skipped cells are
    skipped for reasons a batch does not change: device, world size). tp, pp and hybrid cells
    are not searched yet: a probe's batch must also suit the mesh (micro-batches divide it),
    which the doubling and bisection do not respect (docs/memory.md)."""
    members: dict[str, list[PlannedCell]] = {}
    for planned in plan.runnable:
        if planned.cell.parallel is not None or planned.job is not None:  # a job sizes itself
            continue
        members.setdefault(definition_hash(group_definition(planned)), []).append(planned)
    groups = []
    for sha, cells in members.items():
        cell = cells[0].cell
        slug = file_safe(cell.label)[:MAX_SLUG]
        group_id = (
            f"{slug}__w{cell.world_size}__{cell.precision}__{cell.strategy}__{cell.device}__"
            f"{sha[:8]}"
        )
        groups.append(SearchGroup(group_id, sha, tuple(cells)))
    return groups


def known_fits(group: SearchGroup, store: ResultStore) -> list[int]:
    """Batches of the group the sweep ran ok, for exactly their current definition."""
    return sorted(
        p.cell.batch_size
        for p in group.cells
        if store.finished_ok(p.cell.id, p.cell.definition_sha256) is not None
    )


def visible_device_total_bytes(env: Mapping[str, str]) -> tuple[int | None, Finding | None]:
    """(total memory of the smallest GPU the ranks may use, None), or (None, why not).

    From NVML, so this process never creates a CUDA context (which would take memory from
    the GPU the probes measure). CUDA_VISIBLE_DEVICES given as UUIDs is looked up exactly;
    given as indices, every GPU of the node counts (CUDA and NVML number GPUs differently).
    NVML's total is the whole device: slightly more than torch's total_memory, which leaves
    out what the driver keeps for itself.
    """
    from torchscale.contracts.nvml import probe_nvml

    visible = [t.strip() for t in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if t.strip()]
    if any(t.startswith("MIG-") for t in visible):
        return None, Finding(code="max_batch.total.mig")
    state = probe_nvml()
    if state.module is None or state.error is not None:
        return None, Finding(
            code="max_batch.total.nvml_unavailable", figures={"error": str(state.error)}
        )
    nvml: Any = state.module
    try:
        gpus = state.gpus
        if visible and all(t.startswith("GPU-") for t in visible):
            gpus = [g for g in gpus if g.uuid in visible]
        totals = [int(nvml.nvmlDeviceGetMemoryInfo(g.handle).total) for g in gpus]
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        return None, Finding(code="max_batch.total.nvml_failed", figures={"error": error})
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    if not totals:
        return None, Finding(code="max_batch.total.no_gpu")
    return min(totals), None


def probe_store(store: ResultStore, group: SearchGroup) -> ResultStore:
    """A fresh store for the group's probes, never mixed with the sweep's cells: the probes
    of an earlier search of the group are removed (its result is about to be replaced). Its
    probes compile into the experiment's cache, beside the sweep's cells."""
    root = store.max_batch_probes_dir(group.id)
    try:
        if root.exists():
            shutil.rmtree(root)
    except OSError as exc:
        raise ResultsError(f"cannot clear {root}: {describe_os_error(exc)}") from None
    return ResultStore(root, compile_cache=store.compile_cache_dir)


def run_max_batch_search(
    plan: Plan,
    store: ResultStore,
    env: Mapping[str, str],
    on_probe: OnProbe | None = None,
    *,
    device_total: DeviceTotal = visible_device_total_bytes,
) -> list[MaxBatchResult]:
    """Search every group of the plan's runnable cells, one after the other, with the plan's
    `memory` settings (whether `max_batch_search` is on is the caller's decision). Each result
    is written as soon as its search ends; `on_probe(group, batch, outcome)` after each probe.
    """
    settings = plan.memory
    results = []
    for group in search_groups(plan):
        prober = CellProber(group.cells[0], probe_store(store, group), env, settings.probe_steps)

        def probe(
            batch: int, group: SearchGroup = group, prober: CellProber = prober
        ) -> ProbeOutcome:
            outcome = prober(batch)
            if on_probe is not None:
                on_probe(group, batch, outcome)
            return outcome

        fits = known_fits(group, store)
        started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        began = time.monotonic()
        outcome = search_max_batch(
            probe, settings.max_batch_limit, start=max(fits, default=1), known_fits=fits
        )
        total: tuple[int | None, Finding | None] = (None, None)
        if group.cell.device == "cuda":
            total = device_total({**env, **group.cells[0].launch.extra_env})
        result = build_result(
            group.identity(),
            outcome,
            settings.probe_steps,
            total,
            warmup_min=PROBE_WARMUP_STEPS,
            compiled=bool(group.cells[0].training.compile),
            started_at=started_at,
            wall_s=round(time.monotonic() - began, 3),
        )
        store.write_text(store.max_batch_path(result.group), result.model_dump_json(indent=2))
        results.append(result)
    return results
