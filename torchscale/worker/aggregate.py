"""Rank 0 turns every rank's measurements into one CellResult. Pure: no torch.distributed."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torchscale.analysis.stats import median_and_spread, step_stats
from torchscale.cell import Status
from torchscale.results.schema import (
    CellResult,
    Communication,
    Compute,
    Memory,
    RankStats,
    Throughput,
)
from torchscale.worker.measure import RankMeasurement
from torchscale.worker.spec import WorkerSpec


@dataclass(frozen=True)
class CellFacts:
    """What rank 0 knows besides the measurements."""

    parameters: int
    model_kind: str
    tokens_per_sample: int | None
    device_name: str  # "cpu" or the CUDA device name
    peak_tflops: float | None
    peak_note: str | None  # why there is no peak (peak_tflops None)
    environment: dict[str, Any]
    fused_optimizer: bool
    channels_last: bool
    peak_basis: str | None = None  # which peak: GPU, dtype and why (e.g. TF32 convolutions)


def achieved_tflops(
    flops_per_step: float, samples_per_s_per_device: float, samples_per_rank_step: int
) -> float:
    """Achieved TFLOP/s per device over the timed windows: FLOPs per optimizer step times the
    steps per second that the throughput figure implies, so MFU and throughput always agree."""
    return flops_per_step * samples_per_s_per_device / samples_per_rank_step / 1e12


def aggregate(spec: WorkerSpec, ranks: Sequence[RankMeasurement], facts: CellFacts) -> CellResult:
    ranks = sorted(ranks, key=lambda r: r.rank)
    world = len(ranks)
    steps = ranks[0].steps
    repeats = len(ranks[0].windows)
    samples_per_rank_step = spec.cell.batch_size * spec.training.grad_accum_steps
    global_batch = samples_per_rank_step * world
    unavailable: dict[str, str] = {}
    warnings: list[str] = []

    # throughput: each repeat's window is barrier-bounded; the slowest rank's wall time counts
    per_repeat = []
    for i in range(repeats):
        wall = max(r.windows[i].wall_s for r in ranks)
        per_repeat.append(global_batch * steps / wall)
    samples_per_s, spread = median_and_spread(per_repeat)
    tokens = samples_per_s * facts.tokens_per_sample if facts.tokens_per_sample else None
    if tokens is None:
        unavailable["tokens_per_s"] = "not a language model"
    throughput = Throughput(
        samples_per_s=samples_per_s,
        samples_per_s_per_device=samples_per_s / world,
        tokens_per_s=tokens,
        repeats=per_repeat,
        spread=spread,
    )

    rank_stats = [
        RankStats(
            rank=r.rank,
            host=r.host,
            step_time=step_stats([t for w in r.windows for t in w.step_s]),
            peak_rss_bytes=r.peak_rss,
            peak_allocated_bytes=r.peak_allocated,
        )
        for r in ranks
    ]
    pooled = step_stats([t for r in ranks for w in r.windows for t in w.step_s])
    straggler = max(rank_stats, key=lambda s: s.step_time.p50).rank if world > 1 else None
    if pooled.cv > spec.measurement.cv_warn_threshold:
        warnings.append(
            f"High variance in step time: CV {pooled.cv:.2f} > "
            f"{spec.measurement.cv_warn_threshold:.2f}"
        )

    # exposed communication: same steps under DDP no_sync() (no gradient all-reduce)
    no_sync_p50 = None
    overhead = None
    if all(r.no_sync for r in ranks):
        no_sync_p50 = statistics.median(t for r in ranks if r.no_sync for t in r.no_sync.step_s)
        overhead = 1 - no_sync_p50 / pooled.p50 if pooled.p50 > 0 else None
    elif world == 1:
        unavailable["comm_overhead"] = "world size 1: no gradient communication to expose"
    elif spec.cell.strategy != "ddp":
        unavailable["comm_overhead"] = (
            "measured for DDP only (FSDP has no no_sync equivalent that removes all comm)"
        )
    else:
        unavailable["comm_overhead"] = "measurement.comm_overhead is off"

    flops = ranks[0].flops_per_step
    achieved = (
        achieved_tflops(flops, throughput.samples_per_s_per_device, samples_per_rank_step)
        if flops
        else None
    )
    mfu = achieved / facts.peak_tflops if achieved is not None and facts.peak_tflops else None
    if flops is None:
        unavailable["flops"] = ranks[0].flops_note or "not counted"
    if mfu is None:
        unavailable["mfu"] = facts.peak_note or "no FLOP count"

    static = ranks[0].static
    peak_alloc = max(
        (r.peak_allocated for r in ranks if r.peak_allocated is not None), default=None
    )
    peak_reserved = max(
        (r.peak_reserved for r in ranks if r.peak_reserved is not None), default=None
    )
    static_total = sum(static.values())
    non_static = peak_alloc - static_total if peak_alloc is not None else None
    peak_rss = max((r.peak_rss for r in ranks if r.peak_rss is not None), default=None)
    if peak_alloc is None:
        unavailable["peak_allocated"] = "no CUDA caching allocator on CPU (see peak_rss_bytes)"

    return CellResult(
        cell=spec.cell,
        status=Status.OK,
        model_kind=facts.model_kind,
        parameters=facts.parameters,
        measured_steps=steps,
        warmup_steps=spec.measurement.warmup_steps,
        repeats=repeats,
        global_batch=global_batch,
        throughput=throughput,
        step_time=pooled,
        ranks=rank_stats,
        straggler_rank=straggler,
        memory=Memory(
            parameter_bytes=static.get("parameter_bytes", 0),
            gradient_bytes=static.get("gradient_bytes", 0),
            optimizer_state_bytes=static.get("optimizer_state_bytes", 0),
            peak_allocated_bytes=peak_alloc,
            peak_reserved_bytes=peak_reserved,
            non_static_peak_bytes=non_static,
            peak_rss_bytes=peak_rss,
        ),
        compute=Compute(
            flops_per_step=flops,
            achieved_tflops_per_device=achieved,
            peak_tflops_per_device=facts.peak_tflops,
            peak_basis=facts.peak_basis,
            mfu=mfu,
        ),
        communication=Communication(step_time_no_sync_s=no_sync_p50, comm_overhead=overhead),
        warnings=warnings,
        unavailable=unavailable,
        environment=facts.environment
        | {
            "timing": ranks[0].timing,
            "fused_optimizer": facts.fused_optimizer,
            "channels_last": facts.channels_last,
            "device_name": facts.device_name,
        },
    )
