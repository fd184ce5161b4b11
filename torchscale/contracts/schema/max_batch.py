"""The versioned result of one max-batch search (max_batch/<group>.json): one per group, a
cell's identity without its batch. A figure that cannot be had is null with the reason in
`unavailable`, never estimated; reasons and warnings are findings (a code and its figures,
worded by contracts/wording/max_batch.py); the one reader is offline/results/documents.py.
Fields: docs/memory.md, "What the result holds".
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from torchscale.contracts.catalog import Precision, Strategy
from torchscale.contracts.cell import Backend, Device
from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record

MAX_BATCH_KIND = "torchscale.max_batch"
MAX_BATCH_SCHEMA_VERSION = 3

ProbeKind = Literal["fits", "oom", "failed"]
Phase = Literal["double", "bisect", "confirm"]
SETTLES = "until compile settles"


class MaxBatchProbe(Record):
    """One probe: one fresh torchrun at one batch, in the order the search ran them."""

    batch: int
    phase: Phase = Field(description="double | bisect | confirm (the answer probed again)")
    outcome: ProbeKind = Field(description="fits | oom | failed (any other failure)")
    reason: Finding | None = Field(
        default=None,
        description="why it ran out of memory or failed: its cell's error (`CellError.finding`)",
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
    schema_version: Literal[3] = 3
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
        "nothing, see probes[].warmup_steps)",
    )
    probe_warmup_steps: int | None = Field(
        default=None,
        description="warm-up steps the answer's probe (the fit at max_batch whose peaks are "
        "the answer's) really ran, from its cell result; null when there is no answer or it "
        "recorded none (see unavailable)",
    )
    probe_compiled: bool | None = Field(
        default=None,
        description="the probes ran torch.compile, as the group's cells do (the answer is for "
        "that); null when not recorded (see unavailable)",
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
