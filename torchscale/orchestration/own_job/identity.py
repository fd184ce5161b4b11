"""What torchscale can honestly say a user's job is: its script's name, how many ranks wrote a
measurement, on what device. Its batch size, precision and strategy are not known: the schema
needs values, so placeholders stand there and the result carries `own_job.identity_unknown`
saying so. Its FLOPs, parameters and peak are what the probe counted on rank 0
(rank/own_job/step_facts.py)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.catalog import Strategy
from torchscale.contracts.cell import MAX_SLUG, CellIdentity, file_safe
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_peaks import Peak, Tf32Settings, cell_peak
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.orchestration.own_job.command import OwnJobRequest

if TYPE_CHECKING:  # the aggregation loads torch (rank/): imported where it is called
    from torchscale.contracts.schema.cell_result import JobFacts
    from torchscale.rank.worker.aggregate import CellFacts
    from torchscale.rank.worker.measure import RankMeasurement

OWN_PREFIX = "own:"  # the model name of a user's job: "own:train.py", never a built-in's name
NO_FLOPS = Finding(code="own_job.no_flops")
# the dtype most of a user's step's FLOPs ran in -> the precision whose peak MFU divides by
DTYPE_PRECISION = {"float32": "fp32", "bfloat16": "bf16", "float16": "amp"}


def model_name(label: str) -> str:
    return f"{OWN_PREFIX}{label}"


def measured_batch(ranks: Sequence[RankMeasurement]) -> int | None:
    """The samples a rank's loader gave per measured optimizer step, as the probe counted them
    (`samples_per_step` of its files): the most common count, or None where a step's count is
    unknown (a batch that held no tensor)."""
    counts: list[int | None] = []
    for rank in ranks:
        counts += getattr(rank, "samples_per_step", None) or [None]
    known = [n for n in counts if n is not None and n >= 1]
    if not known or len(known) < len(counts):
        return None
    most: int = Counter(known).most_common(1)[0][0]
    return most


def measured_tokens_per_sample(ranks: Sequence[RankMeasurement]) -> float | None:
    """The tokens per sample of the measured steps (`tokens_per_step` over
    `samples_per_step` of the probe's files, all ranks together), so the throughput has its
    tokens per second; None where any step's tokens are unknown (batches without token ids)."""
    samples = tokens = 0
    for rank in ranks:
        per_step = zip(
            getattr(rank, "samples_per_step", None) or [None],
            getattr(rank, "tokens_per_step", None) or [None],
            strict=False,
        )
        for n, t in per_step:
            if n is None or t is None:
                return None
            samples, tokens = samples + n, tokens + t
    return tokens / samples if samples and tokens else None


def identity_warning(
    batch: int | None,
    precision: str | None = None,
    strategy: str | None = None,
    counted_precision: bool = False,
) -> CellWarning:
    """What the label's placeholders are (`batch`: None when the batch is one too;
    `precision`: the one a sweep filled into the command, or with `counted_precision` the one
    most of the step's FLOPs ran in, None when it is one too; `strategy`: the one the
    parameters showed, None when it is one too)."""
    figures: dict[str, object] = {"batch": batch}
    if precision is not None:
        figures["precision"] = precision
    if counted_precision:
        figures["precision_counted"] = True
    if strategy is not None:
        figures["strategy"] = strategy
    return CellWarning.of("other", "own_job.identity_unknown", figures)


def job_device(ranks: Sequence[RankMeasurement]) -> str:
    """cuda when a rank read CUDA's allocator (its peak or its statistics), else cpu."""
    cuda = any(r.peak_allocated is not None or r.allocator is not None for r in ranks)
    return "cuda" if cuda else "cpu"


def job_strategy(ranks: Sequence[RankMeasurement]) -> Strategy | None:
    """fsdp where the optimizers' parameters are DTensor shards (FSDP2), else None: not
    known (ddp and a single process look alike to the probe)."""
    return "fsdp" if any(getattr(r, "sharded", False) for r in ranks) else None


def how_written(ranks: Sequence[RankMeasurement]) -> JobFacts | None:
    """Rank 0's framework and DataLoader settings, as its probe saw them (loop_facts.py);
    None when no rank saw either (a probe older than them)."""
    first = ranks[0] if ranks else None
    framework = getattr(first, "framework", None)
    loader = getattr(first, "loader", None) or {}
    if framework is None and not loader:
        return None
    from torchscale.contracts.schema.cell_result import JobFacts  # a result's: after a run

    return JobFacts(framework=framework, **loader)


def job_identity(
    cell_id: str,
    argv: Sequence[str],
    label: str,
    world: int,
    device: str,
    batch: int | None,
    strategy: Strategy | None = None,
    precision: str | None = None,
) -> CellIdentity:
    """The job as a cell: the measured batch (else 1), the counted precision (else fp32) and
    the strategy the parameters show (else ddp); a placeholder is said so
    (identity_warning)."""
    digest = hashlib.sha256(json.dumps(list(argv)).encode()).hexdigest()
    return CellIdentity(
        id=cell_id,
        definition_sha256=digest,
        model=model_name(label),
        label=model_name(label),
        batch_size=batch or 1,
        world_size=world,
        precision=precision or "fp32",  # type: ignore[arg-type]
        strategy=strategy or "ddp",
        device="cuda" if device == "cuda" else "cpu",
        backend="nccl" if device == "cuda" else "gloo",
    )


def job_cell_id(
    label: str, batch: int | None, world: int, precision: str | None, sha256: str
) -> str:
    """A sweep's job cell id, 'my_ddp__b8__w2__job__1a2b3c4d': what the config filled into
    the command (a batch or precision it does not name is left out) and the definition's
    hash; 'job' where a model cell's id has its strategy."""
    parts = [file_safe(label)[:MAX_SLUG], *([f"b{batch}"] if batch is not None else [])]
    parts += [f"w{world}", *([precision] if precision is not None else []), "job", sha256[:8]]
    return "__".join(parts)


def as_measured(
    planned: CellIdentity,
    world: int,
    device: str,
    batch: int | None,
    strategy: Strategy | None = None,
    precision: str | None = None,
) -> CellIdentity:
    """A sweep's planned job cell as it ran: its id and definition kept (what --resume
    matches), the world, device, batch per rank and precision as the ranks' files tell them
    (the throughput's samples are the measured batch's)."""
    if world == 0:
        return planned
    cuda = device == "cuda"
    return planned.model_copy(
        update={
            "world_size": world,
            "batch_size": batch or planned.batch_size,
            "precision": precision or planned.precision,
            "device": "cuda" if cuda else "cpu",
            "backend": "nccl" if cuda else "gloo",
            "strategy": strategy or planned.strategy,
        }
    )


def job_spec(
    identity: CellIdentity,
    result_path: Path,
    steps_path: Path,
    request: OwnJobRequest,
    ranks: Sequence[RankMeasurement],
) -> WorkerSpec:
    """The spec the aggregation reads: the job's warm-up and measured steps as the probe
    counted them, nothing injected, nothing profiled."""
    steps = max((r.steps for r in ranks), default=0)
    repeats = max((len(r.windows) for r in ranks), default=1)
    return WorkerSpec(
        cell=identity,
        # not a model torchscale builds (ModelSpec checks its names): never built nor stored
        model=ModelSpec.model_construct(name=identity.model),
        training=TrainingConfig(),
        measurement=MeasurementConfig(
            warmup_steps=request.warmup_steps, steps=max(steps, 1), repeats=max(repeats, 1)
        ),
        data=DataConfig(),
        result_path=str(result_path),
        steps_path=str(steps_path),
    )


def job_facts(
    ranks: Sequence[RankMeasurement], device: str, batch: int | None, precision: str | None = None
) -> CellFacts:
    """What the host knows besides the measurements: the tokens per sample, the parameters
    and the peak MFU divides by, from what the probe counted on rank 0; `precision` the one a
    sweep filled into the command, else the counted one (job_precision)."""
    from torchscale.rank.worker.aggregate import CellFacts

    first = ranks[0] if ranks else None
    peak = job_peak(first)
    counted = job_precision(ranks)
    return CellFacts(
        parameters=getattr(first, "parameters", None),
        model_kind="other",
        tokens_per_sample=measured_tokens_per_sample(ranks),
        device_name=getattr(first, "device_name", None) or device,
        peak_tflops=peak.tflops,
        peak_note=peak.note,
        peak_basis=peak.basis,
        environment={"host": first.host if first else None},
        fused_optimizer=None,
        channels_last=None,
        warnings=(
            identity_warning(
                batch,
                precision or counted,
                job_strategy(ranks),
                counted_precision=precision is None and counted is not None,
            ),
        ),
    )


def _dominant_dtype(rank: RankMeasurement | None) -> str | None:
    """The dtype most of the rank's counted FLOPs ran in (its autocast or its parameters'),
    None where none were counted."""
    by_dtype: dict[str, float] = getattr(rank, "flops_by_dtype", None) or {}
    return max(by_dtype, key=lambda k: by_dtype[k]) if by_dtype else None


def job_precision(ranks: Sequence[RankMeasurement]) -> str | None:
    """The job's precision as rank 0's FLOP count saw it (bf16 under bf16 autocast, fp32 for
    fp32 parameters, amp for fp16); None where nothing was counted or the dtype has no name
    here: the label then keeps its placeholder, said so."""
    dtype = _dominant_dtype(ranks[0] if ranks else None)
    return DTYPE_PRECISION.get(dtype) if dtype is not None else None


def job_peak(rank: RankMeasurement | None) -> Peak:
    """The peak of the GPU at the dtype most of the counted step's FLOPs ran in (a conv net's
    where convolutions hold most of them), under the TF32 settings the rank read; or why none."""
    by_dtype: dict[str, float] = getattr(rank, "flops_by_dtype", None) or {}
    name, tf32 = getattr(rank, "device_name", None), getattr(rank, "tf32", None)
    if name is None:
        return Peak(None, Finding(code="peak.cpu"), None)
    dtype = _dominant_dtype(rank)
    if dtype is None or tf32 is None:
        return Peak(None, NO_FLOPS, None)
    precision = DTYPE_PRECISION.get(dtype)
    if precision is None:
        return Peak(None, Finding(code="peak.own_job_dtype", figures={"dtype": dtype}), None)
    conv_net = (getattr(rank, "conv_flops", None) or 0.0) > sum(by_dtype.values()) / 2
    return cell_peak(name, precision, conv_net, Tf32Settings(**tf32))
