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
    results = Path(shutil.copytree(FIXTURES / "cpu_default_sweep", tmp_path / "results"))
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


# one finding of each code with figures as analysis writes them (seconds, ratios, ids)
SAMPLES = {
    "forecast.term.own_work": {"world": 2, "threads": 4, "own_s": 0.04125},
    "forecast.term.gpu_unshared": {},
    "forecast.term.contention": {
        **{"own_s": 0.0231, "middle": 1.0, "busy": 0.91, "reference_threads": 1, "demand": 0.91},
        **{"threads": 1, "shared": 1.82, "ranks_per_host": 4, "cores": 2, "shared_ref": 1.0},
        **{"factor": 1.82, "shared_exposed_s": 0.0052, "sharing": 1.82},
    },
    "forecast.term.stragglers": {
        **{"world": 4, "sigma_s": 0.000346, "e_n": 1.029, "reference_world": 2},
        **{"jitter_s": 0.0002, "scale": 1.73},
    },
    "forecast.term.exposed_from_comm": {
        "base_s": 0.0011,
        "collectives": [
            {"op": "all_reduce", "size": 1000000, "buckets": 1, "steps": 6, "alpha_s": 5e-06}
            | {"factor": 1.5, "beta": 1e-09, "run_id": "w4"}
        ],
        "overlap_s": -0.0021,
        "from": ["m__w2", "m__w4"],
    },
    "forecast.term.exposed_from_cells": {
        "fit": "least_squares",
        "points": [[1, 0.0, 0.0012], [2, 1.0, 0.0051]],
        "world": 4,
        "at": 1.5,
    },
    "forecast.strategy_derived": {"strategy": "fsdp", "measured": "ddp"},
    "forecast.threads.launcher_default": {"cores": 8, "ranks_per_host": 4, "threads": 2},
    "forecast.threads.fixed": {"threads": 1},
    "forecast.threads.mixed": {"counts": [1, 2], "threads": 2},
    "forecast.few_ranks": {"ranks_per_host": 1.0, "cell_id": "m__w2", "fewest": 2.0},
    "forecast.gpu_unshared": {},
    "forecast.cores_unrecorded.as_threads": {"threads": 1},
    "forecast.cores_unrecorded": {},
    "forecast.shared_caches": {"ranks_per_node": 2.0},
    "forecast.past_the_cores": {
        **{"ranks_per_host": 4.0, "demand": 0.79, "cores": 2, "shared": 1.58, "half": 0}
    },
    "forecast.past_the_cores.apart": {
        **{"ranks_per_host": 3.0, "demand": 1.0, "cores": 2, "shared": 1.75, "half": 0.25}
    },
    "forecast.fewer_threads": {"threads": 1, "reference_threads": 2, "thread": 1.9},
    "forecast.one_rank_jitter": {},
    "forecast.comm_nodes": {"nodes": 2, "measured_nodes": 1},
    "forecast.no_comm_run": {},
    "forecast.nothing_hidden": {"most_s": 0.0123},
    "forecast.noisy_cell": {
        **{"cell_id": "m__w1", "cv": 2.1, "ratio": 3.0, "usual": 0.175},
        **{"mean_s": 0.0411, "median_s": 0.0008},
    },
    "forecast.cell_nodes": {"measured_nodes": 1, "nodes": 2},
    "forecast.model_error": {"errors": [[2, -0.12], [4, 0.05]], "error": 0.12},
    "forecast.no_narrower": {"widest": 0.92, "cell_id": "b"},
}


def test_every_code_a_schema_1_forecast_said_is_read_back() -> None:
    """Schema 1 stored today's words of these codes: each reads back as its code, its words
    unchanged, so no schema 1 forecast's line is left as stored."""
    from torchscale.contracts.wording import PHRASES
    from torchscale.offline.results.upgrades.forecast_words import finding_of

    written = {code for code in PHRASES if code.startswith("forecast.")} - {"forecast.stored"}
    assert written == {code.removesuffix(".apart") for code in SAMPLES}
    for sample, figures in SAMPLES.items():
        code = sample.removesuffix(".apart")  # the same code, its other form
        words = say(Finding(code=code, figures=figures))
        back = finding_of(words)
        assert (back.code, say(back)) == (code, words)
