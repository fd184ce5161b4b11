"""The probe inside a user's own training job (docs/own-job.md): carried into every Python
process by `carrier/sitecustomize.py`, it finds the steps by torch's global optimizer step
hooks, times their phases and writes each rank's measurement (`PROBE_FILE` in `ENV_DIR`), which
the host reads back with `read_rank_files`. Importing this package imports nothing heavy: it is
on the path of every process of the job.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchscale.contracts.finding import Finding
    from torchscale.rank.worker.measure import RankMeasurement

# the environment the host sets for the job (the agreed interface, names exact)
ENV_DIR = "TORCHSCALE_OWN_JOB_DIR"  # where each rank writes PROBE_FILE
ENV_WARMUP = "TORCHSCALE_OWN_JOB_WARMUP"  # warm-up optimizer steps, discarded
ENV_STEPS = "TORCHSCALE_OWN_JOB_STEPS"  # measured optimizer steps; 0: to the job's end
ENV_STOP = "TORCHSCALE_OWN_JOB_STOP"  # 1: every rank exits with SystemExit(0) after W + N
# (+ the traced window)
ENV_TRACE_STEPS = "TORCHSCALE_OWN_JOB_TRACE_STEPS"  # K steps traced after the measured; 0: none
ENV_TRACE_TOOL = "TORCHSCALE_OWN_JOB_TRACE_TOOL"  # torch (torch.profiler) | nsys (NVTX + trigger)
PROBE_FILE = "rank{rank}.measurement.json"
FAILURE_FILE = "rank{rank}.probe.json"  # written only when the probe failed (fail open)
TRACE_NOTE_FILE = "rank{rank}.trace_note.json"  # why the rank has no trace (fail open)
PROFILER_WARMUP = 1  # untraced steps between the measured steps and the traced window
CARRIER_DIR = Path(__file__).resolve().parent / "carrier"


def read_rank_files(folder: Path) -> tuple[list[RankMeasurement], list[Finding]]:
    """The ranks' measurements with measured steps, sorted by rank, and what else the folder
    says, as findings: a rank that never stepped an optimizer (`own_job.no_optimizer_step`),
    one that ended before its steps (`own_job.ended_early`), a probe failure
    (`own_job.probe_failed`), a file that cannot be read (`own_job.rank_file_unreadable`)."""
    from torchscale.rank.own_job.reading import read_rank_files as read

    return read(folder)
