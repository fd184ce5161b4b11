"""The versioned result of one cell (cells/<cell_id>.json).

Written by rank 0 of the worker for a finished cell, or by the sweep for a cell that was skipped
or did not finish (failed, oom, timeout). Every figure that could not be measured on this
hardware is null with the reason in `unavailable`, never a guess.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RESULT_SCHEMA_VERSION = 1

CellStatus = Literal["ok", "failed", "oom", "timeout", "skipped"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepTimeStats(_Model):
    """Step-time distribution in seconds (sample std; cv = std / mean)."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float
    min: float
    max: float
    std: float
    cv: float


class RankStats(_Model):
    rank: int
    host: str
    step_time: StepTimeStats


class Throughput(_Model):
    """Samples (and tokens) per second over barrier-bounded windows; median over repeats."""

    samples_per_s: float = Field(description="global: all ranks together")
    samples_per_s_per_device: float
    tokens_per_s: float | None = Field(description="language models only")
    repeats: list[float] = Field(description="global samples/s of each repeat")
    spread: float = Field(description="(max - min) / median of the repeats")


class Memory(_Model):
    parameter_bytes: int
    gradient_bytes: int
    optimizer_state_bytes: int
    peak_allocated_bytes: int | None = Field(description="CUDA caching allocator; null on CPU")
    peak_reserved_bytes: int | None
    activation_bytes: int | None = Field(description="peak allocated - static, CUDA only")
    peak_rss_bytes: int | None = Field(description="peak resident set of rank 0's process")


class Compute(_Model):
    flops_per_step: float | None = Field(description="per rank, FlopCounterMode, fwd+bwd")
    achieved_tflops_per_device: float | None
    peak_tflops_per_device: float | None
    mfu: float | None


class Communication(_Model):
    step_time_no_sync_s: float | None = Field(description="median step under DDP no_sync()")
    comm_overhead: float | None = Field(description="1 - t_no_sync / t_sync")


class CellResult(_Model):
    kind: Literal["torchscale.cell"] = "torchscale.cell"
    schema_version: Literal[1] = 1
    cell_id: str
    definition_sha256: str = Field(description="hash of everything that shapes the result")
    status: CellStatus
    model: str
    model_label: str
    model_kind: str | None = Field(default=None, description="vision | language | other")
    batch_size: int = Field(description="per device")
    world_size: int
    precision: str
    strategy: str
    device: str
    backend: str
    parameters: int | None = None
    measured_steps: int | None = Field(default=None, description="per repeat")
    warmup_steps: int | None = None
    repeats: int | None = None
    global_batch: int | None = Field(default=None, description="batch x world x grad_accum")
    throughput: Throughput | None = None
    step_time: StepTimeStats | None = Field(default=None, description="all ranks pooled")
    ranks: list[RankStats] = Field(default_factory=list)
    straggler_rank: int | None = Field(default=None, description="rank with highest median")
    memory: Memory | None = None
    compute: Compute | None = None
    communication: Communication | None = None
    warnings: list[str] = Field(default_factory=list)
    unavailable: dict[str, str] = Field(
        default_factory=dict, description="metric -> why it could not be measured here"
    )
    error: dict[str, Any] | None = Field(
        default=None, description="failed/oom/timeout/skipped: reason, root-cause rank, log tail"
    )
    environment: dict[str, Any] = Field(default_factory=dict)
    launch: dict[str, Any] = Field(default_factory=dict, description="argv, env, omp threads")
    started_at: str | None = None
    wall_s: float | None = Field(default=None, description="launch to exit, seconds")
