"""The max-batch search itself, over any oracle `probe(batch) -> ProbeOutcome`.

Pure (no processes, no files) so that every branch is tested with fake oracles; the real oracle,
one fresh torchrun per probe, is torchscale/orchestration/memory/probe.py. Double, bisect,
confirm (docs/memory.md, "Algorithm"): only an OOM counts as an OOM, since a crash taken for
one would make the answer look smaller than it is; non-monotonic fits are warned about.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.max_batch import Phase, ProbeKind


@dataclass(frozen=True)
class ProbeOutcome:
    """What one probe at one batch gave. Peaks are from the probe's result (None when it
    produced none, as an OOM does)."""

    kind: ProbeKind
    reason: Finding | None = None  # why it ran out of memory or failed: its cell's error
    peak_allocated_bytes: int | None = None  # CUDA, largest of any rank
    peak_reserved_bytes: int | None = None  # CUDA, largest of any rank
    peak_rss_bytes: int | None = None  # largest peak resident set of any rank
    alloc_retries: int | None = None  # CUDA allocator retries during the probe's steps
    probe_id: str | None = None  # the probe's cell id in its result store
    # warm-up steps the probe ran before its measured ones (a compiled rank runs more than it
    # was set to, until two steps compile nothing); None: its result recorded no warm-up
    warmup_steps: int | None = None


@dataclass(frozen=True)
class ProbeRecord:
    batch: int
    outcome: ProbeOutcome
    seconds: float  # wall time of the probe, launch to exit
    phase: Phase


@dataclass(frozen=True)
class SearchOutcome:
    limit: int
    start: int
    max_batch: int | None  # None: nothing fits, or the search stopped on a failure
    limit_reached: bool  # the limit fitted: the answer is "at least <limit>"
    largest_fit: int | None  # largest batch seen fitting (kept when the search failed)
    probes: tuple[ProbeRecord, ...]
    failure: Finding | None  # why there is no answer: a probe failed, or batch 1 does not fit
    warnings: tuple[Finding, ...]

    @property
    def at_max(self) -> ProbeRecord | None:
        """The last probe that fitted at max_batch: its peaks are the answer's."""
        for record in reversed(self.probes):
            if record.batch == self.max_batch and record.outcome.kind == "fits":
                return record
        return None


Probe = Callable[[int], ProbeOutcome]


class _Search:
    """One search's probes, in order."""

    def __init__(self, probe: Probe, clock: Callable[[], float]) -> None:
        self.probe = probe
        self.clock = clock
        self.records: list[ProbeRecord] = []

    def run(self, batch: int, phase: Phase) -> ProbeKind:
        started = self.clock()
        outcome = self.probe(batch)
        self.records.append(ProbeRecord(batch, outcome, self.clock() - started, phase))
        return outcome.kind

    def failure(self) -> Finding:
        """The last probe failed (its own reason is in its record)."""
        return Finding(code="max_batch.probe_failed", figures={"batch": self.records[-1].batch})

    def largest_fit_below(self, batch: int) -> int:
        fits = [r.batch for r in self.records if r.outcome.kind == "fits" and r.batch < batch]
        return max(fits, default=0)


def search_max_batch(
    probe: Probe,
    limit: int,
    *,
    start: int = 1,
    known_fits: Sequence[int] = (),
    confirm: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> SearchOutcome:
    """Find the largest batch that fits. `start`: the first batch probed (a batch known to
    fit saves the doublings below it; if it does not fit, the search goes below it).
    `known_fits`: batches that fitted elsewhere (the sweep), only checked for contradictions.
    `confirm`: probe the answer once more; if it then runs out of memory, search below it."""
    if limit < 1:
        raise ValueError(f"limit must be >= 1, not {limit}")
    first = min(max(1, start), limit)
    state = _Search(probe, clock)
    lo = 0  # largest batch that fitted (0: none yet)

    def done(
        max_batch: int | None, *, limit_reached: bool = False, failure: Finding | None = None
    ) -> SearchOutcome:
        records = tuple(state.records)
        return SearchOutcome(
            limit=limit,
            start=first,
            max_batch=max_batch,
            limit_reached=limit_reached,
            largest_fit=max((r.batch for r in records if r.outcome.kind == "fits"), default=None),
            probes=records,
            failure=failure,
            warnings=tuple(contradictions(records, known_fits)),
        )

    batch = first
    while True:  # doubling, until a probe runs out of memory or the limit fits
        kind = state.run(batch, "double")
        if kind == "failed":
            return done(None, failure=state.failure())
        if kind == "oom":
            hi = batch  # smallest batch that ran out of memory
            break
        lo = batch
        if batch >= limit:
            return done(limit, limit_reached=True)
        batch = min(2 * batch, limit)

    confirmed = not confirm
    while True:
        while hi - lo > 1:  # bisection: lo fits, hi does not
            mid = (lo + hi) // 2
            kind = state.run(mid, "bisect")
            if kind == "failed":
                return done(None, failure=state.failure())
            if kind == "oom":
                hi = mid
            else:
                lo = mid
        if lo == 0:
            return done(None, failure=Finding(code="max_batch.none_fits"))
        if confirmed:
            return done(lo)
        confirmed = True
        kind = state.run(lo, "confirm")
        if kind == "failed":
            return done(None, failure=state.failure())
        if kind == "fits":
            return done(lo)
        # it fitted once and not the second time: the boundary is below it
        hi = lo
        lo = state.largest_fit_below(hi)


def contradictions(records: Sequence[ProbeRecord], known_fits: Sequence[int] = ()) -> list[Finding]:
    """One warning when some batch fitted at or above a batch that ran out of memory (memory
    use that is not monotonic in the batch, or not reproducible from one run to the next)."""
    lowest_oom = min((r.batch for r in records if r.outcome.kind == "oom"), default=None)
    if lowest_oom is None:
        return []
    fits = [(r.batch, "a probe") for r in records if r.outcome.kind == "fits"]
    fits += [(b, "the sweep") for b in known_fits]
    above = [(b, where) for b, where in fits if b >= lowest_oom]
    if not above:
        return []
    batch, where = max(above)
    figures = {"batch": batch, "where": where, "oom_batch": lowest_oom}
    return [Finding(code="max_batch.not_monotonic", figures=figures)]
