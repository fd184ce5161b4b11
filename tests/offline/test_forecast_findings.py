"""A forecast stores facts, not sentences (issue 72): each term's formula, each assumption and
each reason for a missing figure is a `forecast.*` finding, worded when shown; a kept schema 1
forecast (tests/fixtures/forecasts_v1, written by the torchscale before schema 2, with the words
that torchscale showed for it) reads back as codes and is worded exactly as it was."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.forecast import Forecast
from torchscale.contracts.wording import say
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.documents import read_forecast

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEPT = FIXTURES / "forecasts_v1"
WORDS = json.loads((KEPT / "words.json").read_text(encoding="utf-8"))


def _kept() -> list[Forecast]:
    reads = [read_forecast(path) for path in sorted(KEPT.glob("tiny-*.json"))]
    assert [r.problem for r in reads] == [None] * 4 and {r.version for r in reads} == {1}
    return [r.doc for r in reads if r.doc is not None]


def test_predict_stores_codes_and_figures_not_sentences(tmp_path: Path) -> None:
    results = Path(shutil.copytree(FIXTURES / "sweep8_v13", tmp_path / "results"))
    done = CliRunner().invoke(app, ["predict", "-s", str(results), "--gpus", "4", "--nodes", "2"])
    assert done.exit_code == 0, done.output
    stored = sorted((results / "default_scaling" / "forecasts").glob("*.json"))
    assert stored
    for path in stored:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["schema_version"] == 2
        hows = [term["how"] for term in data["terms"]]
        assert all(how["code"].startswith("forecast.term.") for how in hows), hows
        notes = [*data["assumptions"], *data["unavailable"].values()]
        assert notes and all(n["code"].startswith("forecast.") for n in notes), notes
        assert not any(n["code"] == "forecast.stored" for n in [*hows, *notes])
        # the figures are numbers, names and lists of them: no sentence among them
        assert not any(
            isinstance(v, str) and " " in v for n in [*hows, *notes] for v in n["figures"].values()
        )


def test_a_kept_schema_1_forecast_reads_as_codes() -> None:
    for forecast in _kept():
        findings = [*forecast.assumptions, *(t.how for t in forecast.terms)]
        assert {f.code for f in findings} >= {"forecast.no_comm_run", "forecast.model_error"}
        assert not [f for f in findings if f.code == "forecast.stored"]


def test_a_kept_schema_1_forecast_is_worded_as_it_was() -> None:
    from rich.console import Console

    from torchscale.contracts.wording.forecast_terms import said_once
    from torchscale.interfaces.console.forecasts import forecast_renderables

    kept = _kept()
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None)
    for renderable in forecast_renderables(kept, 100, verbose=True):
        console.print(renderable)
    assert out.getvalue() == WORDS["console"]
    assert ["; ".join(say(a) for a in f.assumptions) for f in kept] == WORDS["csv"]
    # the report joins them with '; ': the same words, each code said once over the four
    said = said_once(a for f in kept for a in f.assumptions)
    assert "; ".join(said) == "; ".join(WORDS["said_once"])


def test_a_sentence_no_code_gives_back_is_kept_as_stored_and_marked() -> None:
    from torchscale.offline.results.upgrades.forecast_words import finding_of

    own = "own work (median phases) measured at 2 rank(s): 41.2 ms"
    assert finding_of(own) == Finding(
        code="forecast.term.own_work", figures={"world": 2, "own_s": 0.0412}
    )
    odd = "own work (median phases) measured at 2 rank(s): 41.25 ms, by hand"
    kept = finding_of(odd)
    assert kept == Finding(code="forecast.stored", figures={"words": odd})
    assert say(kept) == f"{odd} (as an older forecast stored it)"


def test_stored_words_are_never_merged_as_figures() -> None:
    """Two stored sentences that differ in a number stay two: only a code's figures range."""
    from torchscale.contracts.wording.forecast_terms import said_once

    a = Finding(code="forecast.stored", figures={"words": "cores 2, turns 1.5x"})
    b = Finding(code="forecast.stored", figures={"words": "cores 4, turns 1.8x"})
    assert said_once([a, b]) == [say(a), say(b)]
