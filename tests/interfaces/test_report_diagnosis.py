"""One verdict per run, the same on every surface, in the report: every section shows
the run's one diagnosis in the terminal's words (report/diagnosis_text.py) and computes none of
its own; its busy-machine caveat goes wherever its straggler or findings are shown; per-rank
waits are the diagnosis' `rank_waits`; cross-checks only in the appendix, a disagreeing one in
one line; summary.csv carries the diagnosis' columns.

Sweep cells are the sweep-and-profile fixture's (tests/fixtures/cpu_sweep_profile), given a
hand-made diagnosis (tests/interfaces/test_report_uncertainty.py); the profiled run is that
fixture's profile, its analysis.json and result.json rewritten holding the same diagnosis as
`torchscale profile` writes them now.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.interfaces.test_report_uncertainty import (
    MLP_W2,
    STRAGGLER_FINDING,
    blocks_of,
    build,
    diagnosis_of,
    estimate,
    named_attribution,
    rendered,
    sweep,
    table,
    with_attribution,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import CrossCheck, Diagnosis, RankWait, WhatIf
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis, findings_for_target
from torchscale.contracts.wording import say
from torchscale.contracts.wording.figures import share_text
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.diagnosis_text import (
    split_text,
    straggler_text,
    sync_stall_text,
    whatif_text,
)
from torchscale.interfaces.report.model import Findings, KeyFigures, Report, Table, Text
from torchscale.interfaces.report.parts.context import slug
from torchscale.interfaces.report.render import html, markdown, pdf
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.analysis.diagnosis import marked_injected
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.frame import COLUMNS, cells_table

BUSY = Finding(code="caveat.busy_machine", figures={"cores": 1.5, "host": "node-a"})
CAVEAT = say(BUSY)
PROFILE = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "profile"
PROFILE_CELL = "tiny-mlp__b8__w2__fp32__ddp__8154de06"
PROFILED = "tiny-mlp b8 x2 fp32 ddp (profiled run, eager)"
CELL = "tiny-mlp b8 x2 fp32 ddp"


def busy_diagnosis(**update: Any) -> Diagnosis:
    """A 2-rank diagnosis naming rank 1 in backward on a busy machine, with its finding."""
    return diagnosis_of(named_attribution(), [STRAGGLER_FINDING], BUSY).model_copy(update=update)


def texts(report: Report, section: str) -> list[str]:
    return [b.text for b in blocks_of(report, section, Text)]


# ------------------------------------------------------------------------ a sweep cell


@pytest.fixture(scope="module")
def busy_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    root = sweep(tmp_path_factory.mktemp("busy"), {MLP_W2: [with_attribution(busy_diagnosis())]})
    return build(root)


def test_the_caveat_shows_with_the_cells_findings_in_markdown_and_html(
    busy_report: Report,
) -> None:
    (findings,) = blocks_of(busy_report, "bottlenecks", Findings)
    (found,) = [f for f in findings.findings if f.source == CELL]
    assert found.caveat == CAVEAT
    assert CAVEAT not in found.evidence  # the caveat is its own field, said once
    summary = [t for t in texts(busy_report, "summary") if STRAGGLER_FINDING.title in t]
    assert summary and all(f"Caveat: {CAVEAT}." in t for t in summary)
    md = markdown.render(busy_report).decode("utf-8")
    assert f"Caveat: {markdown.inline(CAVEAT)}" in md  # the summary line of the PR comment
    page = html.render(busy_report).decode("utf-8")
    assert f"<strong>Caveat:</strong> {CAVEAT}" in page
    # the PDF's page (WeasyPrint lays out this HTML), charts stubbed
    printed = pdf.render_html(busy_report, charts={c.id: "data:," for c in busy_report.charts()})
    assert f'<span class="label">Caveat:</span> {CAVEAT}' in printed
    for name, text in rendered(busy_report).items():
        flat = " ".join(text.split())  # the terminal wraps its lines
        assert CAVEAT in flat or markdown.inline(CAVEAT) in flat, name


def test_the_straggler_line_is_the_terminals(busy_report: Report) -> None:
    diagnosis = busy_diagnosis()
    line = straggler_text(diagnosis.straggler, diagnosis.ranks)
    assert line.startswith("Straggler: rank 1, compute in backward, ")
    tests = table(busy_report, "bottlenecks-straggler-tests")
    (row,) = [r for r in tests.rows if r["cell"] == CELL]
    assert row["verdict"] == line
    assert row["caveat"] == f"Caveat: {CAVEAT}"
    assert row["_severity"] == "warn"
    chart = next(c for c in busy_report.charts() if c.id.endswith(slug(MLP_W2)))
    assert line in (chart.note or "") and CAVEAT in (chart.note or "")
    ranks = table(busy_report, "latency-ranks")
    assert CAVEAT in (ranks.note or "")
    texts_ = rendered(busy_report)
    assert line in texts_["html"] and json.dumps(line, ensure_ascii=False) in texts_["json"]


def test_a_disagreeing_cross_check_is_one_line_and_the_appendix_lists_them(
    tmp_path: Path,
) -> None:
    costs_more = Finding(
        code="cross_check.no_sync_costs_more",
        figures={"low": 0.01, "high": 0.09, "model_low": -0.02, "model_high": 0.005},
    )
    checks = [
        CrossCheck(
            check="no_sync_comm",
            estimate=estimate(0.05, 0.01, 0.09),
            agrees=False,
            detail=costs_more,
        ),
        CrossCheck(
            check="arrival_order",
            estimate=None,
            agrees=True,
            detail=Finding(code="cross_check.arrival_undecided"),
        ),
    ]
    diagnosis = busy_diagnosis(cross_checks=checks)
    report = build(sweep(tmp_path, {MLP_W2: [with_attribution(diagnosis)]}))
    (row,) = [r for r in table(report, "bottlenecks-straggler-tests").rows if r["cell"] == CELL]
    assert row["checks"] == (
        "cross-checks disagree: communication cost (no_sync windows) (the appendix lists them)"
    )
    appendix = table(report, "appendix-cross-checks")
    assert [(r["check"], r["verdict"]) for r in appendix.rows] == [
        ("communication cost (no_sync windows)", "disagrees"),
        ("arrival order (last arriver)", "agrees"),
    ]
    assert appendix.rows[0]["figure"] == "5 % ±4 %"
    # never beside the headline: no cross-check detail in the summary
    assert "communication costs more" in say(costs_more)
    assert not any(say(costs_more) in t for t in texts(report, "summary"))
    # the one line is said on every surface, from the stored checks: the summary's table is
    # the first screen of Markdown and the terminal, which show no Bottlenecks section
    (summary,) = [r for r in table(report, "summary-diagnoses").rows if r["run"] == CELL]
    assert summary["checks"] == row["checks"]
    for first_screen in (markdown.render(report), term.render(report, full=False)):
        assert b"cross-checks disagree: communication cost" in first_screen


def test_summary_columns_carry_the_diagnosis(tmp_path: Path) -> None:
    root = sweep(tmp_path, {MLP_W2: [with_attribution(busy_diagnosis())]})
    from torchscale.results import load

    cells = load(root).cells.set_index("cell_id")
    for column in ("straggler_rank", "straggler_phase", "diagnosis_source", "caveat"):
        assert column in COLUMNS
    row = cells.loc[MLP_W2]
    assert row["straggler_rank"] == 1 and row["straggler_phase"] == "backward"
    assert bool(row["straggler_named"]) is True
    assert row["diagnosis_source"] == "phase timers"
    assert row["caveat"] == CAVEAT
    assert row["wait_for_peers_share"] == pytest.approx(0.30)
    others = cells.drop(index=MLP_W2)
    assert others["caveat"].isna().all()
    # the other two-rank cell (torchscale 0.3.0) recorded no diagnosis: it names nobody
    (gpt,) = [i for i in others.index if "tiny-gpt2" in i and "__w2__" in i]
    assert pd.isna(others.loc[gpt, "diagnosis_source"])
    assert pd.isna(others.loc[gpt, "straggler_named"])
    assert others[others["world_size"] == 1]["straggler_rank"].isna().all()


def test_the_summary_gap_is_the_printed_one_and_the_phase_gap_has_its_own_column() -> None:
    """summary.csv's gap is the printed one, not the named phase's: straggler_gap_s is the
    verdict's own-work gap, the one every surface prints; the phase's gap is
    straggler_phase_gap_s."""
    path = Path(__file__).parents[1] / "fixtures" / "cells" / "cpu_tiny_mlp_ddp_w2.json"
    read = read_cell(path)
    result = read.doc
    assert result is not None, read.problem
    diagnosis = busy_diagnosis()
    assert diagnosis.straggler is not None
    verdict = diagnosis.straggler.model_copy(
        update={
            "gap_s": estimate(0.0232, 0.0201, 0.0263),
            "phase_gap_s": estimate(0.0311, 0.0290, 0.0332),
        }
    )
    diagnosis = diagnosis.model_copy(update={"straggler": verdict})
    row = cells_table([result.model_copy(update={"diagnosis": diagnosis})]).iloc[0]
    assert "straggler_phase_gap_s" in COLUMNS
    assert row["straggler_gap_s"] == pytest.approx(0.0232)
    assert row["straggler_phase_gap_s"] == pytest.approx(0.0311)
    assert "+23.2 ms" in straggler_text(verdict, diagnosis.ranks)  # the printed gap
    # nobody named: neither gap is a straggler's
    noise = Finding(code="straggler.noise_interval")
    unnamed = verdict.model_copy(update={"named": False, "rank": None, "why_not": noise})
    quiet = diagnosis.model_copy(update={"straggler": unnamed})
    row = cells_table([result.model_copy(update={"diagnosis": quiet})]).iloc[0]
    assert row["straggler_gap_s"] is None and row["straggler_phase_gap_s"] is None


# ------------------------------------------------------------------------ a profiled run


def profile_diagnosis(analysis: ProfileAnalysis) -> Diagnosis:
    """The profiled run's diagnosis as the traces give it now: rank 1 named, each rank's wait,
    the what-if, its finding, on a busy machine."""
    base = busy_diagnosis()
    waits = [
        RankWait(rank=0, share=estimate(0.62, 0.58, 0.66)),
        RankWait(rank=1, share=estimate(0.01, 0.0, 0.02)),
    ]
    whatif = WhatIf(
        rank=1,
        named=True,
        saved_s=estimate(0.0188, 0.018, 0.0196),
        share=estimate(0.66, 0.63, 0.69),
        extra_work_s=0.020,
    )
    # its findings: the hand-made straggler's (the fixture's analysis, from torchscale 0.3.0,
    # kept them only in words, which no code words today)
    assert not analysis.findings
    return base.model_copy(update={"source": "traces", "rank_waits": waits, "whatif": whatif})


@pytest.fixture(scope="module")
def profile_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Diagnosis]:
    root = tmp_path_factory.mktemp("profiled") / "profile"
    shutil.copytree(PROFILE, root)
    run = root / "profile" / PROFILE_CELL
    analysis = ProfileAnalysis.model_validate_json((run / "analysis.json").read_text())
    diagnosis = profile_diagnosis(analysis)
    # the fixture's run was made with --inject-delay: its named rank is marked as the
    # diagnosis marks it today (the report would read it off the run's recorded delays)
    recorded = read_cell(run / "result.json").doc
    assert recorded is not None
    delayed = frozenset(d.rank for d in recorded.injected_delays)
    diagnosis = diagnosis.model_copy(
        update={"straggler": marked_injected(diagnosis.straggler, delayed)}
    )
    unavailable = {k: v for k, v in analysis.unavailable.items() if k != "diagnosis"}
    analysis = analysis.model_copy(update={"diagnosis": diagnosis, "unavailable": unavailable})
    (run / "analysis.json").write_text(analysis.model_dump_json(), encoding="utf-8")
    read = read_cell(run / "result.json")
    result = read.doc
    assert result is not None, read.problem
    result = result.model_copy(update={"diagnosis": diagnosis})
    (run / "result.json").write_text(result.model_dump_json(), encoding="utf-8")
    report = build_report(read_sources(root), ReportOptions(generated_at="2026-11-22T12:00:00Z"))
    return report, diagnosis


def test_a_profile_shows_its_diagnosis_in_the_terminals_lines(
    profile_report: tuple[Report, Diagnosis],
) -> None:
    report, diagnosis = profile_report
    lines = texts(report, "bottlenecks")
    for line in (
        sync_stall_text(diagnosis),
        split_text(diagnosis),
        straggler_text(diagnosis.straggler, diagnosis.ranks),
        f"Caveat: {CAVEAT}",
        whatif_text(diagnosis),
    ):
        assert line in lines, line
    # the older mirrors and other step-level estimates are not shown beside it
    figures = blocks_of(report, "bottlenecks", KeyFigures)
    labels = {f.label for b in figures for f in b.figures}
    assert labels == {"Compute/communication overlap"}
    assert not [b for b in blocks_of(report, "bottlenecks", Table) if b.id.endswith("-whatif")]


def test_every_format_that_names_the_straggler_shows_its_whatif(
    profile_report: tuple[Report, Diagnosis], tmp_path: Path
) -> None:
    """The Markdown and the default term report, which do not show the Bottlenecks section,
    carry the what-if in their summary: the summary's table of
    each run's diagnosis carries it, for profiled runs and sweep cells alike."""
    _, profiled = profile_report
    sweep_diagnosis = busy_diagnosis(whatif=profiled.whatif)
    reports = [
        (profile_report[0], profiled),
        (build(sweep(tmp_path, {MLP_W2: [with_attribution(sweep_diagnosis)]})), sweep_diagnosis),
    ]
    for report, diagnosis in reports:
        whatif = whatif_text(diagnosis)
        assert whatif is not None
        (row,) = [r for r in table(report, "summary-diagnoses").rows if r["whatif"]]
        assert row["whatif"] == whatif
        assert row["straggler"] == straggler_text(diagnosis.straggler, diagnosis.ranks)
        md = markdown.render(report).decode("utf-8")
        assert markdown.inline(whatif) in md
        flat = " ".join(term.render(report, width=400).decode("utf-8").split())
        assert whatif in flat
    # no what-if (nobody named): no empty column
    quiet = busy_diagnosis(whatif=None)
    report = build(sweep(tmp_path / "quiet", {MLP_W2: [with_attribution(quiet)]}))
    columns = [c.key for c in table(report, "summary-diagnoses").columns]
    assert "whatif" not in columns and "straggler" in columns


def test_a_profile_gives_one_verdict_and_carries_its_caveat(
    profile_report: tuple[Report, Diagnosis],
) -> None:
    report, diagnosis = profile_report
    (findings,) = blocks_of(report, "bottlenecks", Findings)
    mine = [f for f in findings.findings if f.source.startswith(PROFILED)]
    # the target's share of the diagnosis' findings (schema 10: split when read), and no
    # phase-timer finding beside the traces'
    kept, _ = findings_for_target(diagnosis.findings, "sync_stalls")
    assert len(mine) == len(kept)
    assert all(f.caveat == CAVEAT and CAVEAT not in f.evidence for f in mine)
    # the straggler table lists sweep runs: the profile says its verdict with its profile
    assert not any(
        b.id == "bottlenecks-straggler-tests" for b in blocks_of(report, "bottlenecks", Table)
    )


def test_per_rank_waits_are_the_diagnosis(profile_report: tuple[Report, Diagnosis]) -> None:
    report, diagnosis = profile_report
    waits = {w.rank: share_text(w.share) for w in diagnosis.rank_waits}
    ranks = next(b for b in blocks_of(report, "bottlenecks", Table) if b.id.endswith("-ranks"))
    assert {r["rank"]: r["wait_text"] for r in ranks.rows} == waits
    latency = [r for r in table(report, "latency-ranks").rows if r["cell"] == PROFILED]
    assert {r["rank"]: r["wait_text"] for r in latency} == waits
    assert latency[1]["role"].startswith("straggler (backward)")
    for block in (b for s in report.sections for b in s.blocks if isinstance(b, Table)):
        labels = [c.label for c in block.columns]
        if block.id.endswith("ranks"):
            assert "Exposed comm" not in labels and "Grad-sync wait" not in labels, block.id
            assert "Sync stall" not in labels, block.id
