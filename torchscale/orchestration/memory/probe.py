"""The real probe: the sweep's cell at batch b, run for a few steps in a fresh torchrun.

A fresh process tree per probe, because an OOM poisons the process it happens in (fragmented
allocator pool, ranks stuck in a collective). Each probe reuses the sweep's own launch path
(`torchscale.orchestration.sweep.run_cell`); only the batch and the measurement change (at least
one warm-up step, so compiled peaks are the training steps', not the compiler's), and results go
to a store of their own. Why and how: docs/memory.md, "One fresh process per probe, and why".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from torchscale.contracts.cell import Status, definition_hash, make_cell_id
from torchscale.contracts.cell_settings import MeasurementConfig
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.max_batch import ProbeKind
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.memory.search import ProbeOutcome
from torchscale.orchestration.plan.planned import PlannedCell

# discarded before the measured steps: the compile (and first-call allocations) happen there,
# and the CUDA peaks are reset after it. The least a probe runs: a compiled rank goes on
# until two steps compile nothing, and each probe's result says how many it ran
PROBE_WARMUP_STEPS = 1


def probe_measurement(measurement: MeasurementConfig, steps: int) -> MeasurementConfig:
    """The sweep's measurement cut down to what a probe needs: a few steps, nothing extra."""
    return measurement.model_copy(
        update={
            "warmup_steps": PROBE_WARMUP_STEPS,
            "steps": steps,
            "duration_s": None,
            "repeats": 1,
            "comm_overhead": False,
            "flops": False,
            "telemetry": measurement.telemetry.model_copy(update={"enabled": False}),
        }
    )


def probe_cell(
    planned: PlannedCell, batch: int, measurement: MeasurementConfig, ordinal: int
) -> PlannedCell:
    """`planned` at `batch` with the probe's measurement. Its launch (threads, environment,
    timeout) is the sweep cell's, already resolved by the plan; its definition is the cell's
    with the batch and measurement replaced, so its hash says exactly what the probe ran. The
    id starts with the probe's ordinal (p01__...): a repeated batch (the confirmation) gets a
    result of its own, and the files list in probe order."""
    payload = json.loads(planned.definition)
    payload["batch_size"] = batch
    payload["measurement"] = measurement.model_dump(mode="json")
    definition = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    sha = definition_hash(definition)
    cell = planned.cell
    cell_id = make_cell_id(
        cell.label, batch, cell.world_size, cell.precision, cell.strategy, sha, cell.nodes
    )
    identity = cell.model_copy(
        update={
            "id": f"p{str(ordinal).zfill(2)}__{cell_id}",
            "definition_sha256": sha,
            "batch_size": batch,
        }
    )
    return dataclasses.replace(
        planned, cell=identity, definition=definition, measurement=measurement
    )


def outcome_of(result: CellResult) -> ProbeOutcome:
    """A probe's cell result as the search sees it: fits, oom, or failed with its reason, and
    the warm-up steps it really ran (its warm-up block: PROBE_WARMUP_STEPS, more where a
    compiled rank kept warming up until compile settled)."""
    probe_id = result.cell.id
    warmup = len(result.warmup.step_s) if result.warmup is not None else None
    if result.status == Status.OK:
        memory = result.memory
        return ProbeOutcome(
            "fits",
            peak_allocated_bytes=memory.peak_allocated_bytes if memory else None,
            peak_reserved_bytes=memory.peak_reserved_bytes if memory else None,
            peak_rss_bytes=memory.peak_rss_bytes if memory else None,
            alloc_retries=memory.alloc_retries if memory else None,
            probe_id=probe_id,
            warmup_steps=warmup,
        )
    reason = result.error.finding if result.error else None
    kind: ProbeKind = "oom" if result.status == Status.OOM else "failed"
    return ProbeOutcome(kind, reason=reason, probe_id=probe_id, warmup_steps=warmup)


class CellProber:
    """probe(batch): one fresh torchrun of `planned` at that batch; results in `store`."""

    def __init__(
        self, planned: PlannedCell, store: ResultStore, env: Mapping[str, str], steps: int
    ) -> None:
        self.planned = planned
        self.store = store
        self.env = env
        self.measurement = probe_measurement(planned.measurement, steps)
        self.count = 0

    def __call__(self, batch: int) -> ProbeOutcome:
        from torchscale.orchestration.sweep import run_cell  # imports pandas: only when probing

        self.count += 1
        cell = probe_cell(self.planned, batch, self.measurement, self.count)
        return outcome_of(run_cell(cell, self.store, self.env))
