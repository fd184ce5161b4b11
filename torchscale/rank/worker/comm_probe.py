"""Tensor-parallel communication from a few steps profiled after the measured windows.

Why a trace: DDP's communication is measured by taking it away (the no_sync window), but TP's
all-reduces cannot be switched off and sit inside forward and backward, where no phase timer
can tell them from compute. So a tp > 1 rank runs PROBE_WARMUP + PROBE_STEPS more steps under
torch.profiler, reduces its trace with `torchscale profile`'s per-rank reducer
(torchscale/offline/analysis/trace/reduce.py) in a private temporary directory it then
deletes, and rank 0 splits the matched collectives into waiting and transfer: docs/strategies.md,
"Tensor parallel: communication, from profiled steps". A probe that fails costs the cell only
this figure: the reason goes into `unavailable`.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchscale.contracts.errors import TorchScaleError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import ProfiledComm
from torchscale.contracts.wording.cell_reasons import coded

if TYPE_CHECKING:
    from torchscale.offline.analysis.trace.reduce import RankReduction
    from torchscale.rank.worker.trainer import Trainer

PROBE_WARMUP = 1  # profiled but discarded: the profiler's own first-step cost
PROBE_STEPS = 3


def probe_rank(trainer: Trainer, rank: int) -> RankReduction | Finding:
    """Profile this rank's extra steps and reduce its trace; why not (a code) on failure.

    Every rank must call it (the capture starts with a barrier)."""
    from torchscale.contracts.worker_spec import ProfileSpec, trace_name
    from torchscale.offline.analysis.trace.reduce import reduce_rank
    from torchscale.offline.traces.kineto import read_kineto
    from torchscale.rank.worker.capture import capture

    directory = Path(tempfile.mkdtemp(prefix=f"torchscale-tp-comm-rank{rank}-"))
    try:
        spec = ProfileSpec(
            tool="torch", wait=0, warmup=PROBE_WARMUP, active=PROBE_STEPS, trace_dir=str(directory)
        )
        outcome = capture(trainer, spec, rank)
        if trace_name(rank) not in outcome.files:
            return Finding(
                code="unavailable.probe_no_trace",
                figures={"notes": [n.model_dump() for n in outcome.notes]},
            )
        return reduce_rank(read_kineto(directory / trace_name(rank), rank_hint=rank))
    except (OSError, TorchScaleError) as exc:
        return Finding(code="unavailable.probe_failed", figures={"rank": rank, "error": str(exc)})
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def profiled_comm(
    reductions: Mapping[int, RankReduction | Finding | None],
) -> tuple[ProfiledComm | None, Finding | None]:
    """Rank 0: the figures from every rank's reduction, or why there are none (pure)."""
    from torchscale.offline.analysis.profile.combine import combine
    from torchscale.offline.analysis.profile.profile_record import share_pct

    problems = [r for r in reductions.values() if isinstance(r, Finding)]
    if problems:
        return None, problems[0]
    found: dict[int, Any] = {k: v for k, v in reductions.items() if v is not None}
    if len(found) < 2:
        return None, coded("unavailable.probe_one_rank")
    analysis = combine(found, source="profiled steps (in memory)", target="comm")
    ranks = analysis.ranks
    if not ranks or min(r.steps for r in ranks) == 0:
        return None, coded("unavailable.probe_no_step")

    def share(column: str) -> float | None:  # the analysis' % over ranks, as a fraction
        pct = share_pct(ranks, column)
        return pct / 100 if pct is not None else None

    exposed, waiting = share("exposed_comm_us"), share("sync_stall_us")
    steps_us = [r.step_us for r in ranks if r.step_us]
    return (
        ProfiledComm(
            steps=min(r.steps for r in ranks),
            step_s=statistics.median(steps_us) / 1e6 if steps_us else None,
            comm=share("comm_us"),
            exposed=exposed,
            waiting_for_peers=waiting,
            exposed_transfer=max(0.0, exposed - waiting)
            if exposed is not None and waiting is not None
            else None,
            matched_collectives=analysis.matched_collectives,
        ),
        None,
    )
