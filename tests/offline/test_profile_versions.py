"""An older profile analysis is completed from its run's result.json where the run is read, so
the report reads one shape: the run's diagnosis where the analysis has none, and a named
straggler marked injected or not off the run's recorded delays."""

from __future__ import annotations

import json
from pathlib import Path

from torchscale.offline.results.profile_versions import read_analysis
from torchscale.offline.results.versions import read_cell_result

RUN = (
    Path(__file__).parents[1]
    / "fixtures/profile_injected_v14/standalone/profile/tiny-mlp__b8__w2__fp32__ddp__9a305f17"
)
SUFFIX = " (injected: --inject-delay)"


def _as_schema_5(tmp_path: Path) -> Path:
    """The fixture's analysis as schema 5 wrote it: the verdict without `injected`."""
    data = json.loads((RUN / "analysis.json").read_text(encoding="utf-8"))
    verdict = data["diagnosis"]["straggler"]
    assert verdict["named"] and verdict["injected"] and SUFFIX in verdict["summary"]
    del verdict["injected"]
    verdict["summary"] = verdict["summary"].replace(SUFFIX, "")
    data["schema_version"] = 5
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_an_older_named_straggler_is_marked_off_the_runs_delays(tmp_path: Path) -> None:
    path = _as_schema_5(tmp_path)
    result = read_cell_result(RUN / "result.json").result
    assert result is not None and {d.rank for d in result.injected_delays} == {1}
    alone, problem = read_analysis(path)
    assert problem is None and alone is not None
    assert alone.diagnosis is not None and alone.diagnosis.straggler is not None
    assert alone.diagnosis.straggler.injected is None  # nothing to judge it by
    read, problem = read_analysis(path, result)
    assert problem is None and read is not None and read.diagnosis is not None
    verdict = read.diagnosis.straggler
    assert verdict is not None and verdict.injected is True and SUFFIX in verdict.summary


def test_an_older_straggler_no_delay_made_is_not_marked(tmp_path: Path) -> None:
    path = _as_schema_5(tmp_path)
    result = read_cell_result(RUN / "result.json").result
    assert result is not None
    undelayed = result.model_copy(update={"injected_delays": []})
    read, _ = read_analysis(path, undelayed)
    assert read is not None and read.diagnosis is not None
    verdict = read.diagnosis.straggler
    assert verdict is not None and verdict.injected is False and SUFFIX not in verdict.summary


def test_an_analysis_without_a_diagnosis_takes_its_runs(tmp_path: Path) -> None:
    data = json.loads((RUN / "analysis.json").read_text(encoding="utf-8"))
    data["diagnosis"] = None
    data["unavailable"] = {"diagnosis": "no complete step"}
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = read_cell_result(RUN / "result.json").result
    assert result is not None and result.diagnosis is not None
    read, _ = read_analysis(path, result)
    assert read is not None and read.diagnosis == result.diagnosis
    alone, _ = read_analysis(path)
    assert alone is not None and alone.diagnosis is None
