"""Every old version family loads into today's shape: the fields the report reads are there,
filled from what the old result recorded (`offline/results/versions.py` and its `upgrades/`),
or null with the reason in `unavailable`, so the report has one path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchscale.contracts.schema.cell_result import (
    PART_NAMES,
    RESULT_SCHEMA_VERSION,
    CellResult,
    DataPipeline,
)
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import say
from torchscale.contracts.wording import verdicts as verdict_words
from torchscale.contracts.wording.unavailable import why
from torchscale.offline.results.profile_versions import with_run
from torchscale.offline.results.split_figures import split_figures
from torchscale.offline.results.upgrades.older_blocks import OlderBlocks
from torchscale.offline.results.upgrades.point_figures import (
    INSIDE_COMPUTE,
    NO_INTERVAL,
    NO_WINDOW,
    ONE_RANK,
    OUTSIDE,
    OVER_STEP,
    SYNC_STEP,
    TEST,
    diagnosis_from_point_figures,
    is_point_figures,
)
from torchscale.offline.results.upgrades.point_findings import (
    DATA_WAIT_MIN,
    EXPOSED_COMM_MIN,
    STRAGGLER_MIN,
    cell_words,
    point_figure_findings,
)
from torchscale.offline.results.upgrades.verdicts import not_named_reason
from torchscale.offline.results.versions import parse_cell_result

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROFILE_V3 = Path("cpu_sweep_profile/profile/profile/tiny-mlp__b8__w2__fp32__ddp__8154de06")


def _read(relative: str) -> tuple[CellResult, int]:
    raw = json.loads((FIXTURES / relative).read_text())
    result, version, problem = parse_cell_result(raw)
    assert problem is None and result is not None and version is not None
    assert result.schema_version == RESULT_SCHEMA_VERSION
    return result, version


def test_point_figures_with_nothing_to_split_read_with_every_part_not_measurable() -> None:
    """A schema-7-or-older cell whose no_sync window gave neither share (tensor parallel):
    a diagnosis with every part not measurable and why, judged by the point figures' rule
    (none found here), its step the median of its steps."""
    result, version = _read("results_v6/cpu_tiny_gpt2_tp2.json")
    assert version <= 7 and result.step_time is not None
    diagnosis = result.diagnosis
    assert diagnosis is not None and is_point_figures(diagnosis)
    assert all(p.share.value is None and p.share.reason == NO_WINDOW for p in diagnosis.parts)
    older = _older("results_v6/cpu_tiny_gpt2_tp2.json")
    assert diagnosis.findings == point_figure_findings(result, older) == []
    assert diagnosis.step_s.value == result.step_time.p50


def test_point_figures_read_at_load_as_a_diagnosis_with_their_own_findings() -> None:
    """Schema 7 and older kept point figures: read, the result holds the diagnosis built from
    them, with the findings of their own rule (a 73.6 % exposed communication is at least
    EXPOSED_COMM_MIN; the 0.3 % imbalance names nobody), not re-derived by the diagnosis'
    rule, and the point figures as they were measured."""
    relative = "results_v7/cpu_tiny_mlp_ddp_w2.json"
    result, version = _read(relative)
    raw = json.loads((FIXTURES / relative).read_text())
    assert version == 7 and "communication" not in result.model_dump()
    assert split_figures(result).load_imbalance == raw["communication"]["load_imbalance"]
    diagnosis = result.diagnosis
    assert is_point_figures(diagnosis) and diagnosis is not None
    assert diagnosis.findings == point_figure_findings(result, _older(relative))
    assert [f.category for f in diagnosis.findings] == ["exposed_comm"]
    (finding,) = diagnosis.findings
    assert finding.cost_pct == pytest.approx(100 * raw["communication"]["comm_overhead"])
    assert finding.title.startswith(cell_words(result.cell))
    assert finding.cost_share.low is None and finding.cost_share.high is None  # no interval
    assert diagnosis.straggler is not None and not diagnosis.straggler.named


def _older(relative: str) -> OlderBlocks:
    """The point figures a stored result's diagnosis is read from."""
    return OlderBlocks.of(json.loads((FIXTURES / relative).read_text()))


def _points() -> tuple[CellResult, OlderBlocks]:
    """The schema-7 cell as read, without the diagnosis its point figures gave it, and them."""
    result, _ = _read("results_v7/cpu_tiny_mlp_ddp_w2.json")
    older = _older("results_v7/cpu_tiny_mlp_ddp_w2.json")
    assert older.communication is not None and older.straggler is not None
    return result.model_copy(update={"diagnosis": None}), older


@pytest.mark.parametrize(
    ("field", "share", "category"),
    [
        ("load_imbalance", STRAGGLER_MIN, "straggler"),
        ("load_imbalance", STRAGGLER_MIN * 0.99, None),
        ("load_imbalance", 1.2, None),
        ("comm_overhead", EXPOSED_COMM_MIN, "exposed_comm"),
        ("comm_overhead", EXPOSED_COMM_MIN * 0.99, None),
        ("comm_overhead", -0.3, None),
    ],
)
def test_a_point_figure_is_a_finding_from_its_threshold_and_in_its_domain(
    field: str, share: float, category: str | None
) -> None:
    """No interval to judge noise by: a point share is a finding where it is at least its
    threshold and a share the step can have, in [0, 1]."""
    result, older = _points()
    assert older.communication is not None
    others = {"load_imbalance": 0.0, "comm_overhead": 0.0, field: share}
    comm = older.communication.model_copy(update=others)
    found = point_figure_findings(result, older.model_copy(update={"communication": comm}))
    assert [f.category for f in found] == ([category] if category else [])
    if category is not None:
        assert found[0].cost_pct == pytest.approx(100 * share)


def test_a_point_data_wait_is_a_finding_from_its_threshold() -> None:
    """The input pipeline is waited for at least DATA_WAIT_MIN of the step (never for
    synthetic data)."""
    result, older = _points()
    assert older.communication is not None
    comm = older.communication.model_copy(update={"load_imbalance": 0.0, "comm_overhead": 0.0})
    older = older.model_copy(update={"communication": comm})
    data = DataPipeline(source="disk", wait_s=0.001, share=DATA_WAIT_MIN)
    fed = result.model_copy(update={"data": data})
    assert [f.category for f in point_figure_findings(fed, older)] == ["data_wait"]
    synthetic = fed.model_copy(update={"data": data.model_copy(update={"source": "synthetic"})})
    assert point_figure_findings(synthetic, older) == []


def test_a_profiled_run_keeps_its_analysis_figures_over_point_figures() -> None:
    """A profile analysis without a diagnosis does not take its run's point-figure diagnosis:
    its own trace figures are better evidence; a stored step model it does take."""
    analysis = ProfileAnalysis.model_validate(
        json.loads((FIXTURES / PROFILE_V3 / "analysis.json").read_text())
    )
    assert analysis.diagnosis is None
    result, _ = _read(str(PROFILE_V3 / "result.json"))
    assert is_point_figures(result.diagnosis)
    assert with_run(analysis, result).diagnosis is None
    modelled, _ = _read("results_v8/cpu_tiny_mlp_ddp_w2.json")
    assert with_run(analysis, modelled).diagnosis == modelled.diagnosis


def test_a_stored_step_model_reads_with_the_diagnosis_findings_and_caveat() -> None:
    """Schema 8-9 stored its step model without findings: read, it is the diagnosis, decided
    by the phase timers, with the findings the diagnosis' rule derives from its parts (each
    costing its part's share) and no per-rank waits (the reason in `unavailable`)."""
    result, version = _read("results_v8/cpu_tiny_mlp_ddp_w2.json")
    assert version == 8
    diagnosis = result.diagnosis
    assert diagnosis is not None and diagnosis.source == "phase timers"
    assert diagnosis.findings, "a 23.8 % exposed transfer is a finding"
    parts = {"exposed_comm": "exposed_transfer", "load_imbalance": "wait_for_peers"}
    for finding in diagnosis.findings:
        part = diagnosis.part(parts[finding.category])
        assert part is not None and part.share.value is not None
        assert finding.cost_pct == pytest.approx(100 * part.share.value)
        assert finding.cost_share == part.share
    assert not diagnosis.rank_waits and diagnosis.whatif is None
    assert "diagnosis.rank_waits" in result.unavailable
    assert "diagnosis.findings" not in result.unavailable


@pytest.mark.parametrize(
    "relative",
    [
        "cpu_crashes1/cpu_tiny_mlp_ddp_w2.json",
        "cells_v12_GONE/cpu_tiny_mlp_ddp_w2.json",
    ],
)
def test_an_unnamed_verdict_says_why_in_the_rules_words(relative: str) -> None:
    """Schema 12 and older: an unnamed, tested verdict stored no `not_named`; it reads with
    the rule's words, off its own interval or the check that withdrew it."""
    result, version = _read(relative)
    raw = json.loads((FIXTURES / relative).read_text())
    assert version <= 12 and raw["diagnosis"]["straggler"].get("not_named") is None
    assert result.diagnosis is not None and result.diagnosis.straggler is not None
    verdict = result.diagnosis.straggler
    assert not verdict.named and verdict.gap_s is not None
    assert verdict.why_not == not_named_reason(verdict)
    assert verdict_words.why_not(verdict) in (
        "could be noise: its interval reaches 0",
        "below the minimum effect",
    ) or verdict_words.why_not(verdict).startswith("withdrawn: ")


def test_a_withdrawn_verdict_names_the_check() -> None:
    result, _ = _read("cells_v12_GONE/cpu_tiny_mlp_ddp_w2.json")
    assert result.diagnosis is not None and result.diagnosis.straggler is not None
    verdict = result.diagnosis.straggler.model_copy(update={"withdrawn_by": "arrival order"})
    assert say(not_named_reason(verdict)) == "withdrawn: arrival order"


def test_a_version_13_named_straggler_reads_marked_injected_or_not() -> None:
    """Schema 13: a named straggler says whether --inject-delay made it, off the result's own
    delays."""
    cells = sorted((FIXTURES / "cpu_default_sweep" / "default_scaling" / "cells").glob("*.json"))
    named = []
    for path in cells:
        result, version = _read(str(path.relative_to(FIXTURES)))
        verdict = result.diagnosis.straggler if result.diagnosis is not None else None
        if verdict is not None and verdict.named:
            delayed = {d.rank for d in result.injected_delays}
            assert verdict.injected == (verdict.rank in delayed)
            named.append(version)
    assert named and set(named) == {13}


def test_point_figures_read_as_a_step_split_without_intervals() -> None:
    """Schema 7's point figures as today's step split: exposed transfer and waiting for peers
    are the stored shares with no interval, compute the rest of the step, data and rest not
    measurable with why; the five shares' known values add up to the step."""
    result, older = _points()
    comm = older.communication
    assert comm is not None and comm.comm_overhead is not None and comm.load_imbalance is not None
    diagnosis = diagnosis_from_point_figures(result, older)
    assert diagnosis is not None and diagnosis.source == "phase timers"
    shares = {p.name: p.share for p in diagnosis.parts}
    assert [p.name for p in diagnosis.parts] == list(PART_NAMES)
    assert shares["exposed_transfer"].value == comm.comm_overhead
    assert shares["wait_for_peers"].value == comm.load_imbalance
    for name in ("exposed_transfer", "wait_for_peers", "compute"):
        share = shares[name]
        assert share.measurable and share.low is None and share.high is None
        assert share.reason == NO_INTERVAL
    for name in ("data", "rest"):
        assert shares[name].value is None and not shares[name].measurable
        assert shares[name].reason == INSIDE_COMPUTE
    total = sum(s.value for s in shares.values() if s.value is not None)
    assert total == pytest.approx(1.0)
    assert diagnosis.step_s.value == comm.step_time_s and diagnosis.step_s.low is None
    assert diagnosis.step_s.reason == SYNC_STEP


@pytest.mark.parametrize(("stored", "shown"), [(1.3, None), (-0.2, None), (0.25, 0.25)])
def test_a_point_share_outside_its_domain_is_not_measurable(
    stored: float, shown: float | None
) -> None:
    """A point share outside [0, 1] is noise no interval can tell apart: no value, the reason
    said; compute is then unknown too."""
    result, older = _points()
    assert older.communication is not None
    comm = older.communication.model_copy(update={"comm_overhead": stored})
    diagnosis = diagnosis_from_point_figures(
        result, older.model_copy(update={"communication": comm})
    )
    assert diagnosis is not None
    exposed, compute = diagnosis.part("exposed_transfer"), diagnosis.part("compute")
    assert exposed is not None and compute is not None
    assert exposed.share.value == shown
    if shown is None:
        assert exposed.share.reason == OUTSIDE and not exposed.share.measurable
        assert compute.share.value is None and compute.share.reason is not None
        assert "exposed comm" in str(why(compute.share.reason))
        assert say(OUTSIDE) in str(why(compute.share.reason))


def test_two_point_shares_over_the_step_are_both_not_measurable() -> None:
    """Exposed communication and waiting for peers each in [0, 1] but together above the
    step cannot both be right: neither is measurable, each says so, and compute (the rest)
    says the same, not that a figure was outside 0-100 %."""
    result, older = _points()
    assert older.communication is not None
    comm = older.communication.model_copy(update={"comm_overhead": 0.7, "load_imbalance": 0.5})
    diagnosis = diagnosis_from_point_figures(
        result, older.model_copy(update={"communication": comm})
    )
    assert diagnosis is not None
    for name in ("exposed_transfer", "wait_for_peers", "compute"):
        part = diagnosis.part(name)
        assert part is not None and part.share.value is None and part.seconds.value is None
        assert part.share.reason == OVER_STEP


@pytest.mark.parametrize(
    ("imbalance", "injected", "named"),
    [
        (0.003, False, False),
        (0.003, True, True),
        (STRAGGLER_MIN, False, True),
        (1.5, False, False),
    ],
)
def test_the_slowest_rank_is_named_only_where_the_others_wait_for_it(
    imbalance: float, injected: bool, named: bool
) -> None:
    """No significance test: the slowest rank by compute is named where the run delayed it
    on purpose or the others wait for it at least STRAGGLER_MIN of the step (a share it can
    have); the verdict says there was no test, and why nobody is named."""
    result, older = _points()
    assert older.communication is not None and older.straggler is not None
    comm = older.communication.model_copy(update={"load_imbalance": imbalance})
    straggler = older.straggler.model_copy(update={"injected": injected})
    changed = older.model_copy(update={"communication": comm, "straggler": straggler})
    diagnosis = diagnosis_from_point_figures(result, changed)
    assert diagnosis is not None and diagnosis.straggler is not None
    verdict = diagnosis.straggler
    assert verdict.named is named and verdict.candidate_rank == straggler.rank
    assert verdict.p_value is None and verdict.test == TEST
    assert verdict.rank == (straggler.rank if named else None)
    assert (verdict_words.why_not(verdict) is None) is named


@pytest.mark.parametrize(
    ("imbalance", "words"),
    [
        (None, "not recorded"),
        (1.5, say(OUTSIDE)),
        (-0.1, say(OUTSIDE)),
        (0.003, f"less than {STRAGGLER_MIN * 100:.0f} %"),
    ],
)
def test_an_unnamed_point_straggler_says_its_own_reason(
    imbalance: float | None, words: str
) -> None:
    """Nobody named: the reason is the case's own (the wait not recorded, outside 0-100 %, or
    below STRAGGLER_MIN), never 'less than 5 %' for a wait nobody recorded."""
    result, older = _points()
    assert older.communication is not None
    comm = older.communication.model_copy(update={"load_imbalance": imbalance})
    diagnosis = diagnosis_from_point_figures(
        result, older.model_copy(update={"communication": comm})
    )
    assert diagnosis is not None and diagnosis.straggler is not None
    why = verdict_words.why_not(diagnosis.straggler)
    assert not diagnosis.straggler.named and why is not None and words in why
    others = [w for w in ("not recorded", say(OUTSIDE), "less than") if w not in words]
    assert not any(w in why for w in others)


def test_a_cell_with_nothing_to_split_keeps_its_data_wait_finding() -> None:
    """One rank, or no no_sync shares (tensor parallel): every part not measurable, no
    straggler verdict for one rank, and the data wait found by the point figures' rule."""
    result, older = _points()
    data = DataPipeline(source="disk", wait_s=0.01, share=0.25)
    for update, blocks in (
        ({"cell": result.cell.model_copy(update={"world_size": 1})}, older),
        ({}, older.model_copy(update={"communication": None})),
    ):
        cell = result.model_copy(update={**update, "data": data})
        diagnosis = diagnosis_from_point_figures(cell, blocks)
        assert diagnosis is not None
        why = NO_WINDOW if cell.cell.world_size > 1 else ONE_RANK
        assert all(p.share.value is None and p.share.reason == why for p in diagnosis.parts)
        assert [f.category for f in diagnosis.findings] == ["data_wait"]
        assert diagnosis.findings[0].cost_pct == pytest.approx(25.0)
    one = result.model_copy(update={"cell": result.cell.model_copy(update={"world_size": 1})})
    alone = diagnosis_from_point_figures(one, older)
    assert alone is not None and alone.straggler is None
    stored = _read("results_v7/cpu_tiny_mlp_ddp_w2.json")[0]
    assert diagnosis_from_point_figures(stored, older) is None
    failed = result.model_copy(update={"status": "failed"})
    assert diagnosis_from_point_figures(failed, older) is None


def test_tensor_parallel_point_figures_keep_their_profiled_shares() -> None:
    """A version-7 tensor-parallel cell has no no_sync window but profiled steps after its
    windows: its exposed transfer and waiting are their shares (values with no interval),
    compute the rest of the profiled step; its exposed communication is a finding by the
    thresholds the diagnosis states."""
    result, version = _read("tp_profiled_v7/tiny-gpt2__b4__w2__fp32__tp2__7241ec80.json")
    assert version == 7
    assert result.parallel is not None and result.parallel.profiled_comm is not None
    profiled = result.parallel.profiled_comm
    diagnosis = result.diagnosis
    assert diagnosis is not None and is_point_figures(diagnosis)
    assert diagnosis.rule is not None and diagnosis.rule == diagnosis.basis
    exposed = diagnosis.part("exposed_transfer")
    waiting = diagnosis.part("wait_for_peers")
    compute = diagnosis.part("compute")
    assert exposed is not None and waiting is not None and compute is not None
    assert exposed.share.value == pytest.approx(profiled.exposed_transfer)
    assert waiting.share.value == pytest.approx(profiled.waiting_for_peers)
    assert exposed.share.reason is not None and "profiled steps" in str(why(exposed.share.reason))
    assert all(p.share.low is None and p.share.high is None for p in (exposed, waiting, compute))
    assert profiled.exposed_transfer is not None and profiled.waiting_for_peers is not None
    rest = 1.0 - profiled.exposed_transfer - profiled.waiting_for_peers
    assert compute.share.value == pytest.approx(rest)
    assert diagnosis.step_s.value == pytest.approx(profiled.step_s)
    assert exposed.seconds.value == pytest.approx(
        profiled.exposed_transfer * diagnosis.step_s.value
    )
    (finding,) = [f for f in diagnosis.findings if f.category == "exposed_comm"]
    assert finding.cost_pct == pytest.approx(profiled.exposed_transfer * 100)
