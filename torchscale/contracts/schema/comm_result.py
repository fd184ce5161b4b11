"""The versioned result of one collective-bandwidth run (comm/<run_id>.json).

Written by rank 0 of a `torchscale comm` launch, or by `torchscale comm --import` from an NVIDIA
nccl-tests output file: the same rows either way, so a report puts both side by side. Every
figure follows nccl-tests' definitions (torchscale/offline/analysis/nccl_bandwidth.py); a row that
could not be measured carries its status and the reason, never a made-up figure. Verdicts and
notes and warnings are findings (a code and its figures, worded by contracts/wording/comm.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record

COMM_SCHEMA_VERSION = 3
COMM_KIND = "torchscale.comm"

RowStatus = Literal["ok", "unsupported", "failed"]
Placement = Literal["in-place", "out-of-place"]
AcrossRanks = Literal["avg", "min", "max"]


class RankTime(Record):
    """One rank's time of one operation: its timed iterations' total / iterations."""

    rank: int
    host: str | None = None
    time_us: float


class CommRow(Record):
    """One op at one size, as one line of an nccl-tests table (one placement)."""

    op: str = Field(description="torchscale.contracts.catalog.COLLECTIVES name")
    size_bytes: int = Field(description="nccl-tests' S for this op (analysis/nccl_bandwidth.py)")
    count: int = Field(description="elements per rank (nccl-tests' count column)")
    dtype: str = Field(description="torch dtype name: float32, float16, bfloat16, ...")
    redop: str | None = Field(default=None, description="sum for reductions, else null")
    root: int | None = Field(default=None, description="broadcast / reduce root, else null")
    placement: Placement
    status: RowStatus = "ok"
    reason: str | None = Field(
        default=None,
        description="why the row is not ok: the backend's refusal or the launch's failure, "
        "as given",
    )
    time_us: float | None = Field(
        default=None, description="time of one op, reduced across ranks (CommResult.across_ranks)"
    )
    time_us_min: float | None = Field(default=None, description="fastest rank's time")
    time_us_max: float | None = Field(default=None, description="slowest rank's time")
    algbw_gbps: float | None = Field(default=None, description="size_bytes / time_us, 1e9 B/s")
    busbw_gbps: float | None = Field(default=None, description="algbw x the op's busbw factor")
    wrong: int | None = Field(
        default=None, description="elements outside tolerance, all ranks summed; null: not checked"
    )
    iter_p50_us: float | None = Field(
        default=None, description="median of single-iteration times, all ranks pooled"
    )
    iter_p99_us: float | None = None
    iter_cv: float | None = Field(default=None, description="std / mean of iteration times")
    ranks: list[RankTime] = Field(default_factory=list, description="per-rank time of one op")


class CommPair(Record):
    """Point-to-point bandwidth between two ranks (`--pairs`): both send `size_bytes` to each
    other at once while every other rank waits; bandwidth is per direction (nccl-tests'
    sendrecv on those two ranks)."""

    a: int
    b: int
    host_a: str | None = None
    host_b: str | None = None
    size_bytes: int
    time_us: float | None = Field(default=None, description="one exchange, slower of the two")
    bandwidth_gbps: float | None = Field(default=None, description="size_bytes / time_us")


class OpSummary(Record):
    """nccl-tests' footer, per op: mean busbw over this op's ok rows, and the check."""

    op: str
    rows: int
    avg_busbw_gbps: float | None
    wrong: int | None = Field(description="summed over rows; null when not checked")
    busbw_factor: float = Field(description="0 with one rank for ops with an (n-1) term")


class CommResult(Record):
    kind: Literal["torchscale.comm"] = "torchscale.comm"
    schema_version: Literal[3] = 3
    id: str = Field(description="run id, also the file's name")
    source: Literal["torchscale", "nccl-tests"] = "torchscale"
    imported_from: str | None = Field(default=None, description="nccl-tests file read")
    world_size: int
    nodes: int = 1
    device: str = Field(description="cuda | cpu")
    backend: str = Field(description="nccl | gloo")
    device_name: str | None = None
    dtype: str
    warmup_iters: int | None = None
    iters: int | None = None
    check: bool = Field(description="results were checked element by element")
    across_ranks: AcrossRanks = Field(
        default="avg", description="how time_us reduces the ranks' times (nccl-tests -a)"
    )
    rows: list[CommRow] = Field(default_factory=list)
    pairs: list[CommPair] = Field(default_factory=list)
    summaries: list[OpSummary] = Field(default_factory=list)
    avg_busbw_gbps: float | None = Field(
        default=None, description="nccl-tests' 'Avg bus bandwidth': mean busbw of all ok rows"
    )
    wrong_total: int | None = Field(default=None, description="null when not checked")
    min_busbw_gbps: float | None = Field(default=None, description="the gate asked for")
    gate: Literal["passed", "failed", "unavailable"] | None = Field(
        default=None, description="null when no minimum was asked for"
    )
    gate_finding: Finding | None = Field(
        default=None, description="the gate's verdict and the figures it rests on"
    )
    status: Literal["ok", "failed", "oom", "timeout"] = Field(
        default="ok", description="how the launch ended; rows finished before a failure are kept"
    )
    error: str | None = Field(default=None, description="why the run stopped early, one line")
    skipped: list[Finding] = Field(
        default_factory=list, description="sizes left out, e.g. too small to split over the ranks"
    )
    warnings: list[Finding] = Field(
        default_factory=list, description="what to keep in mind reading the figures"
    )
    unavailable: dict[str, Finding] = Field(
        default_factory=dict, description="what is missing (pairs, nodes) -> why"
    )
    environment: dict[str, Any] = Field(default_factory=dict)
    launch: dict[str, Any] = Field(default_factory=dict)
    started_at: str | None = None
    wall_s: float | None = None
