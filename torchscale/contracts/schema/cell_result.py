"""The versioned result of one cell (cells/<cell_id>.json).

Written by rank 0 of the worker for a finished cell, or by the sweep for a cell that was skipped
or did not finish (failed, oom, timeout). Every figure that could not be measured on this
hardware is null with the reason in `unavailable`, never a guess.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from torchscale.contracts import finding
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.flop_convention import MFU_CONVENTION
from torchscale.contracts.schema.cell_telemetry import Telemetry
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.schema.diagnosis import Diagnosis, Estimate, Reason
from torchscale.contracts.versioned import Record

# What a version holds: docs/results.md, "Schema versions"; the one upgrade a version change
# ships from the version before it: offline/results/upgrade.py.
RESULT_SCHEMA_VERSION = 21
CELL_KIND = "torchscale.cell"


# a stored code and its figures (contracts/finding.py)
Code = finding.Finding


class StepTimeStats(Record):
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


class PhaseTimes(Record):
    """Median seconds per phase of one rank over its synchronised measured steps
    (docs/methodology.md, "Phase timing"). A null phase has its reason in the result's
    `unavailable` under `phases.<phase>`."""

    data: float | None = Field(description="fetching the batch")
    forward: float | None = Field(description="forward and loss")
    backward: float | None = Field(
        description="backward compute: backward() called -> last gradient produced; the whole "
        "backward (its communication waits included) when grad_sync_wait is null"
    )
    grad_sync_wait: float | None = Field(
        description="last gradient produced -> backward() returned: the wait for gradient sync"
    )
    optimizer: float | None = Field(description="optimizer step and zero_grad")


class RankCalibration(Record):
    """The fixed calibration a rank timed after each measured window (rank/worker/
    calibration.py): its device's speed, compared across ranks by the straggler verdict."""

    timer: Literal["thread_time", "cuda_events"] = Field(
        description="what `device_s` is: the rank thread's CPU time, or the GPU's CUDA events"
    )
    device_s: list[list[float]] = Field(description="per window, seconds of each repetition")
    wall_s: list[list[float]] = Field(description="per window, wall seconds of each repetition")
    cost_s: list[float] = Field(description="per window, wall seconds the calibration took")


class RankStats(Record):
    rank: int
    host: str
    step_time: StepTimeStats
    peak_rss_bytes: int | None = Field(default=None, description="this rank's process")
    peak_allocated_bytes: int | None = Field(default=None, description="CUDA only")
    alloc_retries: int | None = Field(
        default=None, description="CUDA only: num_alloc_retries during the measured windows"
    )
    compute_time: StepTimeStats | None = Field(
        default=None,
        description="this rank's steps under DDP no_sync(): its compute alone (DDP, world > 1)",
    )
    phases: PhaseTimes | None = Field(default=None, description="median per phase, seconds")
    calibration: RankCalibration | None = Field(
        default=None,
        description="the fixed calibration beside its windows; null: not timed",
    )


class Throughput(Record):
    """Samples (and tokens) per second over barrier-bounded windows; median over repeats."""

    samples_per_s: float = Field(description="global: all ranks together")
    samples_per_s_per_device: float
    tokens_per_s: float | None = Field(description="language models only")
    repeats: list[float] = Field(description="global samples/s of each repeat")
    spread: float = Field(
        description="the farthest repeat from their median, relative (0 for one repeat)"
    )


class Memory(Record):
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
    alloc_retries: int | None = Field(
        default=None,
        description="CUDA only: most cudaMalloc retries of any rank during the measured windows "
        "(memory_stats num_alloc_retries: the allocator freed its cache and tried again, a sign "
        "of memory pressure that costs a synchronisation each time)",
    )
    oom_count: int | None = Field(
        default=None,
        description="CUDA only: most out-of-memory errors of any rank during the measured windows "
        "(memory_stats num_ooms)",
    )
    fragmentation: float | None = Field(
        default=None,
        description="CUDA only, highest of any rank: 1 - peak allocated / peak reserved over the "
        "measured windows, the share of the reserved pool that never held live tensors at the "
        "peak (caching and block splitting)",
    )
    inactive_split_peak_bytes: int | None = Field(
        default=None,
        description="CUDA only, largest of any rank: peak of memory_stats "
        "inactive_split_bytes.all (free bytes stranded inside partly used segments)",
    )


class Compute(Record):
    flops_per_step: float | None = Field(description="per rank, FlopCounterMode, fwd+bwd")
    achieved_tflops_per_device: float | None = Field(
        description="flops_per_step x steps / window wall time, median over repeats"
    )
    peak_tflops_per_device: float | None
    peak_basis: Code | None = Field(
        default=None,
        description="which peak was used (peak.spec: the device, the table row, the dtype and "
        "the TF32 settings that decided it)",
    )
    mfu: float | None = Field(description="achieved / peak_tflops_per_device; " + MFU_CONVENTION)
    measured_peak_tflops_per_device: float | None = Field(
        default=None,
        description="the best matmul TFLOP/s `validate --level perf` measured on the cell's "
        "nodes for the dtype that runs (mean over ranks)",
    )
    measured_peak_basis: Code | None = Field(
        default=None,
        description="where the measured peak comes from (peak.measured: each report's host, "
        "date, dtype and path)",
    )
    mfu_measured: float | None = Field(
        default=None, description="achieved / measured peak: MFU against what this GPU can do"
    )


class Intervals(Record):
    """Headline figures with their 95 % intervals (docs/methodology.md, "Uncertainty"). MFU
    is not stored here: it scales with throughput, so its interval is the
    throughput's scaled by `compute.mfu` (offline/analysis/uncertainty.py, `mfu_estimate`)."""

    samples_per_s: Estimate = Field(description="global throughput, median over repeats")
    step_p50_s: Estimate
    step_p95_s: Estimate
    step_p99_s: Estimate


class InjectedDelay(Record):
    """A delay injected on purpose (`--inject-delay RANK:PHASE:MS`): the straggler it makes is
    artificial."""

    rank: int
    phase: str
    ms: float


class ProfileRecord(Record):
    """Profiled steps run after the measured windows (never inside them)."""

    tool: str = Field(description="torch | nsys")
    trace_dir: str
    wait: int
    warmup: int
    active: int
    files: list[str] = Field(default_factory=list, description="names inside trace_dir")
    capture_s: float | None = Field(description="wall time of the capture, slowest rank")
    notes: list[Code] = Field(
        default_factory=list,
        description="codes with their figures (contracts/wording/profile.py)",
    )


class StackFrame(Record):
    """One frame of a rank's dumped Python stack, as faulthandler printed it."""

    function: str
    file: str = Field(description="the file's path as the rank saw it")
    line: int


class RankPlace(Record):
    """Where one rank was when its stack was dumped (a hang, a fatal signal):
    orchestration/launch/diagnose.py `locate`."""

    rank: int
    kind: Literal["collective", "backward", "code", "library", "unknown"] = Field(
        description="waiting in a torch.distributed call | inside backward (DDP's all-reduce "
        "waits in C++) | running model or harness code | in torch or the stdlib only | "
        "no stack dump"
    )
    frame: StackFrame | None = Field(
        default=None,
        description="the call it waits in (collective), the code it runs (code), the "
        "innermost frame (library); null: none",
    )
    caller: StackFrame | None = Field(
        default=None, description="waiting: the model or harness code that called"
    )


class CellError(Record):
    """Why a cell did not produce a measurement (or why it was skipped): a code and its
    figures (contracts/wording/cell_errors.py), beside the evidence its words quote."""

    why: Code = Field(
        description="plan.*, layout.*: skipped by the plan; own_job.*: a user's job that "
        "measured nothing; failure.*: how the launch ended; slurm.*: the job ended or stopped"
    )
    root_cause_rank: int | None = None
    exception: str | None = Field(default=None, description="the failing rank's exception")
    exit_signal: str | None = Field(default=None, description="e.g. SIGKILL, when a rank died")
    places: list[RankPlace] = Field(
        default_factory=list,
        description="hang, fatal signal: where each rank was, the root cause first",
    )
    artifacts: list[str] = Field(
        default_factory=list, description="stack dumps, flight-recorder dumps, kept with the logs"
    )
    log_tail: str | None = None

    @property
    def finding(self) -> Code:
        """`why` with the evidence its words quote (the rank, the exception, the signal,
        where the ranks were) among its figures: what `wording.say` words."""
        evidence = {
            "rank": self.root_cause_rank,
            "exception": self.exception,
            "signal": self.exit_signal,
            "places": [p.model_dump(mode="json") for p in self.places] or None,
        }
        shown = {k: v for k, v in evidence.items() if v is not None}
        return self.why.model_copy(update={"figures": {**shown, **self.why.figures}})


class DataPipeline(Record):
    """Where the batches came from and how long the step waited for them (docs/data.md).

    `wait_s` is the median time per step spent getting the batch (the `data` phase: the
    DataLoader's next() and the copy to the device), on the rank that waited longest; `share`
    is that over the median step time. With synthetic data it is about 0 by construction.
    """

    source: Literal["synthetic", "disk", "cifar100"]
    wait_s: float | None = Field(description="median data wait per step, slowest rank, seconds")
    share: float | None = Field(description="wait_s / median step time (0.25 = 25 %)")
    wait_s_per_rank: list[float | None] = Field(
        default_factory=list, description="median data wait per step of each rank"
    )
    num_workers: int | None = Field(default=None, description="DataLoader workers per rank")
    pin_memory: bool | None = None
    prefetch_factor: int | None = None
    dir: str | None = Field(default=None, description="where the data was read")
    dataset_bytes: int | None = Field(default=None, description="bytes of the files read")
    samples: int | None = Field(default=None, description="samples in the dataset")
    read_bytes_per_s: float | None = Field(
        default=None,
        description="bytes of samples consumed per second of measured windows, all ranks",
    )
    notes: list[Code] = Field(
        default_factory=list,
        description="what the pipeline notes: codes with their figures "
        "(contracts/wording/cell_reasons.py)",
    )


class Cost(Record):
    """What the measured throughput costs (torchscale/offline/analysis/cost.py, docs/cost.md).

    Every GPU of the cell is paid for the whole time: GPU-hours per million samples =
    world_size x 10^6 / samples_per_s / 3600. On CPU one "GPU" is one rank.
    """

    per_gpu_hour: float | None = Field(description="price of one GPU-hour; null: not given")
    gpu_hours_per_m_samples: float | None
    cost_per_m_samples: float | None
    cost_per_m_tokens: float | None = Field(description="null: the model has no tokens")


class StageTime(Record):
    """One pipeline rank in the measured windows (medians over its steps)."""

    rank: int
    stages: list[int] = Field(description="indices of the stage modules this rank holds")
    busy_s: float = Field(description="compute of its stages per step (forward, loss, backward)")
    step_s: float = Field(description="its step time")
    bubble: float = Field(description="1 - busy_s / step_s: idle share of its step")


class ProfiledComm(Record):
    """Communication of a tensor-parallel cell, from a few steps profiled after the measured
    windows (never inside them): every collective of the layout (a tp cell's tensor-parallel
    ones; hybrid fsdp_tp's FSDP all-gathers and reduce-scatters with them). Shares are of the
    step time, summed over ranks, as `torchscale profile` computes them (docs/strategies.md,
    "Tensor parallel: communication, from profiled steps")."""

    steps: int = Field(description="complete profiled steps analysed per rank (fewest rank)")
    step_s: float | None = Field(description="median profiled step, over ranks")
    comm: float | None = Field(description="share of the step with a collective running")
    exposed: float | None = Field(
        description="share of the step with a collective running and no compute on the rank"
    )
    waiting_for_peers: float | None = Field(
        description="the part of `exposed` spent waiting for a late peer (load imbalance)"
    )
    exposed_transfer: float | None = Field(
        description="exposed - waiting_for_peers: communication a faster link would shorten"
    )
    matched_collectives: int = Field(description="collective instances matched across ranks")


class ParallelMetrics(Record):
    """What a tp, pp or hybrid cell measured beyond every cell's figures (docs/strategies.md)."""

    mesh_shape: list[int]
    mesh_dim_names: list[str]
    stages: list[StageTime] = Field(default_factory=list, description="pipelines: per rank")
    bubble_measured: float | None = Field(
        default=None, description="pipelines: mean over ranks of 1 - busy / step"
    )
    bubble_theoretical: float | None = Field(
        default=None, description="(p-1)/(v*m+p-1) of the schedule (v: stages per rank)"
    )
    slowest_stage_rank: int | None = Field(
        default=None, description="pipelines: the rank whose stages compute longest"
    )
    profiled_comm: ProfiledComm | None = Field(
        default=None, description="tensor parallelism: exposed communication, profiled steps"
    )


class Warmup(Record):
    """The discarded steps before the measured windows, and what they absorbed."""

    step_s: list[float] = Field(description="each warm-up step, slowest rank")
    compile_s: float | None = Field(
        default=None,
        description="training.compile: time torch.compile spent compiling (dynamo's "
        "total_wall_time), slowest rank; inside the warm-up, never in a measured window",
    )


class CompileActivity(Record):
    """training.compile: what torch.compile did in the cell, from dynamo's own tallies
    (torchscale/rank/worker/compile_watch.py). Windows and the collective timeout are sized from the
    warm-up steps that compiled nothing (docs/methodology.md)."""

    compiling_warmup_steps: list[int] = Field(
        description="warm-up steps (0-based, indices into warmup.step_s) in which "
        "torch.compile compiled on any rank; they size neither the windows nor the timeout"
    )
    extra_warmup_steps: int = Field(
        description="warm-up steps run beyond measurement.warmup_steps so that at least 2 "
        "steps compiled nothing (at most 8); included in warmup.step_s"
    )
    graph_breaks: int | None = Field(
        default=None,
        description="graph breaks dynamo met in this cell's process up to the windows' end, "
        "most on any rank (0: each compiled function is whole graphs)",
    )
    recompiles_in_windows: int | None = Field(
        default=None,
        description="frames dynamo compiled inside the measured windows (sync and no_sync), "
        "most on any rank: each a recompile after a failed guard, or with warmup_steps 0 the "
        "first compile; their steps' times include compiling (a warning says so)",
    )
    graph_breaks_in_windows: int | None = Field(
        default=None, description="graph breaks met by those compiles, most on any rank"
    )
    compile_s_in_windows: float | None = Field(
        default=None,
        description="seconds dynamo spent compiling inside the measured windows, slowest rank",
    )


class HostBound(Record):
    """GPU cells: how much of a step the GPU is busy: a short CUDA-only torch.profiler trace
    of a few steps after the measured windows (rank/worker/busy_trace.py), reduced on each rank
    to the union of its kernel, memcpy and memset intervals over the wall time of those steps
    (offline/analysis/trace/gpu_busy.py); the busiest rank's share is the cell's. Null figures
    with `reason` where it is not measured (a CPU cell, a pipeline, a capture that failed: the
    cell still succeeds)."""

    gpu_busy_s: float | None = Field(
        description="GPU busy seconds per traced step; on several ranks the busiest rank's"
    )
    step_s: float | None = Field(description="the wall seconds per traced step")
    gpu_busy_share: float | None = Field(description="gpu_busy_s / step_s, clamped to [0, 1]")
    host_bound: bool | None = Field(
        description="gpu_busy_share < threshold (HOST_BOUND_SHARE, "
        "torchscale/contracts/thresholds.py): the GPU waits for Python and kernel launches "
        "for most of the step"
    )
    method: Literal["cuda_trace", "arithmetic"] | None = Field(
        description="cuda_trace: the trace after the windows (over `steps` steps); arithmetic: "
        "no share measured, the step's FLOPs at the GPU's peak judged it (offline/results/"
        "host_bound.py, when read); null: not measured"
    )
    reason: Code | None = Field(
        default=None,
        description="why the figures are null: a code and its figures "
        "(contracts/wording/cell_reasons.py)",
    )
    steps: int | None = Field(
        default=None, description="traced steps the share was measured over (CUDA trace)"
    )
    verdict: finding.Finding | None = Field(
        default=None,
        description="the verdict as a finding (host_bound.launch_time | host_bound.gpu_busy: "
        "busy_share, steps, threshold, gpu_busy_s, step_s)",
    )


class FixedCosts(Record):
    """What a cell pays once before its first measured step, in seconds, each the slowest
    rank's; a null one has its reason in the result's `unavailable` under
    `fixed_costs.<name>`. Compile time is not repeated here: it is inside `warmup_s`, and
    counted on its own in `warmup.compile_s` (one fact, one copy)."""

    process_start_s: float | None = Field(
        default=None,
        description="torchrun's start to the worker's entry: interpreter start and imports "
        "(torch's included)",
    )
    device_init_s: float | None = Field(
        default=None,
        description="CUDA context: torch.cuda.init and the first allocation on the rank's GPU",
    )
    process_group_init_s: float | None = Field(
        default=None,
        description="init_process_group and the first barrier (NCCL's communicators); it "
        "includes the rendezvous' wait for the last rank to join",
    )
    model_build_s: float | None = Field(
        default=None, description="the model built, moved, wrapped (DDP/FSDP/mesh), optimizer"
    )
    warmup_s: float | None = Field(
        default=None,
        description="every warm-up step (compile included: warmup.compile_s) and the ranks' "
        "agreements on extra steps and the window length",
    )


class JobFacts(Record):
    """A user's job (`profile -- COMMAND`, a `jobs:` row): how it is written, as the probe saw
    it on rank 0, so a next step names the job's own settings, not torchscale's
    (rank/own_job/loop_facts.py; docs/own-job.md)."""

    framework: Literal["pytorch", "hf_trainer", "lightning", "accelerate"] | None = Field(
        default=None,
        description="whose code stepped the optimizer: a plain loop (pytorch), the Hugging "
        "Face Trainer, Lightning's Trainer or accelerate; null: not seen",
    )
    num_workers: int | None = Field(
        default=None, description="the first training DataLoader's workers; null: none seen"
    )
    pin_memory: bool | None = None
    persistent_workers: bool | None = None
    prefetch_factor: int | None = Field(default=None, description="null: no workers")


class CellResult(Record):
    kind: Literal["torchscale.cell"] = "torchscale.cell"
    schema_version: Literal[21] = 21
    cell: CellIdentity
    status: Status
    model_kind: str | None = Field(default=None, description="vision | language | other")
    parameters: int | None = None
    measured_steps: int | None = Field(default=None, description="per repeat")
    warmup_steps: int | None = None
    repeats: int | None = None
    global_batch: int | None = Field(
        default=None,
        description="samples per optimizer step: batch x data-parallel replicas x grad_accum "
        "(replicas = world size under ddp and fsdp)",
    )
    throughput: Throughput | None = None
    step_time: StepTimeStats | None = Field(default=None, description="all ranks pooled")
    ranks: list[RankStats] = Field(default_factory=list)
    diagnosis: Diagnosis | None = Field(
        default=None,
        description="the one diagnosis of the run; the straggler and communication figures "
        "are read off it",
    )
    intervals: Intervals | None = None
    memory: Memory | None = None
    compute: Compute | None = None
    injected_delays: list[InjectedDelay] = Field(
        default_factory=list, description="--inject-delay: an artificial straggler"
    )
    profile: ProfileRecord | None = None
    telemetry: Telemetry | None = Field(
        default=None, description="sampled during the measured windows; null: see unavailable"
    )
    data: DataPipeline | None = Field(default=None, description="the input pipeline")
    cost: Cost | None = Field(default=None, description="price per million samples/tokens")
    parallel: ParallelMetrics | None = Field(
        default=None, description="tp, pp and hybrid cells: the mesh, stages and bubble"
    )
    warmup: Warmup | None = None
    compile: CompileActivity | None = Field(
        default=None, description="training.compile: what compiled, and when"
    )
    window_edge_steps: int | None = Field(
        default=None,
        description="untimed steps run after each window's opening edge (collection, "
        "sampler start, synchronize, barrier) before its timed steps; null: not measured",
    )
    host_bound: HostBound | None = Field(
        default=None, description="GPU cells: the GPU's busy share of a step"
    )
    fixed_costs: FixedCosts | None = Field(
        default=None, description="what the cell paid before measuring, itemised"
    )
    warnings: list[CellWarning] = Field(default_factory=list)
    unavailable: dict[str, Reason] = Field(
        default_factory=dict,
        description="metric -> why it could not be measured here: a code and its figures "
        "(worded by contracts/wording/cell_reasons.py)",
    )
    error: CellError | None = Field(default=None, description="failed/oom/timeout/skipped")
    environment: dict[str, Any] = Field(default_factory=dict)
    launch: dict[str, Any] = Field(default_factory=dict, description="argv, env, omp threads")
    job: JobFacts | None = Field(default=None, description="a user's job: how it is written")
    started_at: str | None = None
    wall_s: float | None = Field(default=None, description="launch to exit, seconds")

    @property
    def cell_id(self) -> str:
        return self.cell.id
