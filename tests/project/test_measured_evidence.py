"""Every GPU figure in docs/measured.md can be reopened: a row that quotes a GPU
run ends with a "Kept: ..." clause naming the kept output its figures come from (a fixture, a file
under benchmarks/ or docs/, or the first H100 run's folder under ../shared/gpu), or saying "not
kept". A figure nobody can reopen is a claim; saying so keeps it from passing as evidence.
The paths are checked to exist; those under ../shared only where ../shared is beside the
checkout (a fresh clone may lack it). docs/first-gpu-run.md's table of commands is held to the
same: for a fresh 8 x H100 node, each command's checks, its one-GPU runs with their kept output,
and what has never run on several GPUs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "measured.md"
FIRST_GPU_RUN = REPO / "docs" / "first-gpu-run.md"
# the commands a fresh node is taken through (the "Done when")
COMMANDS = (
    "`validate` (basic)",
    "`validate --level perf`",
    "`validate --level burn`",
    "`validate --level workload`",
    "`benchmark -c benchmark_config.yaml`",
    "`profile`",
    "`comm`",
    "`report`",
)
SHARED = REPO.parent / "shared"
# a GPU run: named in what was measured or how (the first two columns), or a GPU named with a figure
RAN_ON_GPU = re.compile(r"\b(H100|H200|GPUs?)\b|--device cuda")
NAMED_GPU = re.compile(r"\bH[12]00\b")
KEPT = re.compile(r"\bKept: (.+)$")
KEPT_PATH = re.compile(r"`((?:tests/fixtures|benchmarks|docs|\.\./shared/gpu)/[^`\s]+)`")


def table_rows(doc: Path = DOC) -> list[list[str]]:
    """The cells of every body row of a page's tables (escaped pipes stay inside a cell)."""
    rows = []
    for line in doc.read_text(encoding="utf-8").splitlines():
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
    return missing(paths)


def missing(paths: list[str]) -> list[str]:
    """The kept paths that are not there (those under ../shared only where it is)."""
    return [
        f"{path} does not exist"
        for path in paths
        if not (path.startswith("../shared/") and not SHARED.is_dir())
        and not (REPO / path).exists()
    ]


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
    assert not evidence_gaps(["perf", "cmd", figure + ". Kept: `tests/fixtures/h100_second_run/`"])
    assert not evidence_gaps(["perf", "cmd", figure + ". Kept: not kept"])


def test_first_gpu_run_says_per_command_what_ran_and_what_did_not() -> None:
    """Every command has a row: what it checks on the node, what ran (with kept output or "not
    kept", or "never on a GPU"), and what has never run on several real GPUs."""
    rows = {row[0]: row for row in table_rows(FIRST_GPU_RUN) if len(row) == 4}
    absent = [command for command in COMMANDS if command not in rows]
    assert not absent, f"no row for {absent} in docs/first-gpu-run.md"
    for command in COMMANDS:
        _, checks, ran, never = rows[command]
        assert checks and never, command
        paths = KEPT_PATH.findall(ran)
        assert paths or "not kept" in ran or "never on a GPU" in ran, command
        assert not missing(paths), (command, missing(paths))
