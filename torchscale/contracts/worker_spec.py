"""The cell description the sweep hands to every rank (a JSON file named on the command line):
the host writes it, the cell worker (rank/worker/main.py) reads it."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    MAX_PROFILE_STEPS,
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.errors import UsageError
from torchscale.contracts.step_phases import OWN_WORK_PHASES, RANGE_PREFIX, OwnWorkPhase
from torchscale.contracts.versioned import FrozenRecord, Record
from torchscale.contracts.wording.spell import as_set

MAX_DELAY_MS = 60_000.0
DELAY_FORMAT = "expected RANK:PHASE:MS, e.g. 1:backward:50"


class DelaySpec(FrozenRecord):
    """`--inject-delay RANK:PHASE:MS`: rank RANK sleeps MS ms in PHASE once every step (see
    torchscale/rank/worker/delay.py for where exactly)."""

    rank: int = Field(ge=0)
    phase: OwnWorkPhase  # grad-sync wait is no place to sleep in: it is the wait for the others
    ms: float = Field(gt=0, le=MAX_DELAY_MS)

    def text(self) -> str:
        """As written on the command line: `1:backward:50`."""
        return f"{self.rank}:{self.phase}:{as_set(self.ms)}"


def parse_delay(text: str) -> DelaySpec:
    """`RANK:PHASE:MS` -> DelaySpec; a UsageError with one line saying what is wrong."""
    where = f"--inject-delay {text!r}"
    parts = text.strip().split(":")
    if len(parts) != 3:
        raise UsageError(f"{where}: {DELAY_FORMAT}")
    rank_text, phase, ms_text = (p.strip() for p in parts)
    if not rank_text.isdigit():
        raise UsageError(f"{where}: rank {rank_text!r} is not a rank (0, 1, 2, ...)")
    phase = phase.lower()
    if phase not in OWN_WORK_PHASES:
        raise UsageError(f"{where}: phase {phase!r} is not one of {', '.join(OWN_WORK_PHASES)}")
    if ms_text.lower().endswith("ms"):
        ms_text = ms_text[:-2].strip()
    try:
        ms = float(ms_text)
    except ValueError:
        raise UsageError(f"{where}: {ms_text!r} is not a number of milliseconds") from None
    if not math.isfinite(ms) or ms <= 0 or ms > MAX_DELAY_MS:
        raise UsageError(
            f"{where}: the delay must be more than 0 and at most {MAX_DELAY_MS:g} ms, got {ms_text}"
        )
    return DelaySpec.model_validate({"rank": int(rank_text), "phase": phase, "ms": ms})


class ProfileSpec(Record):
    """Extra steps captured after the measured windows (never inside them).

    tool "torch": torch.profiler with schedule(wait, warmup, active), one compressed Kineto
    trace per rank (`<trace_dir>/rank<k>.trace.json.gz`). tool "nsys": no torch profiler, NVTX
    ranges around the same steps (the launch is wrapped in `nsys profile` by the caller).
    Either way `<trace_dir>/rank<k>.phases.json` holds the worker's own phase timings of the
    active steps, to cross-check a trace against.
    """

    tool: Literal["torch", "nsys"] = "torch"
    wait: int = Field(default=1, ge=0, le=MAX_PROFILE_STEPS)
    warmup: int = Field(default=2, ge=0, le=MAX_PROFILE_STEPS)
    active: int = Field(default=5, ge=1, le=MAX_PROFILE_STEPS)
    record_shapes: bool = False
    with_stack: bool = False
    trace_dir: str


# how the ranks start nsys's collection: the launcher (orchestration/profiling/nsys.py) sets
# CAPTURE_ENV beside the `nsys profile` argv, the ranks (rank/worker/capture.py) fire the trigger
CAPTURE_ENV = "TORCHSCALE_NSYS_CAPTURE"
CaptureRange = Literal["cudaProfilerApi", "nvtx", "none"]
CAPTURE_RANGES: tuple[CaptureRange, ...] = ("cudaProfilerApi", "nvtx", "none")
NVTX_CAPTURE = f"{RANGE_PREFIX}capture"  # the range whose push starts an nvtx capture


def capture_range(env: Mapping[str, str] | None = None) -> CaptureRange:
    """The trigger the launcher asked for in CAPTURE_ENV; "none" when unset (a launch that is
    not torchscale's own nsys wrap: nsys then captures the whole run and needs no trigger)."""
    value = (os.environ if env is None else env).get(CAPTURE_ENV, "none")
    return next((mode for mode in CAPTURE_RANGES if mode == value), "none")


def trace_name(rank: int) -> str:
    """A rank's Kineto trace in ProfileSpec.trace_dir."""
    return f"rank{rank}.trace.json.gz"


def phases_name(rank: int) -> str:
    """A rank's own phase timings of the traced steps in ProfileSpec.trace_dir."""
    return f"rank{rank}.phases.json"


class WorkerSpec(Record):
    """What one rank needs: the cell's identity, how to build and train it, where to write."""

    cell: CellIdentity
    model: ModelSpec  # name and architecture options (the identity holds name and label)
    training: TrainingConfig
    measurement: MeasurementConfig
    data: DataConfig
    result_path: str
    steps_path: str
    profile: ProfileSpec | None = None
    inject_delay: list[DelaySpec] = Field(default_factory=list)
    # where each rank looks for its node's `validate --level perf` report (worker/
    # measured_peak.py), for MFU against the measured peak; empty: not looked for
    acceptance_dirs: list[str] = Field(default_factory=list)
