"""What a cell pays once before its first measured step, itemised per rank.

Each rank times its own stages (torchscale/rank/worker/main.py and measure.py): torchrun's start
to the worker's entry (interpreter and imports), the CUDA context, the process group (NCCL's
communicators made at its first barrier), the model build and the warm-up. Rank 0 keeps the
slowest rank's figure of each; a stage a rank could not time is null with the reason. Compile
time is inside the warm-up and counted on its own in `warmup.compile_s`, never twice.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import FixedCosts
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_reasons import coded, one_reason

CPU_DEVICE_INIT = coded("unavailable.cpu_device_init")
NOT_TIMED = coded("unavailable.not_timed_by_rank")
TORCHRUN_NAMES = ("torch.distributed.run", "torchrun", "torch/distributed/run.py")


@dataclass
class RankFixedCosts:
    """One rank's fixed stages in seconds; `notes`: stage -> why it is None."""

    process_start_s: float | None = None
    device_init_s: float | None = None
    process_group_init_s: float | None = None
    model_build_s: float | None = None
    warmup_s: float | None = None
    notes: dict[str, Reason] = field(default_factory=dict)


STAGES = tuple(f.name for f in fields(RankFixedCosts) if f.name != "notes")


def process_start_seconds(now: float | None = None) -> tuple[float | None, Reason | None]:
    """Seconds from the start of this process's torchrun (its parent) to `now` (wall clock,
    default: the call), or why they cannot be read: a parent that is not torchrun (a rank run
    in-process by a test, another launcher), or a process table psutil cannot read."""
    now = time.time() if now is None else now
    try:
        import psutil

        parent = psutil.Process(os.getppid())
        command = " ".join(parent.cmdline())
        created = parent.create_time()
    except Exception as exc:  # psutil's errors: no such process, access denied
        error = f"{type(exc).__name__}: {exc}"
        return None, Finding(code="unavailable.parent_unreadable", figures={"error": error})
    if not any(name in command for name in TORCHRUN_NAMES):
        return None, coded("unavailable.parent_not_torchrun")
    return max(0.0, now - created), None


def fixed_costs_record(
    per_rank: Sequence[RankFixedCosts],
) -> tuple[FixedCosts, dict[str, Reason]]:
    """The cell's fixed costs (each stage the slowest rank's) and `unavailable` entries
    (`fixed_costs.<stage>`) for the stages some rank could not time."""
    values: dict[str, float | None] = {}
    unavailable: dict[str, Reason] = {}
    for stage in STAGES:
        timed = [getattr(r, stage) for r in per_rank]
        if timed and all(t is not None for t in timed):
            values[stage] = max(t for t in timed if t is not None)
            continue
        values[stage] = None
        why = [r.notes.get(stage, NOT_TIMED) for r in per_rank if getattr(r, stage) is None]
        unavailable[f"fixed_costs.{stage}"] = one_reason(why) if why else NOT_TIMED
    return FixedCosts(**values), unavailable
