"""The versioned result of one max-batch search (max_batch/<group>.json), and reading it back.

One result per group: a cell's identity without its batch (model and its options, world size,
precision, strategy, device, and everything else the sweep's definition holds). A figure that
cannot be had here is null with the reason in `unavailable`, never estimated.

Its fields, and how a schema 1 file (probes without a warm-up) reads today: docs/memory.md,
"What the result holds".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from torchscale.contracts.catalog import Precision, Strategy
from torchscale.contracts.cell import Backend, Device
from torchscale.contracts.versioned import read_json, version_problem
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.orchestration.memory.search import Phase, ProbeKind, SearchOutcome

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

MAX_BATCH_KIND = "torchscale.max_batch"
MAX_BATCH_SCHEMA_VERSION = 2

CPU_UTILISATION = (
    "CPU ranks have no device memory limit; an OOM there is the host's, reported as peak RSS"
)
CPU_ALLOCATOR = "no CUDA caching allocator on CPU (see peak_rss_bytes)"
NO_MAX_BATCH = "no max batch was found (see reason)"
V1_PEAK_SCOPE = (
    "every probe step: schema 1 probes ran no warm-up, so a compiled probe compiled inside "
    "the steps its peaks cover"
)
V1_COMPILED = "not recorded by schema 1 results"
SETTLES = "until compile settles"

COLUMNS = (
    "group",
    "model",
    "label",
    "world_size",
    "precision",
    "strategy",
    "device",
    "max_batch",
    "limit",
    "limit_reached",
    "memory_utilisation",
    "peak_bytes",
    "peak_basis",
    "probes",
    "probe_compiled",
    "probe_warmup_min",
    "probe_warmup_steps",
    "status",
    "reason",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MaxBatchProbe(_Model):
    """One probe: one fresh torchrun at one batch, in the order the search ran them."""

    batch: int
    phase: Phase = Field(description="double | bisect | confirm (the answer probed again)")
    outcome: ProbeKind = Field(description="fits | oom | failed (any other failure)")
    reason: str | None = Field(default=None, description="why it ran out of memory or failed")
    seconds: float = Field(description="launch to exit")
    peak_allocated_bytes: int | None = Field(default=None, description="CUDA, largest rank")
    peak_reserved_bytes: int | None = Field(default=None, description="CUDA, largest rank")
    peak_rss_bytes: int | None = Field(default=None, description="largest rank's peak RSS")
    alloc_retries: int | None = Field(default=None, description="CUDA allocator retries")
    probe_id: str | None = Field(
        default=None, description="cell id of the probe under max_batch/probes/<group>/cells/"
    )
    warmup_steps: int | None = Field(
        default=None,
        description="warm-up steps this probe ran before its measured ones, from its cell "
        "result (a compiled probe runs more than probe_warmup_min, until two steps compile "
        "nothing); null when its result recorded no warm-up",
    )


class MaxBatchResult(_Model):
    kind: Literal["torchscale.max_batch"] = "torchscale.max_batch"
    schema_version: Literal[1, 2] = 2
    group: str = Field(description="file-safe id: label, world size, precision, strategy, ...")
    definition_sha256: str = Field(description="hash of the cell definition without its batch")
    model: str
    label: str
    world_size: int
    precision: Precision
    strategy: Strategy
    device: Device
    backend: Backend
    nodes: int = 1
    status: Literal["ok", "failed"] = Field(
        description="ok: the search ended with an answer (max_batch, or the limit)"
    )
    reason: str | None = Field(default=None, description="why it failed, or 'at least <limit>'")
    max_batch: int | None = Field(
        description="largest batch per device that fitted while batch + 1 ran out of memory; "
        "the limit when limit_reached"
    )
    limit: int = Field(description="memory.max_batch_limit: the largest batch tried")
    limit_reached: bool = Field(description="the limit fitted: the answer is 'at least limit'")
    largest_fit: int | None = Field(description="largest batch seen fitting (also on failure)")
    start: int = Field(description="first batch probed (the largest batch the sweep ran ok)")
    probe_steps: int = Field(description="measured training steps per probe")
    probe_warmup_min: int | None = Field(
        default=None,
        description="warm-up steps each probe was set to run first, where torch.compile "
        "compiles: the least it ran (a compiled probe runs more until two steps compile "
        "nothing, see probes[].warmup_steps); schema 1: 0",
    )
    probe_warmup_steps: int | None = Field(
        default=None,
        description="warm-up steps the answer's probe (the fit at max_batch whose peaks are "
        "the answer's) really ran, from its cell result; null when there is no answer or it "
        "recorded none (see unavailable); schema 1: 0",
    )
    probe_compiled: bool | None = Field(
        default=None,
        description="the probes ran torch.compile, as the group's cells do (the answer is for "
        "that); null when not recorded (see unavailable)",
    )
    peak_scope: str | None = Field(
        default=None, description="which steps of a probe its peaks cover, one line"
    )
    probes: list[MaxBatchProbe]
    peak_bytes: int | None = Field(
        description="at max_batch: peak reserved on CUDA, peak RSS on CPU (see peak_basis)"
    )
    peak_basis: Literal["reserved", "rss"] | None = None
    peak_allocated_bytes: int | None = Field(description="at max_batch, CUDA, largest rank")
    peak_reserved_bytes: int | None = Field(description="at max_batch, CUDA, largest rank")
    peak_rss_bytes: int | None = Field(description="at max_batch, largest rank's peak RSS")
    device_total_bytes: int | None = Field(
        description="CUDA: total memory of the smallest visible GPU (NVML)"
    )
    memory_utilisation: float | None = Field(
        description="CUDA: peak_reserved_bytes / device_total_bytes at max_batch; null on CPU"
    )
    warnings: list[str] = Field(default_factory=list)
    unavailable: dict[str, str] = Field(
        default_factory=dict, description="metric -> why it is null here"
    )
    started_at: str | None = None
    wall_s: float | None = Field(default=None, description="the whole search, seconds")

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Schema 1 files stay readable: their probes ran no warm-up (a fact of that
        version); whether they compiled was not recorded (said in `unavailable`)."""
        if not isinstance(data, dict) or data.get("schema_version") != 1:
            return data
        unavailable = dict(data.get("unavailable") or {})
        unavailable.setdefault("probe_compiled", V1_COMPILED)
        return {
            **data,
            "probe_warmup_min": 0,
            "probe_warmup_steps": 0,
            "peak_scope": V1_PEAK_SCOPE,
            "unavailable": unavailable,
        }

    def how_probed(self) -> str | None:
        """A few words for the terminal: compiled or eager, and the warm-up the answer's peaks
        come after (the steps its probe ran, or at least the set ones where none recorded)."""
        if self.probe_warmup_min is None:
            return None
        if self.probe_warmup_min == 0:
            return "probed with no warm-up"
        ran = {True: "compiled", False: "eager", None: "probed"}[self.probe_compiled]
        steps = warmup_words(self.probe_warmup_steps, self.probe_warmup_min, self.probe_compiled)
        if self.device == "cuda":
            return f"{ran}, peaks after {steps}"
        return f"{ran}, peak RSS includes {steps}"


def warmup_words(ran: int | None, least: int, compiled: bool | None) -> str:
    """'3 warm-up step(s)' as a probe ran them; not recorded: 'at least 1 warm-up step(s)',
    with ', until compile settles' for a compiled (or unrecorded) probe."""
    if ran is not None:
        return f"{ran} warm-up step(s)"
    return f"at least {least} warm-up step(s)" + ("" if compiled is False else f", {SETTLES}")


def peak_scope(device: str, ran: int | None, least: int, compiled: bool) -> str:
    """Which steps of a probe its peaks cover: on CUDA the rank resets the peak counters after
    the warm-up; on CPU peak RSS is the process's and cannot be reset. `ran`: the warm-up steps
    the answer's probe ran (None: not recorded); `least`: the steps each was set to run."""
    if least == 0:
        compile = ", torch.compile's compile included" if compiled else ""
        return f"every probe step (no warm-up){compile}"
    # "until compile settles": torch.compile compiles in the warm-up, which a compiled rank
    # extends until two steps compile nothing
    each = f"each probe ran {warmup_words(None, least, compiled)}"
    if ran is not None:
        each += f", the answer's probe {ran}"
    if device == "cuda":
        return (
            f"the measured steps: {each}; the CUDA peak counters were reset after the warm-up "
            "(peak reserved keeps what the allocator had cached by then, as the cell's own run "
            "does)"
        )
    return f"the whole probe process: peak RSS cannot be reset, so it includes the warm-up ({each})"


def build_result(
    identity: Mapping[str, Any],
    outcome: SearchOutcome,
    probe_steps: int,
    device_total: tuple[int | None, str | None] = (None, None),
    *,
    warmup_min: int,
    compiled: bool,
    started_at: str | None = None,
    wall_s: float | None = None,
) -> MaxBatchResult:
    """The result of one search. `identity`: group, definition_sha256, model, label,
    world_size, precision, strategy, device, backend, nodes. `device_total`: (bytes, None) or
    (None, why), CUDA only. `warmup_min`: the warm-up steps each probe was set to run (each
    probe's outcome says how many it ran); `compiled`: whether the probes compiled."""
    device = identity["device"]
    unavailable: dict[str, str] = {}
    warnings = list(outcome.warnings)
    at_max = outcome.at_max
    peaks = at_max.outcome if at_max is not None else None
    allocated = peaks.peak_allocated_bytes if peaks else None
    reserved = peaks.peak_reserved_bytes if peaks else None
    rss = peaks.peak_rss_bytes if peaks else None
    total, total_note = device_total if device == "cuda" else (None, None)
    utilisation: float | None = None
    basis: Literal["reserved", "rss"]
    status: Literal["ok", "failed"]
    if device == "cpu":
        peak_bytes, basis = rss, "rss"
        allocated = reserved = None  # what unavailable says, whatever a probe reported
        unavailable["memory_utilisation"] = CPU_UTILISATION
        unavailable["device_total_bytes"] = CPU_UTILISATION
        unavailable["peak_allocated_bytes"] = CPU_ALLOCATOR
        unavailable["peak_reserved_bytes"] = CPU_ALLOCATOR
    else:
        peak_bytes, basis = reserved, "reserved"
        if total is None:
            unavailable["device_total_bytes"] = total_note or "device memory total unknown"
            unavailable["memory_utilisation"] = unavailable["device_total_bytes"]
        elif reserved is not None and total > 0:
            utilisation = reserved / total
    if peaks is None:
        for name in ("peak_bytes", "memory_utilisation"):
            unavailable.setdefault(name, NO_MAX_BATCH)
    warmup_ran = peaks.warmup_steps if peaks is not None else None
    if warmup_ran is None:
        why = NO_MAX_BATCH if peaks is None else "the answer's probe recorded no warm-up"
        each = warmup_words(None, warmup_min, compiled)
        unavailable["probe_warmup_steps"] = f"{why}; each probe ran {each}"
    if peaks is not None and peaks.alloc_retries:
        warnings.append(
            f"at batch {outcome.max_batch} the CUDA allocator retried {peaks.alloc_retries} "
            "time(s) (freed its cache and called cudaMalloc again): it fits, but at a "
            "synchronisation per retry; a slightly smaller batch may train faster"
        )
    if outcome.failure is not None:
        status, reason = "failed", outcome.failure
    elif outcome.limit_reached:
        status = "ok"
        reason = f"at least {outcome.limit}: max_batch_limit fitted without running out of memory"
    else:
        status, reason = "ok", None
    probes = [
        MaxBatchProbe(
            batch=r.batch,
            phase=r.phase,
            outcome=r.outcome.kind,
            reason=r.outcome.reason,
            seconds=round(r.seconds, 3),
            peak_allocated_bytes=r.outcome.peak_allocated_bytes,
            peak_reserved_bytes=r.outcome.peak_reserved_bytes,
            peak_rss_bytes=r.outcome.peak_rss_bytes,
            alloc_retries=r.outcome.alloc_retries,
            probe_id=r.outcome.probe_id,
            warmup_steps=r.outcome.warmup_steps,
        )
        for r in outcome.probes
    ]
    return MaxBatchResult(
        **identity,
        status=status,
        reason=reason,
        max_batch=outcome.max_batch,
        limit=outcome.limit,
        limit_reached=outcome.limit_reached,
        largest_fit=outcome.largest_fit,
        start=outcome.start,
        probe_steps=probe_steps,
        probe_warmup_min=warmup_min,
        probe_warmup_steps=warmup_ran,
        probe_compiled=compiled,
        peak_scope=peak_scope(device, warmup_ran, warmup_min, compiled),
        probes=probes,
        peak_bytes=peak_bytes if peaks is not None else None,
        peak_basis=basis,
        peak_allocated_bytes=allocated,
        peak_reserved_bytes=reserved,
        peak_rss_bytes=rss,
        device_total_bytes=total,
        memory_utilisation=utilisation,
        warnings=warnings,
        unavailable=unavailable,
        started_at=started_at,
        wall_s=wall_s,
    )


def parse_max_batch(data: Any) -> tuple[MaxBatchResult | None, str | None]:
    """(result, None) from decoded JSON of any known version, or (None, why not)."""
    problem = version_problem(data, MAX_BATCH_KIND, "max-batch result", MAX_BATCH_SCHEMA_VERSION)
    if problem is not None:
        return None, problem
    try:  # version 1 is upgraded by the model itself (MaxBatchResult._upgrade)
        return MaxBatchResult.model_validate(data), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        version = data["schema_version"]
        return None, f"invalid version {version} result: {where}: {first['msg']}"


def read_max_batch(path: Path) -> tuple[MaxBatchResult | None, str | None]:
    """Read one max_batch/*.json; never raises for a bad file (the reason says why)."""
    data, problem = read_json(path)
    return (None, problem) if problem is not None else parse_max_batch(data)


def load_max_batch(results_dir: str | Path) -> pd.DataFrame:
    """One row per searched group of an experiment's results directory (columns: COLUMNS;
    `probes` is the number of probes). No search yet: an empty frame. A file that cannot be
    used is left out with a one-line reason, in the log and in `frame.attrs['skipped']`."""
    import pandas as pd

    root = ResultLayout(Path(results_dir)).max_batch_dir
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        result, problem = read_max_batch(path)
        if result is None:
            reason = problem or "unreadable"
            log.warning("skipping %s: %s", path, reason)
            skipped.append((str(path), reason))
            continue
        row = result.model_dump(include=set(COLUMNS) - {"probes"})
        row["probes"] = len(result.probes)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs["skipped"] = skipped
    return frame
