"""A cell result stores each fact once: the straggler and communication figures live in its
diagnosis, and the columns tables need are read off it (`offline/results/split_figures.py`,
`frame.py`). The older blocks that mirrored it (`straggler`, `straggler_rank`, `communication`)
are no fields of it, and no code writes or reads them. Warnings carry the kind their writer gave
them, so rewording one moves it in no table."""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from torchscale.contracts import wording
from torchscale.contracts.schema.cell_result import CELL_KIND, CellResult
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Table
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.results.documents import read_cell

PACKAGE = REPO_ROOT / "torchscale"
FIXTURES = REPO_ROOT / "tests" / "fixtures"
MIRRORED = ("straggler", "straggler_rank", "communication")


def _modules() -> Iterator[tuple[Path, ast.AST]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _mirrored_uses(tree: ast.AST) -> list[str]:
    """Where a module writes a mirrored block into a result (a CellResult keyword, a key of a
    model_copy update or model_validate dict) or reads one off it (`.straggler_rank`,
    `.communication`)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("straggler_rank", "communication"):
            found.append(f"{node.lineno}: .{node.attr}")
        if not isinstance(node, ast.Call):
            continue
        name = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        if name == "CellResult":
            found += [f"{node.lineno}: {k.arg}=" for k in node.keywords if k.arg in MIRRORED]
        if name in ("model_copy", "model_validate"):
            dicts = [k.value for k in node.keywords if k.arg == "update"] + node.args[:1]
            for d in (d for d in dicts if isinstance(d, ast.Dict)):
                keys = [k.value for k in d.keys if isinstance(k, ast.Constant)]
                found += [
                    f"{node.lineno}: {{'{k}': ...}}"
                    for k in keys
                    if k in ("straggler_rank", "communication")
                ]
    return found


def test_no_mirrored_block_is_a_field_of_a_cell_result() -> None:
    assert sorted(set(CellResult.model_fields) & set(MIRRORED)) == []


@pytest.mark.slow  # over 2 s on 2 cores
def test_no_field_is_written_by_two_writers() -> None:
    """No code writes or reads the older blocks: the diagnosis is the one writer of the
    straggler and communication figures."""
    found = {
        str(path.relative_to(REPO_ROOT)): uses
        for path, tree in _modules()
        if (uses := _mirrored_uses(tree))
    }
    assert found == {}


def _cells(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("cells/*.json") if p.is_file())


def _stored_cells() -> list[Path]:
    """Every cell result kept under tests/fixtures (the first H100 run's converted copy too)."""
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and data.get("kind") == CELL_KIND:
            found.append(path)
    return found


def _read(path: Path) -> CellResult:
    read = read_cell(path)
    assert read.doc is not None, (path, read.problem)
    return read.doc


def _warnings_table(root: Path) -> list[tuple[str, str]]:
    report = build_report(read_sources(root), ReportOptions(generated_at="now"))
    tables = [
        b
        for s in report.sections
        for b in s.blocks
        if isinstance(b, Table) and b.id == "bottlenecks-warnings"
    ]
    return [(r["cell"], r["kind"]) for t in tables for r in t.rows]


def test_rewording_a_warning_moves_it_in_no_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report groups warnings by the kind their writer stored: the same results with every
    warning's code worded otherwise give the same kinds, row for row."""
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES / "cpu_busy_sweep" / "busy", root / "busy")
    shutil.copytree(FIXTURES / "cpu_profile_injected" / "standalone", root / "standalone")
    before = _warnings_table(root)
    assert {kind for _, kind in before} >= {"high variance", "injected delay"}
    results = [_read(p) for p in [*_cells(root), *root.rglob("profile/*/result.json")]]
    codes = {w.finding.code for result in results for w in result.warnings}
    assert codes
    for code in codes:
        monkeypatch.setitem(wording.PHRASES, code, lambda f: "reworded: nothing a pattern knows")
    assert _warnings_table(root) == before


# the keys of `unavailable` the split and its verdict decide, and the one module that writes them
SPLIT_WRITER = PACKAGE / "offline" / "results" / "split_figures.py"


def _split_reason_writes(tree: ast.AST) -> list[str]:
    """Where a module writes a reason of the split itself: `unavailable[<split key>] = ...`,
    or a call of `split_unavailable` (the split's null shares) to fill a result's reasons."""
    from torchscale.offline.results.split_figures import SPLIT_KEYS

    # `diagnosis` is also a profile analysis' own key, with its own writer
    split_keys = [key for key in SPLIT_KEYS if key != "diagnosis"]
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            key = target.slice if isinstance(target, ast.Subscript) else None
            if isinstance(key, ast.Constant) and key.value in split_keys:
                found.append(f"{node.lineno}: unavailable[{key.value!r}] =")
        called = node.func if isinstance(node, ast.Call) else None
        if getattr(called, "id", getattr(called, "attr", None)) == "split_unavailable":
            found.append(f"{node.lineno}: split_unavailable(...)")
    return found


@pytest.mark.slow  # over 2 s on 2 cores
def test_the_split_reasons_have_one_writer() -> None:
    """The ranks' result and a profiled run's rewritten result say why a split figure is null
    through one function (`split_figures.split_reasons`): two writers gave two answers."""
    writers = {
        str(path.relative_to(PACKAGE)): found
        for path, tree in _modules()
        if path != SPLIT_WRITER and (found := _split_reason_writes(tree))
    }
    assert writers == {}


def _scaled_copies(node: object, path: str = "") -> list[str]:
    """Numbers stored beside an interval that are that interval's value again, as is or in %
    (`cost_pct` was 100 x `cost_share.value`): a second name for one figure."""
    found: list[str] = []
    if isinstance(node, dict):
        numbers = {
            k: v for k, v in node.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        for key, child in node.items():
            value = (
                child.get("value") if isinstance(child, dict) and "measurable" in child else None
            )
            if not isinstance(value, float) or value == 0.0:
                continue
            for name, number in numbers.items():
                if (path.endswith(".whatif"), name, key) == (True, "extra_work_s", "saved_s"):
                    # two figures, equal only where the rank's extra work caps the saving on
                    # every step (a clean straggler: tests/fixtures/own_jobs/fsdp2); they differ
                    # in the other kept results (cpu_profile_injected: 50.1 and 50.6 ms)
                    continue
                if any(abs(number - k * value) <= 1e-9 * abs(number) for k in (1.0, 100.0)):
                    found.append(f"{path}.{name} = {key}.value")
        for key, child in node.items():
            found += _scaled_copies(child, f"{path}.{key}")
    elif isinstance(node, list):
        for child in node:
            found += _scaled_copies(child, f"{path}[*]")
    return found


def test_no_kept_result_stores_a_figure_twice() -> None:
    """By value, over every kept result as today's schema stores it: no number beside an
    interval is that interval's value again (a finding's cost is its `cost_share`; its
    percentage is read off it), and the straggler's host kind is one field (`kind`)."""
    checked = 0
    for path in _stored_cells():
        result = _read(path)
        if result.diagnosis is None:
            continue
        stored = result.model_dump(mode="json")
        assert _scaled_copies(stored) == [], path
        verdict = stored["diagnosis"]["straggler"] or {}
        assert "host_bound" not in verdict and "disagreement" not in stored["diagnosis"], path
        checked += bool(result.diagnosis.findings)
    assert checked  # kept results with findings were compared


# figures still stored twice under two names (equal in every kept result that has both): each
# goes to one copy, read under the other name where it is needed; the list may only shrink
NOT_YET_COPIES: frozenset[tuple[str, str]] = frozenset(
    {
        # the headline estimates' values repeat the point figures they carry an interval for
        ("intervals.samples_per_s.value", "throughput.samples_per_s"),
        ("intervals.step_p50_s.value", "step_time.p50"),
        ("intervals.step_p95_s.value", "step_time.p95"),
        ("intervals.step_p99_s.value", "step_time.p99"),
        # the sleep probe (schema 16-17) compared the GPU's busy time with the median step
        ("host_bound.step_s", "step_time.p50"),
        ("host_bound.step_s", "intervals.step_p50_s.value"),
        # a two-rank verdict's gap and the what-if's cap are one figure
        ("diagnosis.straggler.gap_s.value", "diagnosis.whatif.extra_work_s"),
        # the reader's arithmetic host-bound judgement of an older result (made when read)
        # carries the MFU interval its words quote
        ("compute.mfu", "host_bound.reason.figures.interval.value"),
    }
)


def _figures(value: object, path: str = "") -> Iterator[tuple[str, float]]:
    """Every non-integral float of a dumped result by its dotted name (lists left out: their
    items are per rank or per repeat, alike by nature for one rank or one repeat; and the
    reasons of `unavailable`: one cause, with its rule's figures, stands behind each figure it
    nulls, as short windows null utilisation, power and energy alike)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if not path and key == "unavailable":
                continue
            yield from _figures(inner, f"{path}.{key}" if path else key)
    elif isinstance(value, float) and not value.is_integer():
        yield path, value


def _kept_results() -> list[CellResult]:
    return [_read(path) for path in _stored_cells()]


def copies(results: list[CellResult]) -> set[tuple[str, str]]:
    """Pairs of names whose figures are equal in every result that has both (two or more):
    one figure stored twice, not a coincidence of one run."""
    both: dict[tuple[str, str], int] = {}
    equal: dict[tuple[str, str], int] = {}
    for result in results:
        figures = dict(_figures(result.model_dump(mode="json")))
        names = sorted(figures)
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                pair = (first, second)
                both[pair] = both.get(pair, 0) + 1
                equal[pair] = equal.get(pair, 0) + (figures[first] == figures[second])
    return {pair for pair, count in both.items() if count >= 2 and equal[pair] == count}


def test_no_figure_is_stored_twice_under_two_names() -> None:
    """By value: read every kept result (tests/fixtures, the first H100 run's converted copy
    with them); no two names hold the same figure in every one of them. MFU's interval was such
    a copy (the throughput's scaled): derived when read now."""
    found = copies(_kept_results())
    new = found - NOT_YET_COPIES
    assert not new, f"a figure stored twice under two names (keep one): {sorted(new)}"
    gone = NOT_YET_COPIES - found
    assert not gone, f"listed copies no longer stored twice (delete): {sorted(gone)}"


def test_the_value_check_finds_a_copy() -> None:
    measured = [r for r in _kept_results() if r.throughput is not None][:3]
    doubled = [r.model_copy(update={"wall_s": r.throughput.samples_per_s}) for r in measured]
    assert ("throughput.samples_per_s", "wall_s") in copies(doubled)
    assert ("throughput.samples_per_s", "wall_s") not in copies(measured)
