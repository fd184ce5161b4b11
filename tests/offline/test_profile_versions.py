"""An older profile analysis is completed from its run's result.json where the run is read, so
the report reads one shape: the run's diagnosis where the analysis has none, and a named
straggler marked injected or not off the run's recorded delays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SHARED_DIR
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import verdicts as verdict_words
from torchscale.offline.results import profile_figures
from torchscale.offline.results.profile_versions import read_analysis, with_run
from torchscale.offline.results.versions import read_cell_result

RUN = (
    Path(__file__).parents[1]
    / "fixtures/cpu_profile_injected/standalone/profile/tiny-mlp__b8__w2__fp32__ddp__9a305f17"
)
SUFFIX = " (injected: --inject-delay)"
FIXTURES = REPO_ROOT / "tests" / "fixtures"


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
    assert verdict is not None and verdict.injected is True
    # its line kept as stored (older words no code says); the straggler line says it
    assert SUFFIX not in verdict_words.summary(verdict)
    assert verdict_words.straggler_text(verdict, 2).endswith(SUFFIX)


def test_an_older_straggler_no_delay_made_is_not_marked(tmp_path: Path) -> None:
    path = _as_schema_5(tmp_path)
    result = read_cell_result(RUN / "result.json").result
    assert result is not None
    undelayed = result.model_copy(update={"injected_delays": []})
    read, _ = read_analysis(path, undelayed)
    assert read is not None and read.diagnosis is not None
    verdict = read.diagnosis.straggler
    assert (
        verdict is not None
        and verdict.injected is False
        and SUFFIX not in verdict_words.summary(verdict)
    )


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


STORED = sorted(
    path  # schema 8 and later keep no copy of the diagnosis' figures to compare with
    for path in [*FIXTURES.rglob("analysis.json"), *(SHARED_DIR / "gpu").rglob("analysis.json")]
    if json.loads(path.read_text(encoding="utf-8"))["schema_version"] < 8
)


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.parent.name))
def test_every_stored_analysis_shows_the_figures_it_stored(path: Path) -> None:
    """Schema 8 stores no copy of the diagnosis: each older file's copies are what the one
    reader of each figure (`profile_figures`) gives from the upgraded analysis."""
    data = json.loads(path.read_text(encoding="utf-8"))
    analysis = ProfileAnalysis.model_validate(data)
    assert analysis.schema_version == data["schema_version"]
    assert read_analysis(path)[1] is None
    stall, exposed = (
        profile_figures.sync_stall_pct(analysis),
        profile_figures.exposed_comm_pct(analysis),
    )
    assert stall.value == pytest.approx(data["sync_stall_pct"])
    assert (stall.reason is None) == (data["sync_stall_pct"] is not None)
    if "sync_stall_pct" in data["unavailable"]:
        assert stall.reason == data["unavailable"]["sync_stall_pct"]
    assert exposed.value == pytest.approx(data["exposed_comm_pct"])
    assert profile_figures.cycle_us(analysis) == pytest.approx(data["cycle_us"])
    stored = data.get("straggler")
    verdict = analysis.diagnosis.straggler if analysis.diagnosis is not None else None
    if verdict is not None:  # stored only when the verdict named it
        assert (stored is not None) == verdict.named
        assert stored is None or (stored["rank"], stored["phase"]) == (verdict.rank, verdict.phase)
    else:
        own = profile_figures.own_straggler(analysis)
        assert (own.model_dump() if own else None) == stored
    if analysis.diagnosis is not None and data.get("whatif"):
        whatif = analysis.diagnosis.whatif
        assert whatif is not None and whatif.rank == data["whatif"][0]["rank"]
        assert 100 * (whatif.share.value or 0) == pytest.approx(data["whatif"][0]["speedup_pct"])


def test_a_schema_2_what_if_is_folded_into_its_diagnosis() -> None:
    """Schema 2's attribution had no what-if: the analysis' own is read as the diagnosis'."""
    data = json.loads((RUN / "analysis.json").read_text(encoding="utf-8"))
    diagnosis = data.pop("diagnosis")
    keep = ("basis", "steps", "ranks", "step_s", "parts", "straggler", "cross_checks")
    data["attribution"] = {k: diagnosis[k] for k in keep}
    data["schema_version"] = 2
    analysis = ProfileAnalysis.model_validate(data)
    assert analysis.diagnosis is not None and analysis.diagnosis.source == "traces"
    whatif = analysis.diagnosis.whatif
    (stored,) = data["whatif"]
    assert whatif is not None and whatif.rank == stored["rank"] == 1 and whatif.named
    assert whatif.share.model_dump() == stored["share"]
    assert whatif.saved_s.value == pytest.approx(stored["saved_us_per_step"] / 1e6)
    assert analysis.before_diagnosis is None and analysis.arrival_shares == {"0": 0.0, "1": 1.0}


def test_a_schema_1_analysis_keeps_its_own_figures_until_its_run_has_a_diagnosis() -> None:
    path = FIXTURES / "cpu_sweep_profile/profile/profile/tiny-mlp__b8__w2__fp32__ddp__8154de06"
    analysis, _ = read_analysis(path / "analysis.json")
    assert analysis is not None and analysis.diagnosis is None
    assert profile_figures.sync_stall_pct(analysis).value == pytest.approx(34.3257712936)
    assert [w.rank for w in profile_figures.own_whatifs(analysis)] == [1, 0]
    modelled = read_cell_result(RUN / "result.json").result
    assert modelled is not None and modelled.diagnosis is not None
    taken = with_run(analysis, modelled)
    assert taken.before_diagnosis is None and profile_figures.own_straggler(taken) is None
    wait = modelled.diagnosis.part("wait_for_peers")
    assert wait is not None and wait.share.value is not None
    assert profile_figures.sync_stall_pct(taken).value == pytest.approx(100 * wait.share.value)
