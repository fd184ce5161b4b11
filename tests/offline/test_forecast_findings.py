"""A forecast stores facts, not sentences: each term's formula, each assumption and
each reason for a missing figure is a `forecast.*` finding, worded when shown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from torchscale.contracts.schema.forecast import FORECAST_SCHEMA_VERSION
from torchscale.interfaces.cli.app import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_predict_stores_codes_and_figures_not_sentences(tmp_path: Path) -> None:
    results = Path(shutil.copytree(FIXTURES / "cpu_default_sweep", tmp_path / "results"))
    done = CliRunner().invoke(app, ["predict", "-s", str(results), "--gpus", "4", "--nodes", "2"])
    assert done.exit_code == 0, done.output
    stored = sorted((results / "default_scaling" / "forecasts").glob("*.json"))
    assert stored
    for path in stored:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["schema_version"] == FORECAST_SCHEMA_VERSION
        hows = [term["how"] for term in data["terms"]]
        assert all(how["code"].startswith("forecast.term.") for how in hows), hows
        notes = [*data["assumptions"], *data["unavailable"].values()]
        assert notes and all(n["code"].startswith("forecast.") for n in notes), notes
        # the figures are numbers, names and lists of them: no sentence among them
        assert not any(
            isinstance(v, str) and " " in v for n in [*hows, *notes] for v in n["figures"].values()
        )
