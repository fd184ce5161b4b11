"""The decision first: every format opens with whether the numbers can be used and, if
not, why and what to do; then one line per model over every configuration it ran; a best
configuration only where it leads the next beyond noise; the host before workload tuning when
the host spoiled the numbers; a profile-only or comm-only report's own verdict; plain words with
their technical terms; figures rounded to what their interval supports; no table cut off
without a word at 1400 px.

tests/fixtures/cpu_busy_sweep/busy/ is real: `torchscale benchmark -c benchmark_config.yaml` (the
example config: tiny-mlp and tiny-gpt2, batch 16 and 32, 1 and 2 ranks, 2 repeats) run on the
project's 2-core CPU VM while two CPU hogs and other jobs ran (load average 9-11); every cell's
telemetry judged the machine busy. Logs and specs were left out.
"""

from __future__ import annotations

import html as html_lib
import itertools
import json
import re
import shutil
import uuid
from pathlib import Path

import pytest

import torchscale.results
from tests.interfaces.test_report_diagnosis import (
    CAVEAT,
    PROFILE,
    PROFILE_CELL,
    PROFILED,
    profile_diagnosis,
)
from tests.interfaces.test_report_uncertainty import (
    GPT_W1,
    GPT_W2,
    MLP_W1,
    MLP_W2,
    balanced_attribution,
    sweep,
    table,
    with_attribution,
    with_cv,
    with_repeats,
)
from torchscale.contracts.schema.comm_result import CommResult, CommRow, OpSummary
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.formatting import strip_code
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.diagnosis_text import (
    split_text,
    straggler_text,
    sync_stall_text,
    whatif_text,
)
from torchscale.interfaces.report.estimates import compact
from torchscale.interfaces.report.model import Findings, KeyFigures, Report, Text, Unavailable
from torchscale.interfaces.report.parts.best import NO_CLEAR_BEST
from torchscale.interfaces.report.parts.words import HOST_FIRST
from torchscale.interfaces.report.render import html, json_format, markdown, pdf
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.analysis.diagnosis import marked_injected
from torchscale.offline.analysis.ranking import lead
from torchscale.offline.results.documents import read_cell
from torchscale.orchestration.comm.sweep_launch import store_result

FIXTURES = Path(__file__).parents[1] / "fixtures"
BUSY = FIXTURES / "cpu_busy_sweep" / "busy"
GENERATED_AT = "2026-11-22T12:00:00Z"


def build(source: Path) -> Report:
    return build_report(read_sources(source), ReportOptions(generated_at=GENERATED_AT))


@pytest.fixture(scope="module")
def busy() -> Report:
    return build(BUSY)


def _other_cores() -> str:
    """The busy fixture's range of cores other processes took, as its telemetry recorded it."""
    cells = torchscale.results.load(BUSY / "default_scaling").cells
    assert bool(cells["busy_machine"].all())  # the fixture is what it says
    low, high = cells["other_cpu_cores"].min(), cells["other_cpu_cores"].max()
    return f"{low:.1f}-{high:.1f}"


# ------------------------------------------------------------------------ a busy machine

# what a CPU sweep's first line says it is for, before whether its numbers can be used
CPU_FIRST = "No accelerator figure here: CPU ranks measure Python, the host and gloo. "


def test_a_busy_machine_is_the_headline(busy: Report) -> None:
    assert busy.headline is not None and busy.decision is not None
    assert busy.headline.text == (
        f"{CPU_FIRST}These numbers cannot be used: {_other_cores()} of 2 cores taken by other "
        "processes "
        "in every cell: rerun on an idle node."
    )
    assert busy.headline.severity == "bad" and busy.decision.usable == "no"
    first = busy.decision.actions[0].text
    assert first.startswith("Fix the host first: rerun on an idle node")
    assert busy.decision.best is not None
    assert (
        busy.decision.best.text == "Best configuration: none named (these numbers cannot be used)."
    )


def _html_headline(page: str) -> str:
    """The text of the page's headline paragraph (its severity mark first)."""
    match = re.search(r'<p class="headline[^>]*>(.*?)</p>', page, re.S)
    assert match is not None
    body = re.sub(r'<span class="visually-hidden">.*?</span>', "", match.group(1))
    return html_lib.unescape(re.sub(r"<[^>]+>", "", body)).strip()


def test_the_headline_leads_every_format_before_any_tuning_advice(busy: Report) -> None:
    """The same sentence first in Markdown, the terminal, HTML, the PDF's print HTML and JSON,
    before the summary and before any workload tuning (bucket_cap_mb) is suggested."""
    assert busy.headline is not None
    text = busy.headline.text
    advice = "bucket_cap_mb"
    assert advice in json_format.render(busy).decode("utf-8")  # the findings are there, later
    md = markdown.render(busy).decode("utf-8")
    assert md.split("\n\n")[1] == f"✖ **{markdown.inline(text)}**"
    # the terminal wraps lines; the whole report, since its summary leaves the advice out
    out = " ".join(term.render(busy, full=True).decode("utf-8").split())
    assert out.startswith(f"torchscale report: default_scaling ✖ {strip_code(text)}")
    page = html.render(busy).decode("utf-8")
    assert _html_headline(page) == "✖" + text
    assert page.index("data-headline") < page.index('id="section-summary"') < page.index(advice)
    printed = pdf.render_html(busy, {c.id: "not drawn in this test" for c in busy.charts()})
    assert _html_headline(printed) == "✖ " + text
    assert printed.index(text) < printed.index('id="section-summary"') < printed.index(advice)
    assert out.index(strip_code(text)) < out.index(advice)
    # the Markdown lists the findings by title only, after the headline
    assert md.index(markdown.inline(text)) < md.index("Exposed gloo communication")
    data = json.loads(json_format.render(busy))
    assert data["headline"]["text"] == text and data["decision"]["usable"] == "no"


def test_findings_come_second_to_fixing_the_host(busy: Report) -> None:
    bottlenecks = busy.section("bottlenecks")
    assert bottlenecks is not None
    lead_block = bottlenecks.blocks[0]
    assert isinstance(lead_block, Text) and lead_block.text == HOST_FIRST
    (findings,) = [b for b in bottlenecks.blocks if isinstance(b, Findings)]
    assert findings.findings and {f.severity for f in findings.findings} == {"info"}
    summary = busy.section("summary")
    assert summary is not None
    texts = [b.text for b in summary.blocks if isinstance(b, Text)]
    host = texts.index(HOST_FIRST)
    assert all(host < i for i, t in enumerate(texts) if "of the step:" in t)
    figures = [f for b in summary.blocks if isinstance(b, KeyFigures) for f in b.figures]
    model_figures = [f for f in figures if ":" in f.label and not f.label.startswith("Cells")]
    assert model_figures and {f.severity for f in model_figures} == {"info"}  # no ✖ or ✔


def test_one_line_per_model_over_every_batch_size(busy: Report) -> None:
    assert busy.decision is not None
    # the two models' lines read alike but for their names: one line names both
    (line,) = [t.text for t in busy.decision.models]
    assert line.startswith("tiny-gpt2, tiny-mlp (2 models), scaling to 2 CPU ranks over 2 ")
    assert "GPU" not in line


# ------------------------------------------------------------------------ the best, beyond noise


def steady(root: Path) -> Path:
    """The sweep without its two failed cells (so nothing but the figures decides)."""
    for cell in (root / "cells").glob("torchscale_missing_plugin*.json"):
        cell.unlink()
    return root


def test_reliable_numbers_on_a_quiet_machine_can_be_used(tmp_path: Path) -> None:
    calm = [with_cv(0.02)]
    root = sweep(
        tmp_path,
        {
            GPT_W1: [with_repeats([300.0, 302.0, 298.0, 301.0]), *calm],
            GPT_W2: [with_repeats([590.0, 592.0, 588.0, 591.0]), *calm],
            MLP_W1: [with_repeats([1000.0, 1005.0, 995.0, 1002.0]), *calm],
            MLP_W2: [with_repeats([1900.0, 1910.0, 1890.0, 1905.0]), *calm],
        },
    )
    report = build(steady(root))
    assert report.headline is not None and report.decision is not None
    assert report.headline.text == f"{CPU_FIRST}These numbers can be used: all 4 cells reliable."
    assert report.headline.severity == "good" and report.decision.usable == "yes"
    best = report.decision.best
    assert best is not None and NO_CLEAR_BEST not in best.text
    assert "tiny-mlp b8 x2 fp32 ddp (+90.1 % ±" in best.text  # ahead beyond noise: named
    assert best.severity == "good"


def test_within_noise_there_is_no_clear_best(tmp_path: Path) -> None:
    """Two configurations 1 % apart with a ±5 % spread: the ranking is noise, and says so in
    the headline and in the summary's table."""
    calm = [with_cv(0.02)]
    root = sweep(
        tmp_path,
        {
            GPT_W1: [with_repeats([300.0, 302.0, 298.0, 301.0]), *calm],
            GPT_W2: [with_repeats([590.0, 592.0, 588.0, 591.0]), *calm],
            MLP_W1: [with_repeats([1000.0, 1040.0, 960.0, 1020.0]), *calm],
            MLP_W2: [with_repeats([1010.0, 1050.0, 970.0, 1030.0]), *calm],
        },
    )
    report = build(steady(root))
    assert report.decision is not None and report.decision.best is not None
    text = report.decision.best.text
    assert f"tiny-mlp: {NO_CLEAR_BEST}: tiny-mlp b8 x2 fp32 ddp is within noise of " in text
    assert "tiny-gpt2 b8 x2 fp32 ddp (+" in text  # the other model's lead is clear
    rows = {r["model"]: r for r in table(report, "summary-best").rows}
    assert rows["tiny-mlp"]["best_by"] == f"throughput: {NO_CLEAR_BEST}"
    # a lead of +1 % in an interval wider than itself: no number on the first screen
    assert rows["tiny-mlp"]["lead"] == (
        "within noise of tiny-mlp b8 x1 fp32 ddp; lead not measurable (4 repeats)"
    )
    assert rows["tiny-gpt2"]["best_by"] == "throughput"


def test_a_lead_is_clear_only_beyond_its_interval() -> None:
    ahead = lead([2.0, 2.1, 1.9, 2.05], [1.0, 1.05, 0.95, 1.02])
    assert ahead is not None and ahead.clear and ahead.low is not None and ahead.low > 0.8
    close = lead([1.0, 1.3], [0.9, 1.2])  # Welch's t on the log ratio, 2 a side
    assert close is not None and not close.clear and close.low is not None and close.low < 0
    single = lead([1.0], [0.5])  # no spread on a side: no interval, never clear
    assert single is not None and single.low is None and not single.clear
    assert single.change == pytest.approx(1.0)
    scaled = lead([1.0], [0.5], scale=2.0)  # cost through throughput at twice the price
    assert scaled is not None and scaled.change == pytest.approx(3.0)
    assert lead([], [1.0]) is None


# ------------------------------------------------------------------------ no sweep


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Diagnosis]:
    """The sweep-and-profile fixture's profiled run with the diagnosis `torchscale profile`
    stores now (rank 1 named in backward, on a busy machine), read on its own."""
    root = tmp_path_factory.mktemp("profile-only") / "profile"
    shutil.copytree(PROFILE, root)
    run = root / "profile" / PROFILE_CELL
    analysis = ProfileAnalysis.model_validate_json((run / "analysis.json").read_text())
    diagnosis = profile_diagnosis(analysis)
    # the fixture's run was made with --inject-delay: its named rank is marked as the
    # diagnosis marks it today (the report would read it off the run's recorded delays)
    read = read_cell(run / "result.json")
    recorded = read.doc
    assert recorded is not None
    delayed = frozenset(d.rank for d in recorded.injected_delays)
    diagnosis = diagnosis.model_copy(
        update={"straggler": marked_injected(diagnosis.straggler, delayed)}
    )
    analysis = analysis.model_copy(update={"diagnosis": diagnosis, "findings": diagnosis.findings})
    (run / "analysis.json").write_text(analysis.model_dump_json(), encoding="utf-8")
    read = read_cell(run / "result.json")
    result = read.doc
    problem = read.problem
    assert result is not None, problem
    result = result.model_copy(update={"diagnosis": diagnosis})
    (run / "result.json").write_text(result.model_dump_json(), encoding="utf-8")
    return build(root), diagnosis


def test_a_profile_only_report_leads_with_its_diagnosis(
    profiled: tuple[Report, Diagnosis],
) -> None:
    report, diagnosis = profiled
    assert report.headline is not None and report.decision is not None
    verdict = straggler_text(diagnosis.straggler, diagnosis.ranks)
    assert report.headline.text == f"{PROFILED}: {verdict} (caveat: {CAVEAT})."
    lines = [t.text for t in report.decision.models]
    assert lines[0].startswith(f"{PROFILED} measured ")  # its result's figures first
    assert lines[1:4] == [
        sync_stall_text(diagnosis),
        split_text(diagnosis),
        whatif_text(diagnosis),
    ]
    assert report.decision.usable == "with care"  # the run's own busy-machine caveat
    assert "idle node" in report.decision.actions[0].text
    dumped = report.model_dump_json()
    assert "no cell finished ok" not in dumped
    assert "no benchmark sweep" not in report.headline.text
    scaling = report.section("scaling")
    assert scaling is not None
    (missing,) = [b for b in scaling.blocks if isinstance(b, Unavailable)]
    assert missing.items["scaling"].startswith("no benchmark sweep in the sources (1 profiled run)")
    md = markdown.render(report).decode("utf-8")
    assert md.split("\n\n")[1].endswith(f"**{markdown.inline(report.headline.text)}**")


def _comm_run(run_id: str, wrong: int | None = 0) -> CommResult:
    sizes = [(1024, 0.5), (1 << 20, 2.5)]
    rows = [
        CommRow(
            op="all_reduce",
            size_bytes=size,
            count=size // 4,
            dtype="float32",
            redop="sum",
            placement="out-of-place",
            time_us=size / busbw / 1e3,
            algbw_gbps=busbw,
            busbw_gbps=busbw,
            wrong=0 if wrong is not None else None,
        )
        for size, busbw in sizes
    ]
    summary = OpSummary(op="all_reduce", rows=2, avg_busbw_gbps=1.5, wrong=wrong, busbw_factor=1)
    return CommResult(
        id=run_id,
        world_size=2,
        device="cpu",
        backend="gloo",
        dtype="float32",
        check=True,
        rows=rows,
        summaries=[summary],
        avg_busbw_gbps=1.5,
        wrong_total=wrong,
    )


def test_a_comm_only_report_gives_its_bandwidth(tmp_path: Path) -> None:
    store_result(_comm_run("ours"), tmp_path / "net" / "comm" / "ours.json")
    report = build(tmp_path)
    assert report.headline is not None and report.decision is not None
    assert report.headline.text == (
        "These bandwidth figures can be used: 1 comm run, every size ok, every result checked "
        "element by element."
    )
    (line,) = report.decision.models
    assert line.text == (
        "torchscale 2x gloo float32: all_reduce peaks at 2.50 GB/s bus bandwidth at 1 MiB, "
        "1.50 GB/s on average over 2 sizes"
    )
    store_result(_comm_run("wrong", wrong=3), tmp_path / "net" / "comm" / "wrong.json")
    report = build(tmp_path)
    assert report.headline is not None
    assert report.headline.text.startswith("These bandwidth figures cannot be used: ")
    assert "3 wrong elements in the check" in report.headline.text


# ------------------------------------------------------------------------ plain words, digits


def test_figures_are_rounded_to_what_their_interval_supports() -> None:
    assert compact(39_989.3, 13_754.0, 66_224.6, "rate") == "40,000 ±26,000"
    assert compact(4_075.9, 4_067.1, 4_084.7, "rate") == "4,076 ±9"  # as precise as shown
    assert compact(0.236, 0.2089, 0.2631, "seconds") == "236 ms ±27 ms"
    assert compact(7_438.0, 4_547.1, 12_148.5, "rate") == "7,400 [4,500, 12,100]"
    assert compact(21_425.6, 0.5, 482_125_066.0, "rate") == "21,000 [0.50, 480,000,000]"
    assert compact(275.9, 51.4, 1_456.0, "rate") == "280 [50, 1,460]"
    assert compact(0.976, 0.944, 1.008, "ratio_pct") == "97.6 % ±3.2 %"


def test_plain_headings_keep_their_technical_terms(tmp_path: Path) -> None:
    root = sweep(tmp_path, {MLP_W2: [with_attribution(balanced_attribution())]})
    report = build(root)
    split = table(report, "efficiency-step-model")
    columns = {c.label: c for c in split.columns}
    exposed = columns["Communication not overlapped"]
    assert exposed.term is not None and exposed.term.startswith("exposed transfer: ")
    assert "Waiting for slower ranks" in columns and "Exposed transfer" not in columns
    assert "Terms: " in (split.note or "") and "= exposed transfer: " in (split.note or "")
    chart = next(c for c in report.charts() if c.id == "efficiency-step-split")
    assert "Waiting for slower ranks" in [s.name for s in chart.series]
    assert "= waiting for peers: " in (chart.note or "")
    page = html.render(report).decode("utf-8")
    assert '<span class="term">Communication not overlapped</span>' in page
    assert 'title="exposed transfer: communication that no computation hid' in page


# ------------------------------------------------------------------------ 1400 px


@pytest.mark.slow  # starts a renderer process
def test_no_column_is_cut_off_without_a_cue_at_1400_px(tmp_path: Path) -> None:
    """In Chromium at 1400 px: the summary's and the header's tables fit, and any table wider
    than its box (the environment's) says, above it, to scroll sideways."""
    browser = pytest.importorskip("test_report_browser")
    if browser.CHROMIUM is None:
        pytest.skip("needs a headless Chromium on PATH")
    report = build_report(
        read_sources(FIXTURES / "cpu_sweep_profile"),
        ReportOptions(generated_at=GENERATED_AT, cost_per_gpu_hour=2.5),
        read_sources(FIXTURES / "cpu_crashes"),
    )
    page = tmp_path / "report.html"
    page.write_bytes(html.render(report))
    profile = tmp_path / f"chromium-{uuid.uuid4().hex}"
    argv = browser.chromium_argv(profile, "--window-size=1400,900", "--dump-dom", page.as_uri())
    result = browser.run_chromium(argv)
    assert result.returncode == 0, result.stderr[-2000:]
    assert browser.wait_gone(str(profile)) == []
    tree = browser.Tree()
    tree.feed(result.stdout)
    boxes = []
    for node in tree.root.iter():
        children = [c for c in node.children if isinstance(c, browser.Node)]
        for before, box in itertools.pairwise(children):
            if "table-scroll" in box.classes():
                captions = [c.text() for c in box.iter() if c.tag == "caption"]
                boxes.append((captions[0] if captions else "", box, before))
    assert len(boxes) > 10
    for caption, box, before in boxes:
        assert box.attrs.get("data-overflows") in ("true", "false"), caption
        cue = "scroll-cue" in before.classes() and "hidden" not in before.attrs
        assert (box.attrs["data-overflows"] == "true") == cue, caption
    fits = {caption: box.attrs["data-overflows"] for caption, box, _ in boxes}
    assert fits["Sources"] == "false" and fits["Best configuration per model"] == "false"
