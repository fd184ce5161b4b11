"""The versioned result of one cell (cells/<cell_id>.json).

Written by rank 0 of the worker for a finished cell, or by the sweep for a cell that was skipped
or did not finish (failed, oom, timeout). Every figure that could not be measured on this
hardware is null with the reason in `unavailable`, never a guess.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from torchscale.cell import CellIdentity, Status

# 1: first release (identity fields at top level, memory.activation_bytes).
# 2: identity nested as `cell`, status enum, typed `error`, memory.non_static_peak_bytes,
#    per-rank memory, compute.peak_basis and window-based achieved TFLOP/s.
RESULT_SCHEMA_VERSION = 2


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
    peak_rss_bytes: int | None = Field(default=None, description="this rank's process")
    peak_allocated_bytes: int | None = Field(default=None, description="CUDA only")


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
    non_static_peak_bytes: int | None = Field(
        description=(
            "peak allocated - (parameters + gradients + optimizer state), CUDA only: "
            "activations plus, under DDP, gradient buckets; under FSDP, unsharded parameters, "
            "prefetch and communication buffers"
        )
    )
    peak_rss_bytes: int | None = Field(description="largest peak resident set of any rank")


class Compute(_Model):
    flops_per_step: float | None = Field(description="per rank, FlopCounterMode, fwd+bwd")
    achieved_tflops_per_device: float | None = Field(
        description="flops_per_step x steps / window wall time, median over repeats"
    )
    peak_tflops_per_device: float | None
    peak_basis: str | None = Field(
        default=None, description="which peak was used: GPU, dtype and why (e.g. TF32 convs)"
    )
    mfu: float | None


class Communication(_Model):
    step_time_no_sync_s: float | None = Field(description="median step under DDP no_sync()")
    comm_overhead: float | None = Field(description="1 - t_no_sync / t_sync")


class CellError(_Model):
    """Why a cell did not produce a measurement (or why it was skipped)."""

    reason: str = Field(description="one line, for people")
    root_cause_rank: int | None = None
    exception: str | None = Field(default=None, description="the failing rank's exception")
    exit_signal: str | None = Field(default=None, description="e.g. SIGKILL, when a rank died")
    diagnosis: list[str] = Field(
        default_factory=list, description="hang: one line per rank, where it was"
    )
    artifacts: list[str] = Field(
        default_factory=list, description="stack dumps, flight-recorder dumps, kept with the logs"
    )
    log_tail: str | None = None


class CellResult(_Model):
    kind: Literal["torchscale.cell"] = "torchscale.cell"
    schema_version: Literal[2] = 2
    cell: CellIdentity
    status: Status
    model_kind: str | None = Field(default=None, description="vision | language | other")
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
    error: CellError | None = Field(default=None, description="failed/oom/timeout/skipped")
    environment: dict[str, Any] = Field(default_factory=dict)
    launch: dict[str, Any] = Field(default_factory=dict, description="argv, env, omp threads")
    started_at: str | None = None
    wall_s: float | None = Field(default=None, description="launch to exit, seconds")

    @property
    def cell_id(self) -> str:
        return self.cell.id
