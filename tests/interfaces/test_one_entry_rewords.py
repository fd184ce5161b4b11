"""Rewording a verdict is one edit of the catalogue: replace an entry and every surface (the
terminal report, markdown, HTML, the sweep's live table) says the new words and none the old.
Shown on the straggler's line and on the "noisy" reliability level, from the real CPU sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interfaces.test_live_table import named_and_injected, sweep
from torchscale.contracts import wording
from torchscale.interfaces.api import build_report
from torchscale.interfaces.console.live_table import LiveTable, live_layout
from torchscale.offline.results.frame import cells_table

SWEEP = Path(__file__).parents[1] / "fixtures" / "cpu_default_sweep"
NEW = "ZZ-reworded-ZZ"


def _reports(tmp_path: Path) -> dict[str, str]:
    """The report of the real sweep in each format a person reads, its lines joined (the
    terminal wraps a clause wherever its width falls)."""
    out = {}
    for fmt in ("term", "md", "html"):
        run = build_report(SWEEP, fmt, output=tmp_path / f"report.{fmt}")
        out[fmt] = " ".join(run.outcome.content.decode("utf-8").split())
    return out


def _live_rows() -> str:
    """Every row and note of the live table over the sweep, as printed."""
    results = sweep()
    table = cells_table(results)
    live = LiveTable(live_layout([r.cell for r in results], 120))
    return "\n".join(line.text for r in results for line in live.row(r, table))


def _surfaces(tmp_path: Path) -> dict[str, str]:
    return {**_reports(tmp_path), "live table": _live_rows()}


@pytest.mark.parametrize(
    ("code", "old"),
    [
        # the named straggler's line: 'Straggler: rank 1, compute in backward, +10 ms/step'
        ("straggler.named", "Straggler: rank"),
        # a cell whose figures vary past the bound
        ("noise.level.varies", "noisy"),
    ],
)
@pytest.mark.slow  # over 2 s on 2 cores
def test_one_entry_rewords_every_surface(
    code: str, old: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _surfaces(tmp_path / "before")
    shown = [surface for surface, text in before.items() if old in text]
    assert sorted(shown) == sorted(before), f"{old!r} is not on every surface: {shown}"
    monkeypatch.setitem(wording.PHRASES, code, NEW)
    after = _surfaces(tmp_path / "after")
    for surface, text in after.items():
        assert NEW in text, f"{surface} does not say the new words"
        assert old not in text, f"{surface} still says {old!r}: its words are made elsewhere"


def test_the_sweep_has_a_named_straggler_and_a_noisy_cell() -> None:
    """What the test above rewords is there to be shown."""
    named, _ = named_and_injected(sweep())
    assert named.diagnosis is not None and named.diagnosis.straggler is not None
    assert "varies" in set(cells_table(sweep())["reliability"].dropna())


@pytest.mark.parametrize(
    ("code", "old", "live"),
    [
        # the headline's verdict, on every report format
        ("usable.with_care", "These numbers can be used with care", False),
        # the summary's line over the cells' reliability
        ("summary.reliable_cells", "2 of 8 cells reliable", False),
        # the live table's busy-machine note, said once per sweep
        ("live.busy", "rows marked busy measure the contention", True),
    ],
)
@pytest.mark.slow  # over 2 s on 2 cores
def test_one_entry_rewords_a_first_screen_clause(
    code: str, old: str, live: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first screen's clauses are catalogue phrases too: one edit rewords each surface."""

    def surfaces(where: Path) -> dict[str, str]:
        return {"live table": _live_rows()} if live else _reports(where)

    assert all(old in text for text in surfaces(tmp_path / "before").values())
    monkeypatch.setitem(wording.PHRASES, code, NEW)
    for surface, text in surfaces(tmp_path / "after").items():
        assert NEW in text, f"{surface} does not say the new words"
        assert old not in text, f"{surface} still says {old!r}: its words are made elsewhere"
