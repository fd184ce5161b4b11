"""One verdict per run, the same on every surface: for real runs (a 2-rank sweep, a
2-rank profile with an injected straggler and, with --runslow, a balanced 4-rank profile), the
step split, the straggler verdict, its what-if (every surface that names a straggler says what
it costs) and the exposed-communication figure read from the terminal, result.json,
analysis.json, summary.csv and the Markdown, HTML and term reports are the same.

Each surface is parsed on its own (the terminal unwrapped, HTML as text); the expected strings
are the stored diagnosis written by `report/diagnosis_text.py`, and the figures are compared as
numbers where a surface is a table (summary.csv)."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.e2e.test_sweep import run_sweep
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.console.live_table import stall_text
from torchscale.interfaces.report.diagnosis_text import (
    split_text,
    straggler_text,
    sync_stall_text,
    whatif_text,
)
from torchscale.offline.results import profile_figures
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.frame import cells_table


def _flat(text: str) -> str:
    """Lines unwrapped and whitespace collapsed: what a reader sees, however it was wrapped."""
    return " ".join(text.split())


def _printed_once(terminal: str, line: str) -> bool:
    """`line` once in the flat terminal, whole or as the live table prints a note longer than
    its two rows: cut at a word and ended with ' …' (the whole line is in -v and the JSON)."""
    words = line.split()
    shown = [" ".join(words[:k]) + " …" for k in range(3, len(words))]
    return terminal.count(line) + sum(terminal.count(cut) for cut in shown) == 1


def _html_text(page: str) -> str:
    without = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page, flags=re.S)
    return _flat(html_lib.unescape(re.sub(r"<[^>]+>", " ", without)))


def _reports(directory: Path, out: Path) -> dict[str, str]:
    """The Markdown, HTML and term reports of `directory` (the term report whole and as it
    prints by default, its summary), as flat text."""
    texts = {}
    for name, fmt, extra in (
        ("md", "md", []),
        ("html", "html", []),
        ("term", "term", ["--full"]),  # every section, as the others
        ("term summary", "term", []),  # the default: what most readers see
    ):
        target = out / f"report.{name.replace(' ', '_')}"
        result = CliRunner().invoke(
            app,
            ["report", "--source", str(directory), "-f", fmt, "-o", str(target), *extra],
            # wide enough that no table cell wraps: a wrapped cell interleaves its columns
            env={"COLUMNS": "400"} if fmt == "term" else None,
        )
        assert result.exit_code == 0, result.output
        page = target.read_text(encoding="utf-8")
        if fmt == "md":  # Markdown escapes its own punctuation and writes '<' as '&lt;':
            # read it as it renders
            page = html_lib.unescape(re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>])", r"\1", page))
        texts[name] = _html_text(page) if fmt == "html" else _flat(page)
    return texts


def _verdict_texts(diagnosis: Diagnosis) -> list[str]:
    """The lines every surface that names the straggler shows: its verdict and, when it names
    one, the what-if."""
    whatif = whatif_text(diagnosis)
    verdict = straggler_text(diagnosis.straggler, diagnosis.ranks)
    return [verdict] if whatif is None else [verdict, whatif]


def _headline_texts(diagnosis: Diagnosis) -> list[str]:
    return [sync_stall_text(diagnosis), split_text(diagnosis), *_verdict_texts(diagnosis)]


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return run_sweep(
        tmp_path_factory.mktemp("surfaces"),
        "surfaces",
        models=["tiny-mlp"],
        batch_sizes=[8],
        gpu_counts=[2],
        measurement={"warmup_steps": 2, "steps": 6, "repeats": 2},
    )


@pytest.mark.slow  # a real sweep cell under torchrun
def test_a_sweep_cell_says_the_same_on_every_surface(sweep_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert sweep_run.result.exit_code == 0, sweep_run.output
    (cell,) = sweep_run.cells
    diagnosis = cell.diagnosis
    assert diagnosis is not None and diagnosis.source == "phase timers"
    # the terminal: the live table's row shows the same sync stall (its share of the step,
    # the one figure, compact), and a named straggler's own line under it; -v prints the
    # sentences (tests/interfaces/test_render.py)
    terminal = _flat(sweep_run.output)
    (row,) = [line for line in sweep_run.output.splitlines() if line.startswith("tiny-mlp ")]
    table = cells_table([cell])
    assert re.search(rf"(?<!\S){re.escape(stall_text(table.iloc[0]))}(?!\S)", row), row  # '5.1 %'
    stall = diagnosis.part("wait_for_peers")
    assert stall is not None
    assert table.iloc[0]["wait_for_peers_share"] == stall.share.value or (
        stall.share.value is None and pd.isna(table.iloc[0]["wait_for_peers_share"])
    )
    if diagnosis.straggler is not None and diagnosis.straggler.named:
        assert _printed_once(terminal, straggler_text(diagnosis.straggler, diagnosis.ranks))
    # summary.csv: the same figures as numbers
    summary = pd.read_csv(sweep_run.exp_dir / "summary.csv")
    (row,) = summary.to_dict("records")
    for part in diagnosis.parts:
        stored = part.share.value
        shown = row[f"{part.name}_share"]
        assert (stored is None and pd.isna(shown)) or shown == pytest.approx(stored)
    verdict = diagnosis.straggler
    assert verdict is not None
    assert bool(row["straggler_named"]) == verdict.named
    assert row["straggler_summary"] == verdict_words.straggler_text(verdict, diagnosis.ranks)
    # the reports
    for fmt, text in _reports(sweep_run.exp_dir, tmp_path).items():
        for line in _verdict_texts(diagnosis):
            assert line in text, (fmt, line)


def _profile(tmp: Path, ranks: int, *delay: str) -> tuple[str, Path]:
    result = CliRunner().invoke(
        app,
        [
            "profile",
            "--gpus",
            str(ranks),
            "--model",
            "tiny-mlp",
            "--batch-size",
            "8",
            "--steps",
            "10",
            "--tool",
            "torch",
            "-o",
            str(tmp),
            "--name",
            "p",
            *delay,
        ],
    )
    assert result.exit_code == 0, result.output
    (run,) = sorted((tmp / "p" / "profile").iterdir())
    return result.stdout, run


@pytest.mark.slow  # a real torchrun cell or profile
@pytest.mark.parametrize(
    ("ranks", "delay"),
    [(2, ["--inject-delay", "1:backward:40"]), pytest.param(4, [], marks=pytest.mark.slow)],
    ids=["2ranks-injected", "4ranks-balanced"],
)
def test_a_profile_says_the_same_on_every_surface(
    tmp_path: Path, ranks: int, delay: list[str]
) -> None:
    stdout, run = _profile(tmp_path / "runs", ranks, *delay)
    analysis = ProfileAnalysis.model_validate_json((run / "analysis.json").read_text())
    diagnosis = analysis.diagnosis
    assert diagnosis is not None
    result = read_cell(run / "result.json").doc
    assert result is not None and result.diagnosis == diagnosis  # stored once, the same
    # the headline figures are read off the diagnosis, never stored beside it
    stall = diagnosis.part("wait_for_peers")
    exposed = diagnosis.part("exposed_transfer")
    assert stall is not None and exposed is not None
    if stall.share.value is not None:
        shown = profile_figures.sync_stall_pct(analysis).value
        assert shown == pytest.approx(100 * stall.share.value)
    if exposed.share.value is not None:
        shown = profile_figures.exposed_comm_pct(analysis).value
        assert shown == pytest.approx(100 * exposed.share.value)
    printed = json.loads(analysis.model_dump_json())["diagnosis"]
    assert printed == json.loads(diagnosis.model_dump_json())
    terminal = _flat(stdout)
    for text in _headline_texts(diagnosis):
        assert terminal.count(text) == 1, (text, terminal)
    verdict = diagnosis.straggler
    assert verdict is not None
    if delay:
        assert verdict.named and verdict.rank == 1
        assert whatif_text(diagnosis) is not None  # so the what-if is checked below
    for fmt, text in _reports(tmp_path / "runs" / "p", tmp_path).items():
        for line in _verdict_texts(diagnosis):
            assert line in text, (fmt, line)
