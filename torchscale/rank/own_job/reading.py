"""The host's side of the ranks' files: each rank's JSON (written by probe.py without
importing the worker) validated into the worker's own `RankMeasurement`, so the same
aggregation (rank/worker/aggregate.py) judges a user's job and a cell alike."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from torchscale.contracts.finding import Finding
from torchscale.rank.worker.fixed_costs import STAGES, RankFixedCosts
from torchscale.rank.worker.measure import RankMeasurement, Window

RANK_FILE = re.compile(r"^rank(\d+)\.(measurement|probe)\.json$")


@dataclass
class OwnJobMeasurement(RankMeasurement):
    """A rank of a user's job: the worker's measurement (one window of the measured steps, no
    untimed edge steps) and what only a user's job has."""

    # per measured step, the samples and tokens the loader yielded between two optimizer steps
    # (None: the batch held no tensor / no input_ids-style tensor)
    samples_per_step: list[int | None] = field(default_factory=list)
    tokens_per_step: list[int | None] = field(default_factory=list)
    warmup_steps: int = 0  # TORCHSCALE_OWN_JOB_WARMUP as the rank read it
    optimizer_steps: int = 0  # optimizer steps the rank made under the probe
    stopped: bool = False  # the probe ended the rank (SystemExit(0)) after its steps
    findings: list[Finding] = field(default_factory=list)  # own_job.* codes of this rank
    # wall clock (time.time()) when torch was imported and when training was first seen: the
    # host's start-up figures, against the launch's own start
    torch_imported_unix: float | None = None
    training_started_unix: float | None = None
    # the counted step's FLOPs by the dtype of their ops' first input, and of convolutions
    # (step_facts.py); the peak MFU divides by is chosen from them
    flops_by_dtype: dict[str, float] = field(default_factory=dict)
    conv_flops: float | None = None
    parameters: int | None = None  # elements of the parameters the optimizers train
    sharded: bool = False  # the parameters are DTensor shards (FSDP2): the job's strategy
    device_name: str | None = None  # the CUDA device's name; None on CPU
    tf32: dict[str, Any] | None = None  # contracts.gpu_peaks.Tf32Settings as read on the rank
    # how the job is written (loop_facts.py): the framework driving its loop (None: not seen,
    # an older probe) and its first training DataLoader's settings (None: no DataLoader seen)
    framework: str | None = None
    loader: dict[str, Any] | None = None


def _cut(window: Window, cut: slice) -> Window:
    """The steps `cut` of a window; its wall the steps' sum (the probe's steps are contiguous:
    post hook to post hook)."""

    def part(values: list[Any] | None) -> list[Any] | None:
        return None if values is None else values[cut]

    phases = {n: v[cut] for n, v in window.phases.items()} if window.phases else None
    step_s = window.step_s[cut]
    return replace(
        window,
        wall_s=sum(step_s),
        step_s=step_s,
        phases=phases,
        cpu_wait_s=part(window.cpu_wait_s),
        cpu_time_s=part(window.cpu_time_s),
        model_forward_s=part(window.model_forward_s),
    )


def _uncalibrated(window: Window) -> Window:
    """A block before the last: the calibration timed after all the steps is the last's."""
    return replace(
        window,
        calibration_s=None,
        calibration_wall_s=None,
        calibration_cost_s=None,
        calibration_timer=None,
    )


def in_blocks(rank: OwnJobMeasurement, block: int) -> OwnJobMeasurement:
    """The rank's measured steps as consecutive windows of `block` steps each (the repeats
    the aggregation reads: a throughput per window, its spread across them); the steps after
    the last whole block are left out, and so are their samples. The calibration timed after
    the steps is the last block's alone."""
    if block < 1:
        raise ValueError(f"block must be >= 1, not {block}")
    steps = [i for w in rank.windows for i in range(len(w.step_s))]
    if len(rank.windows) != 1 or len(steps) < block:
        return rank
    (whole,) = rank.windows
    count = len(steps) // block
    windows = [_cut(whole, slice(k * block, (k + 1) * block)) for k in range(count)]
    windows = [*map(_uncalibrated, windows[:-1]), windows[-1]]
    kept = count * block
    return replace(
        rank,
        steps=block,
        windows=windows,
        samples_per_step=rank.samples_per_step[:kept],
        tokens_per_step=rank.tokens_per_step[:kept],
    )


def relaunched(launches: Sequence[Sequence[OwnJobMeasurement]]) -> list[OwnJobMeasurement]:
    """The ranks of several launches of one job as one measurement each, a window per launch
    (a relaunch is a repeat), every window cut to the fewest steps a launch measured so each
    counts alike; ranks missing from a launch are left out. The first launch's other fields
    stand, with the worst peaks and the start-up each stage's median over the launches."""
    common = sorted(set.intersection(*({r.rank for r in ranks} for ranks in launches)))
    out = []
    for number in common:
        parts = [next(r for r in ranks if r.rank == number) for ranks in launches]
        steps = min(len(w.step_s) for p in parts for w in p.windows)
        first = parts[0]
        out.append(
            replace(
                first,
                steps=steps,
                windows=[_cut(w, slice(0, steps)) for p in parts for w in p.windows[:1]],
                samples_per_step=[n for p in parts for n in p.samples_per_step[:steps]],
                tokens_per_step=[n for p in parts for n in p.tokens_per_step[:steps]],
                peak_rss=_worst([p.peak_rss for p in parts]),
                peak_allocated=_worst([p.peak_allocated for p in parts]),
                peak_reserved=_worst([p.peak_reserved for p in parts]),
                fixed=_median_fixed([p.fixed for p in parts]),
            )
        )
    return out


def _worst(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if len(known) == len(values) else None


def _median_fixed(costs: list[RankFixedCosts]) -> RankFixedCosts:
    """Each stage the median over the launches (unknown where a launch did not time it)."""
    merged = RankFixedCosts(notes={k: v for c in costs for k, v in c.notes.items()})
    for stage in STAGES:
        values = [getattr(c, stage) for c in costs]
        known = [v for v in values if v is not None]
        setattr(merged, stage, statistics.median(known) if len(known) == len(values) else None)
    return merged


_ADAPTER: TypeAdapter[OwnJobMeasurement] | None = None


def adapter() -> TypeAdapter[OwnJobMeasurement]:
    global _ADAPTER
    if _ADAPTER is None:
        _ADAPTER = TypeAdapter(OwnJobMeasurement)
    return _ADAPTER


def load_measurement(data: dict[str, Any]) -> OwnJobMeasurement:
    return adapter().validate_python(data)


def read_rank_files(folder: Path) -> tuple[list[RankMeasurement], list[Finding]]:
    """See torchscale.rank.own_job.read_rank_files."""
    ranks: list[RankMeasurement] = []
    findings: list[Finding] = []
    paths = sorted(folder.iterdir()) if folder.is_dir() else []
    for path in paths:
        match = RANK_FILE.match(path.name)
        if match is None:
            continue
        rank, kind = int(match.group(1)), match.group(2)
        try:
            data = json.loads(path.read_text())
            if kind == "probe":
                findings.append(Finding.model_validate(data))
                continue
            measurement = load_measurement(data)
        except (OSError, ValueError, ValidationError) as exc:
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            figures = {"rank": rank, "file": path.name, "error": error}
            findings.append(Finding(code="own_job.rank_file_unreadable", figures=figures))
            continue
        findings.extend(measurement.findings)
        if any(w.step_s for w in measurement.windows):
            ranks.append(measurement)
    ranks.sort(key=lambda r: r.rank)
    return ranks, findings
