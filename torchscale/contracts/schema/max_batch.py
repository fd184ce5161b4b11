"""The versioned result of one max-batch search (max_batch/<group>.json): one per group, a
cell's identity without its batch. A figure that cannot be had is null with the reason in
`unavailable`, never estimated; reasons and warnings are findings (a code and its figures,
worded by contracts/wording/max_batch.py). Schema 1 and 2 files are read by the model itself
(`_upgrade`); the one reader is offline/results/documents.py. Fields: docs/memory.md, "What the
result holds".
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, model_validator

from torchscale.contracts.catalog import Precision, Strategy
from torchscale.contracts.cell import Backend, Device
from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record

MAX_BATCH_KIND = "torchscale.max_batch"
MAX_BATCH_SCHEMA_VERSION = 3

ProbeKind = Literal["fits", "oom", "failed"]
Phase = Literal["double", "bisect", "confirm"]
V1_PEAK_SCOPE = (
    "every probe step: schema 1 probes ran no warm-up, so a compiled probe compiled inside "
    "the steps its peaks cover"
)
SETTLES = "until compile settles"


class MaxBatchProbe(Record):
    """One probe: one fresh torchrun at one batch, in the order the search ran them."""

    batch: int
    phase: Phase = Field(description="double | bisect | confirm (the answer probed again)")
    outcome: ProbeKind = Field(description="fits | oom | failed (any other failure)")
    reason: str | None = Field(
        default=None, description="why it ran out of memory or failed, as its cell's error gave it"
    )
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


class MaxBatchResult(Record):
    kind: Literal["torchscale.max_batch"] = "torchscale.max_batch"
    schema_version: Literal[1, 2, 3] = 3
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
    finding: Finding | None = Field(
        default=None, description="why it failed, or that the answer is 'at least <limit>'"
    )
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
    warnings: list[Finding] = Field(default_factory=list)
    unavailable: dict[str, Finding] = Field(
        default_factory=dict, description="metric -> why it is null here"
    )
    started_at: str | None = None
    wall_s: float | None = Field(default=None, description="the whole search, seconds")

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Schema 1 files stay readable: their probes ran no warm-up (a fact of that
        version); whether they compiled was not recorded (said in `unavailable`). Schemas 1
        and 2 stored their reason, warnings and unavailable figures as sentences: each becomes
        the finding its one writer's sentence held (`_v2_findings`)."""
        if not isinstance(data, dict) or data.get("schema_version") not in (1, 2):
            return data
        if data["schema_version"] == 1:
            unavailable = {"probe_compiled": "not recorded by schema 1 results"}
            data = {
                **data,
                "probe_warmup_min": 0,
                "probe_warmup_steps": 0,
                "peak_scope": V1_PEAK_SCOPE,
                "unavailable": {**unavailable, **(data.get("unavailable") or {})},
            }
        return _v2_findings(data)

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


# the constant sentences schemas 1 and 2 stored, by the finding each said
_V2_CONSTANT = {
    "batch 1 runs out of memory: no batch fits": "max_batch.none_fits",
    "no max batch was found (see reason)": "max_batch.no_answer",
    "CPU ranks have no device memory limit; an OOM there is the host's, reported as peak RSS": (
        "max_batch.cpu_no_device_limit"
    ),
    "no CUDA caching allocator on CPU (see peak_rss_bytes)": "max_batch.cpu_no_allocator",
    "MIG slices: their memory total is not read here": "max_batch.total.mig",
    "NVML sees no GPU": "max_batch.total.no_gpu",
    "device memory total unknown": "max_batch.total.unknown",
    "not recorded by schema 1 results": "max_batch.v1_compiled",
}
# the sentences with figures, by the finding each said
_V2_PATTERNS = (
    (r"^the probe at batch (?P<batch>\d+) failed: ", "max_batch.probe_failed"),
    (r"^at least (?P<limit>\d+): max_batch_limit fitted", "max_batch.at_least"),
    (
        r"^batch (?P<batch>\d+) fitted \((?P<where>a probe|the sweep)\) but batch "
        r"(?P<oom_batch>\d+) ran out of memory",
        "max_batch.not_monotonic",
    ),
    (
        r"^at batch (?P<batch>\d+) the CUDA allocator retried (?P<retries>\d+) time",
        "max_batch.alloc_retries",
    ),
    (
        r"^NVML unavailable \((?P<error>.*)\): device memory total unknown$",
        "max_batch.total.nvml_unavailable",
    ),
    (r"^NVML could not read device memory \((?P<error>.*)\)$", "max_batch.total.nvml_failed"),
)


def _v2_finding(text: str) -> Finding:
    """The finding a schema 1 or 2 sentence said; one no writer made is kept as stored."""
    code = _V2_CONSTANT.get(text)
    if code is not None:
        return Finding(code=code)
    for pattern, code in _V2_PATTERNS:
        found = re.match(pattern, text)
        if found is not None:
            figures = {k: int(v) if v.isdigit() else v for k, v in found.groupdict().items()}
            return Finding(code=code, figures=figures)
    return Finding(code="max_batch.stored", figures={"words": text})


def _v2_findings(data: dict[str, Any]) -> dict[str, Any]:
    reason = data.get("reason")
    unavailable = dict(data.get("unavailable") or {})
    warmup = unavailable.pop("probe_warmup_steps", None)
    findings = {k: _v2_finding(v) for k, v in unavailable.items()}
    if warmup is not None:  # the warm-up each probe was set to run, from the stored facts
        figures = {
            "answer": data.get("max_batch") is not None,
            "least": data.get("probe_warmup_min") or 0,
            "compiled": data.get("probe_compiled"),
        }
        findings["probe_warmup_steps"] = Finding(
            code="max_batch.warmup_not_recorded", figures=figures
        )
    upgraded = {k: v for k, v in data.items() if k != "reason"}
    return {
        **upgraded,
        "finding": None if reason is None else _v2_finding(reason),
        "warnings": [_v2_finding(w) for w in data.get("warnings") or []],
        "unavailable": findings,
    }
