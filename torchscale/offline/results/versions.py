"""Reading cell results of every schema version ever written.

Each older version has an upgrade function that turns its JSON into the next version's shape,
applied in order up to the current one; a file of an unknown newer version is refused with a
one-line reason (never a crash), so an old torchscale reading a new results directory says so.

What each version added, and which function upgrades it, is in docs/results.md ("Schema
versions").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION, CellResult
from torchscale.contracts.versioned import read_json, validated, version_problem
from torchscale.contracts.wording.figures import as_written_before_schema_20
from torchscale.contracts.wording.unavailable import coded
from torchscale.offline.results.upgrades.older_blocks import OlderBlocks, folded
from torchscale.offline.results.upgrades.stored_words import upgrade_v19  # re-exported
from torchscale.offline.results.upgrades.telemetry_rules import (
    rejudged_power_cap,
    rejudged_telemetry,
)
from torchscale.offline.results.upgrades.verdicts import with_not_named
from torchscale.offline.results.upgrades.warning_kinds import typed

CELL_KIND = "torchscale.cell"
_V1_IDENTITY = {
    "cell_id": "id",
    "definition_sha256": "definition_sha256",
    "model": "model",
    "model_label": "label",
    "batch_size": "batch_size",
    "world_size": "world_size",
    "precision": "precision",
    "strategy": "strategy",
    "device": "device",
    "backend": "backend",
}
_V1_ERROR_KEYS = ("reason", "root_cause_rank", "exception", "log_tail")


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2. Figures are kept as measured (v1's achieved TFLOP/s came from the median
    step time and its peak RSS from rank 0 only; both are left as they were recorded)."""
    out = {k: v for k, v in data.items() if k not in _V1_IDENTITY}
    out["cell"] = {new: data[old] for old, new in _V1_IDENTITY.items() if old in data}
    out["cell"]["nodes"] = 1  # version 1 ran on one node only
    memory = out.get("memory")
    if isinstance(memory, dict) and "activation_bytes" in memory:
        memory = dict(memory)
        memory["non_static_peak_bytes"] = memory.pop("activation_bytes")
        out["memory"] = memory
    error = out.get("error")
    if isinstance(error, dict):
        out["error"] = {k: error.get(k) for k in _V1_ERROR_KEYS if k in error}
        out["error"].setdefault("reason", "unknown (version 1 result without a reason)")
    out["schema_version"] = 2
    return out


def _explained(out: dict[str, Any], reasons: Mapping[str, Any]) -> dict[str, Any]:
    """`out` whose measured cell says why in `unavailable` for each of `reasons` it does not
    explain already (a cell that did not finish has no figures to explain)."""
    if out.get("status") == "ok":
        unavailable = dict(out.get("unavailable") or {})
        for key, reason in reasons.items():
            unavailable.setdefault(key, reason)
        out["unavailable"] = unavailable
    return out


V2_COMM_OVERHEAD = coded("older.v2_comm_overhead")
V2_STRAGGLER = coded("older.v2_straggler")
V2_PHASES = coded("older.v2_phases")


def upgrade_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 -> 3. A figure whose meaning changed is moved to the name that says what it
    is (comm_overhead -> sync_overhead) and the new name is null with the reason; the
    straggler rank (the highest median synchronised step, noise under gradient sync) is
    dropped with the reason. Everything else is kept as measured."""
    out = dict(data)
    unavailable = dict(out.get("unavailable") or {})
    comm = out.get("communication")
    if isinstance(comm, dict):
        comm = dict(comm)
        pooled = comm.get("comm_overhead")
        comm["sync_overhead"] = pooled
        comm["comm_overhead"] = None
        if pooled is not None:
            unavailable["comm_overhead"] = V2_COMM_OVERHEAD
            unavailable.setdefault("load_imbalance", V2_COMM_OVERHEAD)
        elif "comm_overhead" in unavailable:
            unavailable.setdefault("sync_overhead", unavailable["comm_overhead"])
        out["communication"] = comm
    if out.get("straggler_rank") is not None:
        out["straggler_rank"] = None
        unavailable["straggler"] = V2_STRAGGLER
    if out.get("ranks"):
        unavailable.setdefault("phases", V2_PHASES)
    out["unavailable"] = unavailable
    out["schema_version"] = 3
    return out


V3_TELEMETRY = coded("older.v3_telemetry")
V3_ALLOCATOR = coded("older.v3_allocator")
V3_ALLOCATOR_FIELDS = ("alloc_retries", "oom_count", "fragmentation", "inactive_split_peak_bytes")


def upgrade_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 -> 4. Nothing is recomputed: telemetry and the allocator figures were never
    recorded, so they are null with the reason (for measured cells; a cell that did not
    finish has no figures to explain)."""
    out = {**data, "telemetry": None}
    unavailable = dict(out.get("unavailable") or {})
    if out.get("status") == "ok":
        unavailable.setdefault("telemetry", V3_TELEMETRY)
    memory = out.get("memory")
    if isinstance(memory, dict):
        memory = dict(memory)
        for name in V3_ALLOCATOR_FIELDS:
            memory[name] = None
            unavailable.setdefault(f"memory.{name}", V3_ALLOCATOR)
        out["memory"] = memory
    out["unavailable"] = unavailable
    out["schema_version"] = 4
    return out


V4_DATA = coded("older.v4_data")
V4_COST = coded("older.v4_cost")


def upgrade_v4(data: dict[str, Any]) -> dict[str, Any]:
    """Version 4 -> 5. Versions up to 4 trained on synthetic on-device data only, so the source
    is known; its wait was inside the phases (ranks[].phases.data) and is not recomputed here.
    Cost was never stored: null with the reason."""
    out = {**data, "data": None, "cost": None, "schema_version": 5}
    return _explained(out, {"data": V4_DATA, "cost": V4_COST})


def upgrade_v5(data: dict[str, Any]) -> dict[str, Any]:
    """Version 5 -> 6. Up to 5 every cell was ddp or fsdp (no mesh, no pipeline), and warm-up
    times were not kept."""
    return {**data, "parallel": None, "warmup": None, "schema_version": 6}


def upgrade_v6(data: dict[str, Any]) -> dict[str, Any]:
    """Version 6 -> 7. `parallel.profiled_comm` did not exist; a tp cell said why in
    unavailable["parallel.tp_comm"], which is kept."""
    out = dict(data)
    parallel = out.get("parallel")
    if isinstance(parallel, dict):
        out["parallel"] = {**parallel, "profiled_comm": None}
    out["schema_version"] = 7
    return out


V7_ATTRIBUTION = coded("older.v7_attribution")


V7_HOSTS = coded("older.v7_hosts")


def upgrade_v7(data: dict[str, Any]) -> dict[str, Any]:
    """Version 7 -> 8. The one model of the step with intervals (`attribution`) and the
    headline intervals (`intervals`) did not exist; the older point figures are kept as
    measured and marked as such in `unavailable`."""
    hosts = {"telemetry.hosts": V7_HOSTS} if isinstance(data.get("telemetry"), dict) else {}
    return _explained({**data, "schema_version": 8}, {"attribution": V7_ATTRIBUTION, **hosts})


V8_MEASURED_PEAK = coded("older.v8_measured_peak")


def upgrade_v8(data: dict[str, Any]) -> dict[str, Any]:
    """Version 8 -> 9. MFU against a measured peak did not exist: null, with the reason."""
    return _explained({**data, "schema_version": 9}, {"mfu_measured": V8_MEASURED_PEAK})


V9_DIAGNOSIS = coded("older.v9_diagnosis")


def upgrade_v9(data: dict[str, Any]) -> dict[str, Any]:
    """Version 9 -> 10. `attribution` (the phase timers' step model) becomes the diagnosis,
    decided by the phase timers, without per-rank waits or what-if; its findings and caveat
    are derived after validation (`COMPLETIONS`)."""
    out = dict(data)
    attribution = out.pop("attribution", None)
    unavailable = dict(out.get("unavailable") or {})
    if isinstance(attribution, dict):
        out["diagnosis"] = {**attribution, "source": "phase timers"}
        unavailable.setdefault("diagnosis.rank_waits", V9_DIAGNOSIS)
    elif "attribution" in unavailable:
        unavailable["diagnosis"] = unavailable.pop("attribution")
    out["unavailable"] = unavailable
    out["schema_version"] = 10
    return out


V10_COMPILE = coded("older.v10_compile")


def upgrade_v10(data: dict[str, Any]) -> dict[str, Any]:
    """Version 10 -> 11. What torch.compile did inside the windows was never counted: a
    compiled cell (one with a warm-up compile time) gets `compile` null, with the reason."""
    out = {**data, "compile": None}
    warmup = out.get("warmup")
    unavailable = dict(out.get("unavailable") or {})
    compiled = isinstance(warmup, dict) and warmup.get("compile_s") is not None
    if compiled or "warmup.compile_s" in unavailable:  # that key: compiled, time unreadable
        unavailable.setdefault("compile", V10_COMPILE)
        out["unavailable"] = unavailable
    out["schema_version"] = 11
    return out


def upgrade_v11(data: dict[str, Any]) -> dict[str, Any]:
    """Version 11 -> 12. The straggler verdict gained the candidate's wait for a CPU
    (`host_wait_s`, `host_bound`): never measured before, so null (the fields' default)."""
    return {**data, "schema_version": 12}


def upgrade_v12(data: dict[str, Any]) -> dict[str, Any]:
    """Version 12 -> 13. The straggler verdict gained the kind of the named rank's extra time
    and the plain words of why a candidate is not named: neither was judged before, so null
    (the fields' default). A schema-12 verdict the host withdrew stays withdrawn (named
    false, host_bound true): it is read as it was written, not judged again."""
    return {**data, "schema_version": 13}


def upgrade_v13(data: dict[str, Any]) -> dict[str, Any]:
    """Version 13 -> 14. The straggler verdict says whether the named rank was delayed on
    purpose (`injected`): read off the result's own `injected_delays` (recorded since version
    3) for a named rank, as a version-14 run marks it (`marked_injected`); null where nobody is
    named."""
    out = {**data, "schema_version": 14}
    diagnosis = out.get("diagnosis")
    verdict = diagnosis.get("straggler") if isinstance(diagnosis, dict) else None
    if isinstance(diagnosis, dict) and isinstance(verdict, dict) and verdict.get("named"):
        delayed = {d.get("rank") for d in out.get("injected_delays") or [] if isinstance(d, dict)}
        injected = verdict.get("rank") in delayed
        summary = verdict.get("summary", "")
        if injected:
            summary = f"{summary} (injected: --inject-delay)"
        out["diagnosis"] = {
            **diagnosis,
            "straggler": {**verdict, "injected": injected, "summary": summary},
        }
    return out


def upgrade_v14(data: dict[str, Any]) -> dict[str, Any]:
    """Version 14 -> 15. The diagnosis' `rule` (the rule findings were judged by where no
    interval can judge them) is set only when a result is read from point figures; a version 14
    diagnosis was judged by its own rule: null."""
    return {**data, "schema_version": 15}


V15_EDGE_STEPS = coded("older.v15_edge_steps")
V15_HOST_BOUND = coded("older.v15_host_bound")
V15_FIXED_COSTS = coded("older.v15_fixed_costs")
HOST_BOUND_CPU = coded("unavailable.host_bound_cpu")


def upgrade_v15(data: dict[str, Any]) -> dict[str, Any]:
    """Version 15 -> 16. The untimed edge step, the GPU busy probe and the itemised fixed
    costs did not exist: each null, with the reason for a measured cell."""
    out = {**data, "window_edge_steps": None, "host_bound": None, "fixed_costs": None}
    cell = out.get("cell")
    cpu = isinstance(cell, dict) and cell.get("device") == "cpu"
    reasons = {
        "window_edge_steps": V15_EDGE_STEPS,
        "host_bound": HOST_BOUND_CPU if cpu else V15_HOST_BOUND,
        "fixed_costs": V15_FIXED_COSTS,
    }
    return _explained({**out, "schema_version": 16}, reasons)


def upgrade_v16(data: dict[str, Any]) -> dict[str, Any]:
    """Version 16 -> 17. The `straggler`, `straggler_rank` and `communication` blocks mirrored
    the diagnosis: dropped, the no_sync window's figures only they held kept in the diagnosis
    (`upgrades.older_blocks`). Each warning gets the kind its words say
    (`upgrades.warning_kinds`), once."""
    out = folded(data)
    out["warnings"] = typed(out.get("warnings", []))
    out["schema_version"] = 17
    return out


def upgrade_v17(data: dict[str, Any]) -> dict[str, Any]:
    """Version 17 -> 18. A straggler verdict of 17 was judged by the paired test (its gap:
    own work over the others' median) and has no pattern: kept as judged, pattern null."""
    return {**data, "schema_version": 18}


def upgrade_v18(data: dict[str, Any]) -> dict[str, Any]:
    """Version 18 -> 19. A GPU's clock verdict was stored as a sentence (`clock_basis`, kept
    and shown as stored); 19 stores it as a finding. Verdicts judged by the older SwPowerCap
    rule are judged again once the result is read (`rejudged_power_cap`)."""
    return {**data, "schema_version": 19}


UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: upgrade_v1,
    2: upgrade_v2,
    3: upgrade_v3,
    4: upgrade_v4,
    5: upgrade_v5,
    6: upgrade_v6,
    7: upgrade_v7,
    8: upgrade_v8,
    9: upgrade_v9,
    10: upgrade_v10,
    11: upgrade_v11,
    12: upgrade_v12,
    13: upgrade_v13,
    14: upgrade_v14,
    15: upgrade_v15,
    16: upgrade_v16,
    17: upgrade_v17,
    18: upgrade_v18,
    19: upgrade_v19,
}


def said_why_not_named(result: CellResult) -> CellResult:
    """A verdict of version 12 or older that named nobody says why (`with_not_named`)."""
    return result.model_copy(update={"diagnosis": with_not_named(result.diagnosis)})


def read_from_point_figures(result: CellResult, older: OlderBlocks) -> CellResult:
    """A result that kept only point figures (`older`) gets a diagnosis read from them, with
    the findings their own rule gives (`upgrades.point_figures`, imported here: it needs numpy,
    which a rank writing results through the store must not load)."""
    from torchscale.offline.results.upgrades import point_figures

    return point_figures.with_point_figure_diagnosis(result, older)


def completed_from_model(result: CellResult) -> CellResult:
    """A step model stored without findings gets them, and its caveat (`upgrades.stored_model`,
    imported here: it needs pandas, which a rank writing results through the store must not
    load)."""
    from torchscale.offline.results.upgrades import stored_model

    return stored_model.completed_from_model(result)


def judged_host_bound(result: CellResult) -> CellResult:
    """A GPU cell's host-bound record judged (the busy probe's, else the arithmetic fallback)
    and, when host-bound, its finding (`upgrades.host_bound`, imported here: it needs numpy,
    which a rank writing results through the store must not load)."""
    from torchscale.offline.results.upgrades import host_bound

    return host_bound.with_host_bound(result)


def spread_rederived(result: CellResult) -> CellResult:
    """Every version: the run-to-run spread from its repeats by the one definition
    (`stats.spread_from_median`; imported here: it needs numpy, which a rank writing results
    through the store must not load). Results written before it stored (max - min) / median,
    twice the figure the reliability rule reads for two repeats."""
    from torchscale.offline.analysis.stats import median_and_spread

    thr = result.throughput
    if thr is None or not thr.repeats:
        return result
    spread = median_and_spread(thr.repeats)[1]
    return result.model_copy(update={"throughput": thr.model_copy(update={"spread": spread})})


def read_every_version(result: CellResult) -> CellResult:
    """What every result gets once read, whatever its version: its spread by today's
    definition, its host-bound verdict (the probe's or the fallback's)."""
    return judged_host_bound(spread_rederived(result))


# what a result read from an old version gets once it is a valid current result, keyed by the
# newest source version it applies to: derivations that need the typed result (the diagnosis'
# findings), applied in order of the key, each to results read from that version or older
POINT_FIGURES_VERSION = 7  # the newest version without a step model
# (read_from_point_figures comes first, for version 7 or older: it needs the older blocks)
COMPLETIONS: dict[int, Callable[[CellResult], CellResult]] = {
    9: completed_from_model,
    12: said_why_not_named,
    15: rejudged_telemetry,  # throttling, in-window figures and NVML's averaging floor
    18: rejudged_power_cap,  # SwPowerCap at the default limit judged with the draw
    RESULT_SCHEMA_VERSION: read_every_version,  # spread, host-bound verdict
}


@dataclass(frozen=True)
class ReadCell:
    """One result file as read: the result (current schema), the version it was written in,
    or why it could not be used."""

    path: Path
    result: CellResult | None
    version: int | None
    problem: str | None


@as_written_before_schema_20()  # older sentences are recognised by the words that wrote them
def parse_cell_result(
    data: Any, cell_path: Path | None = None
) -> tuple[CellResult | None, int | None, str | None]:
    """(result, source version, problem) from decoded JSON of any known version; with the
    file's `cell_path`, an older result that timed each window's first step has its step
    times read again without it from the steps file beside it (`upgrades.edge_steps`)."""
    problem = version_problem(data, CELL_KIND, "cell result", RESULT_SCHEMA_VERSION)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if problem is not None:  # the version is kept only when it is a newer one
        newer = isinstance(version, int) and version > RESULT_SCHEMA_VERSION
        return None, version if newer else None, problem
    assert isinstance(version, int)  # version_problem checked it
    upgraded, older = data, OlderBlocks()
    for step in range(version, RESULT_SCHEMA_VERSION):
        older = OlderBlocks.of(upgraded) if step == 16 else older
        upgraded = UPGRADES[step](upgraded)
    result, problem = validated(CellResult, upgraded, f"version {version} result")
    if result is None:
        return None, version, problem
    if cell_path is not None and version < RESULT_SCHEMA_VERSION:  # edge_steps says which
        from torchscale.offline.results.upgrades import edge_steps

        result = edge_steps.with_edge_rule(result, version, cell_path)
    if version <= POINT_FIGURES_VERSION:
        result = read_from_point_figures(result, older)
    for newest, complete in sorted(COMPLETIONS.items()):
        if version <= newest:
            result = complete(result)
    return result, version, None


def read_cell_result(path: Path) -> ReadCell:
    """Read one cells/*.json; never raises for a bad file (the problem says why)."""
    data, problem = read_json(path)
    if problem is not None:
        return ReadCell(path, None, None, problem)
    result, version, problem = parse_cell_result(data, path)
    return ReadCell(path, result, version, problem)
