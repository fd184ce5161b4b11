"""The one diagnosis (torchscale/offline/analysis/diagnosis/): the straggler rule (a significant
gap is named unless other evidence significantly names another rank), the bounded what-if, the
"ranks take turns" rule, and the schema upgrades that read older models as diagnoses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate, StragglerVerdict
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say
from torchscale.interfaces.report.diagnosis_text import headline, straggler_text
from torchscale.offline.analysis.diagnosis import (
    RunEvidence,
    TimerEvidence,
    bounded_whatif,
    diagnose,
    with_caveat,
)
from torchscale.offline.analysis.diagnosis.findings import (
    FindingInputs,
    rank_findings,
    waits_spread,
)
from torchscale.offline.analysis.diagnosis.verdict import arrival_check, evidence_against, withdraw
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.straggler import Straggler, StragglerAnalysis


def _table(steps: int, ranks: int, extra: dict[int, float], seed: int = 0) -> pd.DataFrame:
    """A phase table: every rank 10 ms forward, 20 ms backward (+ extra on some), 2 ms
    optimizer; each rank's grad-sync wait is the slowest rank's backward minus its own plus a
    1 ms transfer, so the others wait for the slow one as they do in DDP."""
    rng = np.random.default_rng(seed)
    rows = []
    for step in range(steps):
        backward = {r: 0.020 + extra.get(r, 0.0) + rng.normal(0, 0.0005) for r in range(ranks)}
        slowest = max(backward.values())
        for rank in range(ranks):
            wait = slowest - backward[rank] + 0.001
            phases = {
                "data": 0.0001,
                "forward": 0.010 + rng.normal(0, 0.0003),
                "backward": backward[rank],
                "grad_sync_wait": wait,
                "optimizer": 0.002,
            }
            rows.append(
                {"window": 0, "step": step, "rank": rank, **phases, "step_s": sum(phases.values())}
            )
    return pd.DataFrame(rows)


TEST = Finding(
    code="straggler.test", figures={"alpha": 0.01, "min_share": 0.05, "own_work": "timers"}
)


def _named_verdict(rank: int = 1) -> StragglerVerdict:
    gap = Estimate(value=0.05, low=0.048, high=0.052, n=10, measurable=True)
    return StragglerVerdict(
        named=True,
        rank=rank,
        phase="backward",
        candidate_rank=rank,
        gap_s=gap,
        p_value=0.001,
        significant=True,
        min_effect_s=0.003,
        test=TEST,
        kind="compute",
        kind_rule=Finding(code="straggler.rule.slow_phase", figures={"phase": "backward"}),
    )


def _matched(
    last_counts: dict[int, int], instances: int, late_us: dict[int, float] | None = None
) -> Matched:
    """`instances` matched collectives on 2 ranks; rank r arrived last at last_counts[r], and
    the other waited late_us[r] for it (100 us unless given)."""
    rows = []
    order = [r for r, k in last_counts.items() for _ in range(k)]
    for index in range(instances):
        last = order[index] if index < len(order) else None
        for rank in (0, 1):
            wait = 0.0 if last in (None, rank) else (late_us or {}).get(last, 100.0)
            rows.append(
                {
                    "group": "g",
                    "index": index,
                    "rank": rank,
                    "wait_us": wait,
                    "last_by_duration": rank == last,
                    "consistent": True,
                }
            )
    return Matched(matched=pd.DataFrame(rows))


def _arrival_names_rank_0(last: int, instances: int, p: float, late_us: float) -> StragglerAnalysis:
    """Arrival order naming rank 0 of 2: last at `last` of `instances` collectives."""
    share = last / instances
    top = Straggler(
        rank=0,
        share_last=share,
        instances_last=last,
        instances=instances,
        expected_share=0.5,
        p_value=p,
        mean_lateness_us=late_us,
        mean_arrival_lateness_us=None,
        op="all_reduce",
    )
    figures = {"rank": 0, "share": share, "expected": 0.5, "late_us": late_us}
    return StragglerAnalysis(straggler=top, reason=Finding(code="arrival.last", figures=figures))


def test_a_significant_gap_with_a_non_significant_arrival_order_is_named() -> None:
    verdict = _named_verdict(1)
    # rank 1 last at 8 of 10 collectives: p = 0.11, so arrival order names nobody
    reason = Finding(
        code="arrival.chance", figures={"rank": 1, "last": 8, "matched": 10, "p": 0.11}
    )
    arrival = StragglerAnalysis(straggler=None, reason=reason)
    check = arrival_check(_matched({1: 8, 0: 2}, 10), arrival, 1, verdict)
    assert check.agrees is None
    assert evidence_against([check]) == []


def test_a_significant_arrival_order_naming_another_rank_withdraws_the_name() -> None:
    verdict = _named_verdict(1)
    arrival = _arrival_names_rank_0(last=10, instances=10, p=0.002, late_us=100.0)
    check = arrival_check(_matched({0: 10}, 10), arrival, 1, verdict)
    assert check.agrees is False
    assert "rank 0 arrives last" in say(check.detail)
    found = evidence_against([check])
    assert found == ["arrival_order"]
    withdrawn = withdraw(verdict, found)
    assert not withdrawn.named and withdrawn.kind is None and withdrawn.kind_rule is None
    assert withdrawn.why_not == Finding(
        code="straggler.withdrawn", figures={"by": ["arrival_order"]}
    )
    assert withdrawn.significant  # the gap passed; the evidence withdrew it
    line = straggler_text(withdrawn, 2)
    assert line.startswith("Straggler: none (rank 1 +50.0 ms ±2.0 ms/step: ")
    assert line.endswith(": withdrawn by arrival order (last arriver))"), line


def test_a_rank_last_more_often_at_less_cost_withdraws_nothing() -> None:
    """A 40 ms stall every 4th step: the named rank is last at 6 of 24 collectives; the other,
    last at the rest by 0.2 ms, stands out by count but costs the others far less wait."""
    verdict = _named_verdict(1)
    arrival = _arrival_names_rank_0(last=18, instances=24, p=0.02, late_us=200.0)
    matched = _matched({1: 6, 0: 18}, 24, late_us={1: 40_000.0, 0: 200.0})
    check = arrival_check(matched, arrival, 1, verdict)
    assert check.agrees is None and evidence_against([check]) == []
    assert check.detail == Finding(
        code="cross_check.arrival_other_costs_less",
        figures={
            "rank": 1,
            "last": 6,
            "matched": 24,
            "other": 0,
            "other_share": 0.75,
            "wait_us": 240_000.0,
            "other_wait_us": 3_600.0,
        },
    )
    words = say(check.detail)
    assert "3.6 ms of wait in all, against rank 1's 240 ms" in words, words
    # the same counts at the same cost per arrival: the other rank costs more and withdraws it
    costly = arrival_check(_matched({1: 6, 0: 18}, 24), arrival, 1, verdict)
    assert costly.agrees is False and costly.detail.code == "cross_check.arrival_other"


def test_phase_timers_name_an_injected_straggler_with_a_bounded_whatif() -> None:
    table = _table(steps=20, ranks=2, extra={1: 0.030})
    diagnosis = diagnose(RunEvidence(timers=TimerEvidence(steps=table)))
    assert diagnosis is not None and diagnosis.source == "phase timers"
    verdict = diagnosis.straggler
    assert verdict is not None and verdict.named and verdict.rank == 1
    assert verdict.phase == "backward" and verdict.significant
    whatif = diagnosis.whatif
    assert whatif is not None and whatif.named and whatif.rank == 1
    # bounded by the extra work (30 ms) and by the wait it removes (rank 0 waits ~31 ms)
    assert whatif.saved_s.value is not None
    assert whatif.saved_s.value <= whatif.extra_work_s + 1e-9  # type: ignore[operator]
    assert whatif.saved_s.value == pytest.approx(0.030, abs=0.002)
    assert next(f.category for f in diagnosis.findings) == "straggler"
    waits = {w.rank: w.share.value for w in diagnosis.rank_waits}
    assert waits[0] is not None and waits[0] > 0.4  # rank 0 waits for rank 1
    # the parts add up to the step
    total = sum(p.seconds.value or 0.0 for p in diagnosis.parts)
    assert total == pytest.approx(diagnosis.step_s.value, rel=1e-6)


def test_a_balanced_run_names_nobody() -> None:
    diagnosis = diagnose(RunEvidence(timers=TimerEvidence(steps=_table(20, 4, {}))))
    assert diagnosis is not None and diagnosis.straggler is not None
    assert not diagnosis.straggler.named
    assert diagnosis.whatif is None or not diagnosis.whatif.named
    assert all(f.category != "straggler" for f in diagnosis.findings)


def test_whatif_is_capped_by_the_wait_it_removes_and_by_the_extra_work() -> None:
    keys = pd.Index([0, 1, 2])
    step = pd.Series([0.1, 0.1, 0.1], index=keys)
    # rank 1 has 40 ms extra work but rank 0 waits only 10 ms: 10 ms saved per step
    wait = pd.DataFrame({0: [0.010] * 3, 1: [0.0] * 3}, index=keys)
    own = pd.DataFrame({0: [0.050] * 3, 1: [0.090] * 3}, index=keys)
    capped = bounded_whatif(wait, own, step, 1, named=True)
    assert capped is not None and capped.saved_s.value == pytest.approx(0.010)
    # rank 0 waits 60 ms but rank 1's extra work is 40 ms: 40 ms saved, never 60
    wait = pd.DataFrame({0: [0.060] * 3, 1: [0.0] * 3}, index=keys)
    capped = bounded_whatif(wait, own, step, 1, named=True)
    assert capped is not None and capped.saved_s.value == pytest.approx(0.040)
    assert capped.share.value == pytest.approx(0.4)
    # never negative: a candidate with less work than the others saves nothing
    own = pd.DataFrame({0: [0.090] * 3, 1: [0.050] * 3}, index=keys)
    capped = bounded_whatif(wait, own, step, 1, named=False)
    assert capped is not None and (capped.saved_s.value or 0.0) == 0.0


def test_whatif_among_many_ranks_is_bounded_by_its_cost_past_the_slowest_other() -> None:
    """On par with the median rank, the step still waits for the slowest other: at 3 ranks
    the candidate (14 ms of work) saves its work past the next slowest (13 ms), 1 ms, never
    its 2.5 ms over the median (11.5 ms), though the least wait of the others is 1.5 ms."""
    keys = pd.Index([0, 1, 2])
    step = pd.Series([0.02] * 3, index=keys)
    own = pd.DataFrame({0: [0.010] * 3, 1: [0.013] * 3, 2: [0.014] * 3}, index=keys)
    wait = pd.DataFrame({0: [0.0045] * 3, 1: [0.0015] * 3, 2: [0.0005] * 3}, index=keys)
    capped = bounded_whatif(wait, own, step, 2, named=True)
    assert capped is not None and capped.saved_s.value == pytest.approx(0.001)
    assert capped.extra_work_s == pytest.approx(0.001)


def _share(value: float) -> Estimate:
    return Estimate(value=value, low=value * 0.9, high=value * 1.1, n=20, measurable=True)


def _unnamed(significant: bool) -> StragglerVerdict:
    return _named_verdict(1).model_copy(
        update={"named": False, "rank": None, "phase": None, "significant": significant}
    )


def test_ranks_take_turns_only_when_no_gap_is_significant_and_the_waits_are_spread() -> None:
    base = FindingInputs(cycle_us=100_000.0, ranks=4, stall=_share(0.30), waits_known=True)
    spread = {0: _share(0.3), 1: _share(0.25), 2: _share(0.35), 3: _share(0.3)}
    base.verdict, base.rank_waits = _unnamed(False), spread
    (finding,) = rank_findings(base)
    assert "take turns" in finding.title
    # one rank hardly waits while the others wait ~59 %: they wait for it
    base.rank_waits = {0: _share(0.59), 1: _share(0.019), 2: _share(0.6), 3: _share(0.58)}
    assert waits_spread(base.rank_waits) == (False, 1)
    (finding,) = rank_findings(base)
    assert "take turns" not in finding.title and "rank 1" in finding.title
    # a significant gap withdrawn by other evidence: disputed, not turn-taking
    base.verdict, base.rank_waits = _unnamed(True), spread
    (finding,) = rank_findings(base)
    assert "take turns" not in finding.title and "disputed" in finding.title


def test_the_busy_caveat_reaches_the_name_and_its_finding() -> None:
    table = _table(steps=20, ranks=2, extra={1: 0.030})
    diagnosis = diagnose(RunEvidence(timers=TimerEvidence(steps=table)))
    assert diagnosis is not None
    caveat = Finding(code="caveat.busy_machine", figures={"cores": 1.5, "host": "node-a"})
    busy = with_caveat(diagnosis, caveat)
    words = "busy machine (others used 1.5 cores on node-a): check the host first"
    assert busy.busy == caveat and verdict_words.caveat(busy) == words  # stored as its code
    # stored once, on the diagnosis: the verdict is unchanged, and every surface's headline
    # says the caveat right after the name
    assert busy.straggler == diagnosis.straggler and busy.straggler is not None
    said = [(s.kind, s.text) for s in headline(busy)]
    line = ("straggler", straggler_text(busy.straggler, busy.ranks))
    assert said[said.index(line) + 1] == ("caveat", words)
    # the caveat is stored once, on the diagnosis; the problem stores codes only
    straggler_finding = next(f for f in busy.findings if f.category == "straggler")
    assert straggler_finding.finding.code == "problem.straggler"
    assert "check the host first" not in straggler_finding.model_dump_json()
    assert set(straggler_finding.model_dump()) == {"finding", "category", "cost_share", "notes"}
    assert with_caveat(busy, caveat) == busy  # once


def test_ranks_sharing_cores_carry_the_caveat_too() -> None:
    """More ranks than cores on a host: the scheduler delays one rank like a straggler."""
    from torchscale.contracts.schema.cell_telemetry import HostLoad, Telemetry
    from torchscale.offline.analysis.diagnosis import busy_caveat

    def telemetry(ranks: int, cores: int, busy: bool) -> Telemetry:
        host = HostLoad.model_construct(
            host="vm", ranks=list(range(ranks)), cores=cores, busy=busy, other_cores=0.5
        )
        return Telemetry.model_construct(hosts=[host])

    assert busy_caveat(telemetry(2, 2, busy=False)) is None
    shared = busy_caveat(telemetry(4, 2, busy=False))
    assert shared is not None and say(shared) == "4 ranks share 2 cores on vm: check the host first"
    busy = busy_caveat(telemetry(4, 2, busy=True))
    assert busy is not None and say(busy).startswith("busy machine")
    assert busy_caveat(None) is None


def test_the_timers_diagnosis_rebuilt_from_a_folder_carries_the_runs_caveat() -> None:
    """`profile analyze` of a run's folder rebuilds the phase timers' diagnosis from its
    steps.jsonl as rank 0 built it, busy-machine caveat included: else the re-analysis and
    the run's own analysis.json quote the timers' straggler differently."""
    from pathlib import Path

    from torchscale.contracts.schema.cell_telemetry import HostLoad, Telemetry
    from torchscale.offline.analysis.diagnosis import busy_caveat
    from torchscale.offline.results.documents import read_cell
    from torchscale.offline.results.profile_windows import timer_diagnosis

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    run = fixtures / "cpu_sweep_profile/profile/profile/tiny-mlp__b8__w2__fp32__ddp__8154de06"
    result = read_cell(run / "result.json").doc
    assert result is not None  # torchscale 0.3.0 stored no diagnosis of its own
    host = HostLoad.model_construct(host="vm", ranks=[0, 1], cores=2, busy=True, other_cores=1.5)
    telemetry = Telemetry.model_construct(hosts=[host])
    # an analysis rewrote the result with the traces' diagnosis: the timers' is rebuilt
    stored = diagnose(RunEvidence(timers=TimerEvidence(steps=_table(steps=20, ranks=2, extra={}))))
    assert stored is not None
    traced = stored.model_copy(update={"source": "traces"})
    update = {"diagnosis": traced, "telemetry": telemetry}
    timers = timer_diagnosis(run, result.model_copy(update=update))
    assert timers is not None and timers.busy is not None
    assert timers.busy == busy_caveat(telemetry)
    quiet = timer_diagnosis(run, result.model_copy(update={"diagnosis": traced}))
    assert quiet is not None and quiet.busy is None


def test_a_named_straggler_on_an_injected_rank_is_marked_injected() -> None:
    """The diagnosis marks a named rank that --inject-delay slowed on purpose, in `injected`
    and so in its line; another named rank is marked not injected; nobody named stays None."""
    from torchscale.offline.analysis.diagnosis import marked_injected

    device = Finding(code="straggler.more_work", figures={"rank": 1})
    verdict = _named_verdict(1).model_copy(update={"device": device})
    line = straggler_text(verdict, 2)
    assert line == "Straggler: rank 1, compute in backward, +50.0 ms ±2.0 ms/step: " + (
        "more work (rebalance its data)"
    )
    marked = marked_injected(verdict, frozenset({1}))
    assert marked is not None and marked.injected is True and marked.device is None
    # a delay is neither a slower device nor more work: its reading is dropped
    assert straggler_text(marked, 2) == (
        "Straggler (injected: --inject-delay): rank 1, compute in backward, +50.0 ms ±2.0 ms/step"
    )
    other = marked_injected(verdict, frozenset({0}))
    assert other is not None and other.injected is False
    assert straggler_text(other, 2) == line
    nobody = verdict.model_copy(update={"named": False, "rank": None})
    assert marked_injected(nobody, frozenset({1})) == nobody
