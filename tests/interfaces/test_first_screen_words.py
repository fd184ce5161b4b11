"""The first screen in plain words: the headline, the lines under it, 'What to do', the figure
cards and the best-configuration table's note hold no code (bucket_cap_mb, no_sync(),
GLOO_SOCKET_IFNAME, =True) and no method name (Welch's t, bootstrap, CV): the advice's detail
stays with its finding (Bottlenecks, --full) and the methods in the glossary; any glossary term
the first screen does use is explained in the report's Glossary section."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from torchscale.contracts.wording.cell_warnings import plain
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.model import KeyFigures, Report, Table
from torchscale.interfaces.report.parts.findings import action_text, short_advice
from torchscale.interfaces.report.parts.words import GLOSSARY
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.analysis.reliability import judge

FIXTURES = Path(__file__).parents[1] / "fixtures"
CODE = re.compile(r"\b[a-z]+_[a-z_]+\b|\w+\(\)|=True|\b[A-Z]+_[A-Z_]+\b")
QUOTED = re.compile(r"'[^']*'")
METHODS = re.compile(r"Welch|bootstrap|\bCV\b|p-value")


def first_screen(report: Report) -> list[str]:
    texts = [report.headline.text] if report.headline else []
    if report.decision is not None:
        texts += [t.text for t in report.decision.in_reading_order()]
    summary = report.section("summary")
    for block in summary.blocks if summary is not None else []:
        if isinstance(block, KeyFigures) and block.role == "cards":
            for card in block.figures:
                texts += [card.label, format_value(card.value, card.format), card.note or ""]
        if isinstance(block, Table) and block.id == "summary-best":
            texts.append(block.note or "")
    return texts


def glossary_terms(report: Report) -> set[str]:
    section = report.section("glossary")
    tables = [b for b in section.blocks if isinstance(b, Table)] if section else []
    return {str(row["term"]) for table in tables for row in table.rows}


def _synthetic(root: Path) -> Path:
    path = Path(__file__).parents[2] / "benchmarks" / "report_scale.py"
    spec = importlib.util.spec_from_file_location("report_scale_words", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.write_results(root, 40))


SOURCES = {
    "real 8-cell sweep": FIXTURES / "cpu_default_sweep",
    "busy sweep": FIXTURES / "cpu_busy_sweep" / "busy",
    "injected profile": FIXTURES / "cpu_profile_injected",
    "v3 sweep and profile": FIXTURES / "cpu_sweep_profile",
}


@pytest.mark.parametrize("name", [*SOURCES, "synthetic"])
def test_the_first_screen_is_in_plain_words(tmp_path: Path, name: str) -> None:
    source = SOURCES[name] if name in SOURCES else _synthetic(tmp_path)
    report = build_report(read_sources(source), ReportOptions(generated_at="2026-01-01T00:00:00Z"))
    texts = first_screen(report)
    assert report.headline is not None and texts
    # a name the user gave (a plug-in module in a failure's cause) is quoted: not advice
    code = [(m.group(0), t) for t in texts for m in CODE.finditer(QUOTED.sub("", t))]
    assert not code, code[:3]
    methods = [(m.group(0), t) for t in texts for m in METHODS.finditer(t)]
    assert not methods, methods[:3]
    explained = glossary_terms(report)
    joined = "\n".join(texts).lower()
    used = [term for term in GLOSSARY if re.search(rf"\b{re.escape(term.lower())}\b", joined)]
    assert set(used) <= explained, set(used) - explained


def test_advice_on_the_first_screen_is_its_plain_first_clause() -> None:
    from torchscale.interfaces.report.model import ReportFinding

    advice = (
        "Hide or shrink gradient communication: DDP bucket_cap_mb (smaller buckets start "
        "earlier), gradient_as_bucket_view=True, gradient accumulation under no_sync()."
    )
    finding = ReportFinding(
        title="Exposed gloo communication",
        cost_pct=70.7,
        source="tiny-gpt2 b16 x2 fp32 ddp",
        recommendation=advice,
    )
    assert short_advice(advice) == "Hide or shrink gradient communication"
    line = action_text(finding)
    # the run it is of is named: its figures are that run's (the H100 sweep's host-bound
    # share was of a cell the lines above it did not show)
    assert line.startswith(
        "Exposed gloo communication (70.7 % of the step), in tiny-gpt2 b16 x2 fp32 ddp: hide or "
        "shrink gradient communication"
    )
    assert not CODE.search(line) and "Bottlenecks" in line


def test_the_cv_reads_as_step_times_that_vary() -> None:
    """The first screen words the reliability verdict (a code and its figures) plainly, from
    the code: the tables' 'step-time CV 31.5 %' is 'step times vary by 31.5 %' there."""
    varies = judge(100.0, 90.0, 110.0, 4, 0.315, 0.1, figures=[100.0, 101.0, 99.0, 100.0])
    assert "step-time CV 31.5 %" in varies.reason
    assert plain(varies.finding) == "varies more than ±10 %: step times vary by 31.5 %"
    steady = judge(100.0, 99.0, 101.0, 4, 0.05, 0.1, figures=[100.0, 101.0, 99.0, 100.0])
    assert "CV" not in plain(steady.finding) and "step times vary by 5.0 %" in plain(steady.finding)
