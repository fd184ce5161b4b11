"""The phases of a training step, named once for everything that times,
stores, marks, reads or judges them.

The worker's phase timers (worker/phases.py) cut every step into STEP_PHASES, which add up to
the step; the result keeps each rank's medians (schema/cell_result.py `PhaseTimes`, one field
per phase) and every step's seconds (`<phase>_s` in steps/<cell>.jsonl). The own-work phases
are what a rank does by itself: a delay can be injected into them (`--inject-delay`), and a
profiled rank marks each with a `torchscale:<phase>` range that the trace readers turn back
into a phase. grad_sync_wait is the wait for the other ranks: no range, no delay.
"""

from __future__ import annotations

from typing import Literal, get_args

OwnWorkPhase = Literal["data", "forward", "backward", "optimizer"]
OWN_WORK_PHASES: tuple[OwnWorkPhase, ...] = get_args(OwnWorkPhase)  # in the order a step runs
GRAD_SYNC_WAIT = "grad_sync_wait"  # last gradient produced -> backward() returned
_AFTER_BACKWARD = OWN_WORK_PHASES.index("backward") + 1
# every phase of a step in the order they run: the wait for gradient sync ends backward
STEP_PHASES: tuple[str, ...] = (
    *OWN_WORK_PHASES[:_AFTER_BACKWARD],
    GRAD_SYNC_WAIT,
    *OWN_WORK_PHASES[_AFTER_BACKWARD:],
)
# the rank's computation: its own work less the wait for its batch
COMPUTE_PHASES: tuple[OwnWorkPhase, ...] = tuple(p for p in OWN_WORK_PHASES if p != "data")
# not a phase: inside a whole step, the seconds the rank's training thread was ready to run
# and waited for a CPU (rank/telemetry/cpu_wait.py); `cpu_wait_s` in the step records
CPU_WAIT = "cpu_wait"
# not a phase either: inside a whole step, the seconds the rank's training thread ran on a CPU
# (its CPU clock, read with the wait at the same edges; its intra-op threads not counted);
# `cpu_time_s` in the step records
CPU_TIME = "cpu_time"
# not a phase: inside a whole step, the seconds a DDP communication hook held the rank's
# gradient collectives before handing DDP their future (the hook's own time, every bucket):
# a launch held late shows in no phase (the others wait for it as long as it waits), so it is
# counted apart; `comm_hold_s` in the step records. COMM_HOLD_BACKWARD is the part held before
# the rank's last gradient, which the backward phase includes (the held buckets delay the
# gradients after them); the rest lies in grad_sync_wait. Measured only where a plug-in
# registers a hook (rank/worker/comm_hold.py); DDP's built-in all-reduce has no hook to time.
COMM_HOLD = "comm_hold"
COMM_HOLD_BACKWARD = "comm_hold_backward"
# not a phase: inside a user's job's forward phase (the rest of its loop), the seconds inside
# the forward of its model, the outermost module holding its optimizer's parameters
# (rank/own_job/probe.py); `model_forward_s` in the step records. A cell's forward phase is its
# model's forward and loss alone: not recorded there
MODEL_FORWARD = "model_forward"
# what the straggler test names where MODEL_FORWARD is measured: the forward phase less it,
# the loop's own work outside its model's forward and backward (a checkpoint, an evaluation)
LOOP = "loop"
# what a step record times besides its phases, each where it was measured
STEP_EXTRAS = (CPU_WAIT, CPU_TIME, COMM_HOLD, COMM_HOLD_BACKWARD, MODEL_FORWARD)
# what a step record times (each as `seconds_column`): the phases, then the rest it measures
STEP_RECORD_TIMES = (*STEP_PHASES, *STEP_EXTRAS)
RANGE_PREFIX = "torchscale:"  # of every range and mark torchscale writes into a trace
# the range around an injected delay: work the rank does inside a phase, not a phase itself
INJECTED_DELAY_RANGE = f"{RANGE_PREFIX}injected_delay"


def phase_range(phase: str) -> str:
    """The name of the range that marks `phase` in a profiled trace: `torchscale:forward`."""
    return f"{RANGE_PREFIX}{phase}"


def seconds_column(phase: str) -> str:
    """The step record's (and the steps table's) column of `phase`: `forward_s`."""
    return f"{phase}_s"
