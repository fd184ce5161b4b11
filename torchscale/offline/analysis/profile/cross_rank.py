"""The cross-rank analyses of a profile, run once over every rank's reduction: one chain
(matching -> clock offsets -> arrival -> idle taxonomy -> step model -> finding inputs ->
diagnosis), each reading the ones before. Pure; the figures they leave are stored by
`profile_record.profile_analysis`.

Everything about where step time goes is the run's one diagnosis
(`torchscale.offline.analysis.diagnosis`, over the traces' step model and the run's own phase
timers): the stall, exposed-communication and what-if figures, the straggler and the findings
are its parts or its cross-checks, never separate answers to the same question.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.diagnosis import (
    RunEvidence,
    TimerEvidence,
    TraceEvidence,
    busy_caveat,
    diagnose,
)
from torchscale.offline.analysis.diagnosis import findings as ranked_findings
from torchscale.offline.analysis.diagnosis import traces as step_model
from torchscale.offline.analysis.diagnosis.device import calibration_table, work_equal
from torchscale.offline.analysis.diagnosis.inflation import TracedInflation
from torchscale.offline.analysis.trace import clock, collective_matching, idle
from torchscale.offline.analysis.trace import straggler as straggler_analysis
from torchscale.offline.analysis.trace.reduction import RankReduction


@dataclass
class TraceAnalyses:
    """What the chain found, for the stored analysis to read: the reductions by rank, the
    matched collectives, the stall (waits with nothing else to do) and the raw wait inside
    collectives, clock offsets and arrivals, arrival order, the idle taxonomy, the traces'
    step model, the findings' inputs and the run's one diagnosis (None: no step model)."""

    reductions: dict[int, RankReduction]
    notes: list[Finding]
    matched: collective_matching.Matched
    stall: collective_matching.SyncStall
    raw_wait: collective_matching.SyncStall
    offsets: clock.Offsets
    arrivals: clock.Arrivals
    arrival: straggler_analysis.StragglerAnalysis
    taxonomy: pd.DataFrame
    model: step_model.StepModel
    inputs: ranked_findings.FindingInputs
    diagnosis: Diagnosis | None

    @property
    def ranks(self) -> list[int]:
        return sorted(self.reductions)

    @property
    def first(self) -> RankReduction:
        return self.reductions[self.ranks[0]]


def analyse(
    reductions: dict[int, RankReduction],
    *,
    cpu_wait: pd.DataFrame | None = None,
    strategy: str | None = None,
    cell: CellResult | None = None,
    inflation: TracedInflation | None = None,
) -> TraceAnalyses:
    """The cross-rank analyses over the per-rank reductions (`strategy`, when known, picks
    the remedies of the findings; `cell`, the profiled run's result, adds its phase-timer
    model as a cross-check; `cpu_wait`, (rank, step, cpu_wait, cpu_time) seconds of the
    traced steps (the training thread's wait for a CPU and time on one; cpu_time NaN where not
    recorded), tells a rank the host held back from a straggler; `inflation`, the traced
    steps against the run's measured windows, decides whose split heads the diagnosis)."""
    ranks = sorted(reductions)
    first = reductions[ranks[0]]
    notes = [found for rank in ranks for found in reductions[rank].notes]
    device_types = {reductions[r].device_type for r in ranks}
    if len(device_types) > 1:
        notes.append(note("profile.devices_differ", devices=sorted(device_types)))
    steps_by_rank = {r: reductions[r].steps for r in ranks}
    phases_by_rank = {r: reductions[r].phases for r in ranks}
    matched = collective_matching.match_collectives({r: reductions[r].collectives for r in ranks})
    notes += list(matched.notes)
    exposed = {r: reductions[r].idle.exposed for r in ranks}
    # waiting for peers with nothing else to do (the wait hidden behind this rank's own
    # compute costs no time) is the model's part; the raw wait inside collectives is kept
    stall = collective_matching.sync_stall(matched, steps_by_rank, exposed)
    raw_wait = collective_matching.sync_stall(matched, steps_by_rank)
    notes += list(stall.notes)
    offsets = clock.estimate_offsets(matched)
    arrivals = clock.arrivals(matched, offsets)
    arrival = straggler_analysis.attribute_straggler(
        matched, arrivals, phases_by_rank, steps_by_rank
    )
    taxonomy = idle.idle_taxonomy({r: reductions[r].idle for r in ranks}, matched)
    breakdowns = {r: reductions[r].breakdown for r in ranks}
    model = step_model.build_step_model(
        taxonomy,
        phases_by_rank=phases_by_rank,
        matched=matched,
        arrival=arrival,
        waits_known=stall.overall_pct is not None,
        world_size=first.world_size,
        cpu_wait=cpu_wait,
        calibration=(
            calibration_table(
                {r.rank: r.calibration for r in cell.ranks},
                work_equal(cell.cell),
                cell.cell.ranks_per_gpu,
            )
            if cell is not None
            else None
        ),
    )
    notes += model.notes
    inputs = ranked_findings.finding_inputs(
        model,
        breakdowns,
        matched=matched,
        arrival=arrival,
        phases_by_rank=phases_by_rank,
        device_type=first.device_type,
        backend=first.backend,
        strategy=strategy,
        nodes=cell.cell.nodes if cell is not None else None,
    )
    diagnosis = diagnose(
        RunEvidence(
            timers=TimerEvidence(stored=cell.diagnosis) if cell is not None else None,
            traces=TraceEvidence(model=model, inputs=inputs),
            caveat=busy_caveat(cell.telemetry) if cell is not None else None,
            device_type=first.device_type,
            backend=first.backend,
            strategy=strategy,
            nodes=cell.cell.nodes if cell is not None else None,
            injected_ranks=frozenset(d.rank for d in cell.injected_delays)
            if cell is not None
            else frozenset(),
            inflation=inflation,
        )
    )

    return TraceAnalyses(
        reductions=reductions,
        notes=notes,
        matched=matched,
        stall=stall,
        raw_wait=raw_wait,
        offsets=offsets,
        arrivals=arrivals,
        arrival=arrival,
        taxonomy=taxonomy,
        model=model,
        inputs=inputs,
        diagnosis=diagnosis,
    )
