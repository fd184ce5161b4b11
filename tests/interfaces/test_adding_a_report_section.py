"""Adding a report section is one module plus its line in the section list (docs/architecture.md,
"A report section"): tests/added_section.py holds a section's `build(ctx)`, and a fresh
interpreter makes the one-line edit the doc names before any report is built: its builder in
`SECTIONS` (torchscale/interfaces/report/build.py). A section reads what it needs from the
`Context` and never from another section, so no other module changes. A report built from the
fixture results then holds the section, and every format shows what it promises without another
file changing: HTML, JSON and `-f term --full` the whole section, the term summary counts it
among what it leaves out, and the Markdown (the executive summary for a pull request) is the
same as without it."""

from __future__ import annotations

import ast
import json
import re

import pytest

from tests.added_section import SECTION_ID, TABLE_ID, TITLE
from tests.conftest import REPO_ROOT
from tests.fresh_interpreter import run_probe
from torchscale.interfaces.report import build

PACKAGE = "torchscale.interfaces.report.sections"

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "cpu_sweep_profile"

_PROBE = """
import json, sys
from pathlib import Path

import tests.added_section as added
from torchscale.interfaces.report import build, model
from torchscale.interfaces.api.report_generate import FORMATS, renderer
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources

sources = read_sources(Path(sys.argv[1]))
options = ReportOptions(generated_at="2026-11-22T12:00:00Z")


def made() -> dict:
    report = build.build_report(sources, options)
    out = {fmt: renderer(fmt)(report).decode() for fmt in FORMATS if fmt != "pdf"}
    out["term_full"] = term.render(report, full=True).decode()
    out["sections"] = [section.id for section in report.sections]
    out["round_trip"] = model.Report.model_validate_json(out["json"]) == report
    return out


found = {"before": made()}
build.SECTIONS = (*build.SECTIONS, added.build)  # the list line
found["after"] = made()
print(json.dumps(found))
"""


@pytest.mark.slow
def test_one_module_and_its_list_line_add_a_report_section() -> None:
    found = run_probe(_PROBE, str(FIXTURE))
    before, after = found["before"], found["after"]
    # the report: every section it had, in their order, then the new one (its place in
    # SECTIONS), then the glossary of the terms they use, which always closes a report
    assert SECTION_ID not in before["sections"]
    assert before["sections"][-1] == "glossary"
    assert after["sections"] == [*before["sections"][:-1], SECTION_ID, "glossary"]
    # JSON: the model as it is, the new section whole, and it still round-trips
    [section] = [s for s in json.loads(after["json"])["sections"] if s["id"] == SECTION_ID]
    assert section["title"] == TITLE
    assert [b["type"] for b in section["blocks"]] == ["text", "key_figures", "table"]
    cells = len(section["blocks"][2]["rows"])
    assert cells > 0 and section["blocks"][1]["figures"][0]["value"] == cells
    assert after["round_trip"] is True
    # HTML: in the contents and as a section of its own, with its table
    html = after["html"]
    assert f'href="#section-{SECTION_ID}"' in html
    assert f'id="section-{SECTION_ID}" data-section="{SECTION_ID}"' in html
    assert TITLE in html and f"The added section read {cells} cells." in html
    assert f'id="{TABLE_ID}"' in html
    assert TITLE not in before["html"]
    # term --full: every section, this one too
    full = after["term_full"]
    assert TITLE in full and f"The added section read {cells} cells." in full
    assert "Cells the added section read" in full
    # term summary: the executive summary only; the new section is counted as left out
    assert left_out_sections(after["term"]) == left_out_sections(before["term"]) + 1
    assert TITLE not in after["term"]
    # Markdown: the executive summary for a pull request, no other section: unchanged
    assert after["md"] == before["md"]


def left_out_sections(summary: str) -> int:
    match = re.search(r"Left out: (\d+) sections?", summary)
    assert match is not None, summary
    return int(match.group(1))


def test_no_section_imports_another() -> None:
    # what several sections read is computed once in the Context (parts/tables.py) or said
    # by a shared module (words, comparison, findings): a section never reaches into another
    sections = {f"{PACKAGE}.{build._section_id(b)}" for b in build.SECTIONS} | {
        f"{PACKAGE}.glossary"
    }
    found = {}
    for name in sorted(sections):
        path = REPO_ROOT / (name.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):  # `from sections import x` names the module x too
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
        found[name] = sorted(imported & (sections - {name}))
    assert found == {name: [] for name in sections}
