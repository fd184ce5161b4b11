"""The host's side of the ranks' files: each rank's JSON (written by probe.py without
importing the worker) validated into the worker's own `RankMeasurement`, so the same
aggregation (rank/worker/aggregate.py) judges a user's job and a cell alike."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from torchscale.contracts.finding import Finding
from torchscale.rank.worker.measure import RankMeasurement

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


def in_blocks(rank: OwnJobMeasurement, block: int) -> OwnJobMeasurement:
    """The rank's measured steps as consecutive windows of `block` steps each (the repeats
    the aggregation reads: a throughput per window, its spread across them); the steps after
    the last whole block are left out, and so are their samples. Walls are the blocks'
    summed steps (the probe's steps are contiguous: post hook to post hook)."""
    if block < 1:
        raise ValueError(f"block must be >= 1, not {block}")
    steps = [i for w in rank.windows for i in range(len(w.step_s))]
    if len(rank.windows) != 1 or len(steps) < block:
        return rank
    (whole,) = rank.windows
    count = len(steps) // block
    windows = []
    for k in range(count):
        cut = slice(k * block, (k + 1) * block)

        def part(values: list[Any] | None, cut: slice = cut) -> list[Any] | None:
            return None if values is None else values[cut]

        phases = {n: v[cut] for n, v in whole.phases.items()} if whole.phases else None
        step_s = whole.step_s[cut]
        windows.append(
            replace(
                whole,
                wall_s=sum(step_s),
                step_s=step_s,
                phases=phases,
                cpu_wait_s=part(whole.cpu_wait_s),
                cpu_time_s=part(whole.cpu_time_s),
            )
        )
    kept = count * block
    return replace(
        rank,
        steps=block,
        windows=windows,
        samples_per_step=rank.samples_per_step[:kept],
        tokens_per_step=rank.tokens_per_step[:kept],
    )


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
