"""Every GPU figure in docs/measured.md can be reopened (issue 71 point 13): a row that quotes a GPU
run ends with a "Kept: ..." clause naming the kept output its figures come from (a fixture, a file
under benchmarks/ or docs/, or the first H100 run's folder under ../shared/gpu), or saying "not
kept". A figure nobody can reopen is a claim; saying so keeps it from passing as evidence.
The paths are checked to exist; those under ../shared only where ../shared is beside the
checkout (a fresh clone may lack it)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "measured.md"
SHARED = REPO.parent / "shared"
# a GPU run: named in what was measured or how (the first two columns), or a GPU named with a figure
RAN_ON_GPU = re.compile(r"\b(H100|H200|GPUs?)\b|--device cuda")
NAMED_GPU = re.compile(r"\bH[12]00\b")
KEPT = re.compile(r"\bKept: (.+)$")
KEPT_PATH = re.compile(r"`((?:tests/fixtures|benchmarks|docs|\.\./shared/gpu)/[^`\s]+)`")


def table_rows() -> list[list[str]]:
    """The cells of every body row of the page's tables (escaped pipes stay inside a cell)."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or re.match(r"\|\s*-", line) or line.startswith("| what |"):
            continue
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def gpu_rows() -> list[list[str]]:
    """Rows that quote a figure of a GPU run."""
    return [
        row
        for row in table_rows()
        if re.search(r"\d", row[-1])
        and (RAN_ON_GPU.search(" ".join(row[:-1])) or NAMED_GPU.search(row[-1]))
    ]


def evidence_gaps(row: list[str]) -> list[str]:
    """What is wrong with a row's "Kept:" clause; empty when it points to evidence."""
    kept = KEPT.search(row[-1])
    if kept is None:
        return ['no "Kept: ..." clause']
    clause = kept.group(1)
    paths = KEPT_PATH.findall(clause)
    if not paths and "not kept" not in clause:
        return ['its "Kept:" clause names no kept path and does not say "not kept"']
    gaps = []
    for path in paths:
        if path.startswith("../shared/") and not SHARED.is_dir():
            continue
        if not (REPO / path).exists():
            gaps.append(f"{path} does not exist")
    return gaps


def test_the_page_has_gpu_rows() -> None:
    """The row finder sees the H100 and H200 runs (so the check below cannot pass on nothing)."""
    firsts = [row[0] for row in gpu_rows()]
    assert len(firsts) >= 20
    assert any("H100" in first for first in firsts)
    assert any("H200" in first for first in firsts)


def test_every_gpu_row_points_to_kept_output_or_says_not_kept() -> None:
    problems = [f"{row[0][:70]}: {gap}" for row in gpu_rows() for gap in evidence_gaps(row)]
    assert not problems, "\n".join(problems)


def test_a_row_without_evidence_is_caught() -> None:
    """The clause check itself: a missing clause, a clause with neither path nor "not kept", and a
    path that does not exist are each reported; an existing fixture passes."""
    figure = "bf16 708 TFLOP/s"
    assert evidence_gaps(["perf on one H100", "cmd", figure])
    assert evidence_gaps(["perf on one H100", "cmd", figure + ". Kept: somewhere"])
    assert evidence_gaps(["perf", "cmd", figure + ". Kept: `tests/fixtures/h100_nowhere/`"])
    assert not evidence_gaps(["perf", "cmd", figure + ". Kept: `tests/fixtures/h100_schema16/`"])
    assert not evidence_gaps(["perf", "cmd", figure + ". Kept: not kept"])
