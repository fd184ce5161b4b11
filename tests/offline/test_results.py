"""`torchscale.results.load`: a results folder reads into the current schema and pandas; a file of
another schema version stops the load with one line (convert the folder, or upgrade torchscale);
--resume trusts a stored result whose definition hash matches.

tests/fixtures/cpu_crashes/ is a real results directory written by torchscale 0.1.0 from
tests/fixtures/cpu_crashes/v1.yaml, converted to the current schema (tools/convert_results.py):
tiny-mlp at world sizes 1 and 2 (ok), the crash plug-in (ok at world 1, failed at world 2) and one
skipped cell (device cuda, no GPU).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import torchscale.results
from tests.project.test_torch_free import import_chain, import_graph
from torchscale.contracts.errors import ResultsError
from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION
from torchscale.contracts.versioned import VersionError
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.frame import COLUMNS
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.loader import load_config
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import PlannedCell

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cpu_crashes"
V1_DIR = FIXTURES / "v1_fixture"
V1_CONFIG = FIXTURES / "v1.yaml"
TINY_W1 = "tiny-mlp__b8__w1__fp32__ddp__a654a748"
TINY_W2 = "tiny-mlp__b8__w2__fp32__ddp__cb115c3f"
CRASH_W1 = "tests.fault_models_crash__b8__w1__fp32__ddp__4d78d128"
CRASH_W2 = "tests.fault_models_crash__b8__w2__fp32__ddp__da59d299"
SKIPPED = "tiny-mlp__b8__w1__fp32__ddp__f95bc20a"


def raw(cell_id: str) -> dict[str, object]:
    data = json.loads((V1_DIR / "cells" / f"{cell_id}.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


# ------------------------------------------------------------------------ the crashes fixture


def test_load_reads_every_cell() -> None:
    experiment = torchscale.results.load(V1_DIR)
    assert experiment.skipped == []
    assert experiment.name == "v1_fixture"
    cells = experiment.cells.set_index("cell_id")
    assert set(cells.index) == {TINY_W1, TINY_W2, CRASH_W1, CRASH_W2, SKIPPED}
    assert (cells["schema_version"] == RESULT_SCHEMA_VERSION).all()
    assert list(experiment.cells.columns) == [*COLUMNS, "schema_version"]
    assert cells.loc[TINY_W1, "status"] == "ok"
    assert cells.loc[CRASH_W2, "status"] == "failed"
    assert cells.loc[SKIPPED, "status"] == "skipped"
    assert "no CUDA GPU" in cells.loc[SKIPPED, "error"]


def test_steps_and_ranks_tables() -> None:
    experiment = torchscale.results.load(V1_DIR)
    steps = experiment.steps
    phases = ["data_s", "forward_s", "backward_s", "grad_sync_wait_s", "optimizer_s"]
    phases += ["cpu_wait_s", "cpu_time_s"]  # not phases: the thread's wait for and time on a CPU
    phases += ["comm_hold_s", "comm_hold_backward_s"]  # nor these: a DDP comm hook's hold
    phases += ["model_forward_s"]  # nor this: a user's job's model's forward, in its forward
    assert list(steps.columns) == ["cell_id", "rank", "window", "repeat", "step", "time_s", *phases]
    assert steps[phases].isna().all().all()  # 0.1.0's step files hold no phase times or CPU clocks
    w2 = steps[steps["cell_id"] == TINY_W2]
    # 2 ranks x 2 repeats x 5 steps in sync windows, 2 ranks x 5 steps under no_sync, each
    # window less its first step (it followed the window's edge work; the conversion dropped it
    # from the step file as from the statistics)
    assert len(w2[w2["window"] == "sync"]) == 16
    assert len(w2[w2["window"] == "no_sync"]) == 8
    assert not (w2["step"] == 0).any()
    assert set(w2["rank"]) == {0, 1}
    assert (steps["time_s"] > 0).all()
    assert steps[steps["cell_id"] == CRASH_W2].empty  # a failed cell has no step records
    ranks = experiment.ranks
    w2_ranks = ranks[ranks["cell_id"] == TINY_W2].set_index("rank")
    assert list(w2_ranks.index) == [0, 1]
    old_ranks = raw(TINY_W2)["ranks"]
    assert isinstance(old_ranks, list)
    assert w2_ranks.loc[1, "step_p50_s"] == old_ranks[1]["step_time"]["p50"]


def test_steps_match_the_pooled_statistics() -> None:
    """The per-step table is the raw data the result's statistics came from."""
    experiment = torchscale.results.load(V1_DIR)
    steps = experiment.steps
    sync = steps[(steps["cell_id"] == TINY_W2) & (steps["window"] == "sync")]
    result = experiment.result(TINY_W2)
    assert result.step_time is not None
    assert len(sync) == result.step_time.count
    assert sync["time_s"].max() == pytest.approx(result.step_time.max)
    assert sync["time_s"].median() == pytest.approx(result.step_time.p50)


# ------------------------------------------------------------------ versions and bad files


def _with_cell(tmp_path: Path, changes: dict[str, object]) -> tuple[Path, Path]:
    """A copy of the fixture whose TINY_W1 file has `changes`, and that file."""
    exp = tmp_path / "exp"
    shutil.copytree(V1_DIR, exp)
    path = exp / "cells" / f"{TINY_W1}.json"
    path.write_text(json.dumps(raw(TINY_W1) | changes), encoding="utf-8")
    return exp, path


@pytest.mark.parametrize(
    ("version", "todo"),
    [
        (RESULT_SCHEMA_VERSION + 1, "upgrade torchscale to read it"),
        (RESULT_SCHEMA_VERSION - 1, "convert its folder with `python tools/convert_results.py"),
    ],
)
def test_a_file_of_another_version_stops_the_load_with_one_line(
    tmp_path: Path, version: int, todo: str
) -> None:
    """Nothing is read from a folder half converted: the load stops, naming the file."""
    exp, path = _with_cell(tmp_path, {"schema_version": version})
    with pytest.raises(VersionError) as raised:
        torchscale.results.load(exp)
    line = str(raised.value)
    assert line.startswith(f"{path}: cell result of schema {version}; ")
    assert f"this torchscale reads {RESULT_SCHEMA_VERSION}: {todo}" in line
    assert "\n" not in line


def test_a_torn_file_is_skipped_with_one_line(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    shutil.copytree(V1_DIR, exp)
    (exp / "cells" / "torn.json").write_text('{"kind": "torchscale.cell", "sche', "utf-8")
    experiment = torchscale.results.load(exp)
    reasons = {path.name: reason for path, reason in experiment.skipped}
    assert list(reasons) == ["torn.json"] and "not valid JSON" in reasons["torn.json"]
    assert all("\n" not in reason for reason in reasons.values())
    assert {TINY_W1, TINY_W2} <= set(experiment.cells["cell_id"])


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "not a torchscale cell result"),
        ({"kind": "other"}, "not a torchscale cell result"),
        ({"kind": "torchscale.cell", "schema_version": "1"}, "bad schema_version"),
        ({"kind": "torchscale.cell", "schema_version": 0}, "bad schema_version"),
        ({"kind": "torchscale.cell", "schema_version": True}, "bad schema_version"),
        ({"kind": "torchscale.cell", "schema_version": RESULT_SCHEMA_VERSION}, "invalid cell"),
        (
            {"kind": "torchscale.cell", "schema_version": RESULT_SCHEMA_VERSION, "status": "ok"},
            "invalid cell result",
        ),
    ],
)
def test_bad_result_data_is_a_problem_not_a_crash(
    tmp_path: Path, data: object, problem: str
) -> None:
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    read = read_cell(path)
    assert read.doc is None
    assert read.problem is not None and problem in read.problem


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    read = read_cell(tmp_path / "missing.json")
    assert read.doc is None and read.problem is not None
    assert "unreadable" in read.problem


def test_load_refuses_a_directory_without_cells(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="not a torchscale results directory"):
        torchscale.results.load(tmp_path)
    shutil.copytree(V1_DIR, tmp_path / "v1_fixture")
    shutil.copytree(V1_DIR, tmp_path / "second")
    # the experiments by their folders' names, never the 'cells' folder inside each
    with pytest.raises(ResultsError, match=r"holds experiment\(s\) second, v1_fixture: pass one"):
        torchscale.results.load(tmp_path)


def test_a_result_rewritten_by_the_store_reads_back_as_it_was(tmp_path: Path) -> None:
    """The store writes the version it reads: a cell written back loads unchanged, and the
    schema_version column says the current version."""
    exp = tmp_path / "exp"
    shutil.copytree(V1_DIR, exp)
    store = ResultStore(exp)
    current = torchscale.results.load(V1_DIR).result(TINY_W1)
    store.write_cell(current)
    experiment = torchscale.results.load(exp)
    assert experiment.result(TINY_W1) == current
    versions = experiment.cells.set_index("cell_id")["schema_version"]
    assert versions[TINY_W1] == versions[TINY_W2] == RESULT_SCHEMA_VERSION
    on_disk = json.loads(store.cell_path(TINY_W1).read_text(encoding="utf-8"))
    assert on_disk["schema_version"] == RESULT_SCHEMA_VERSION


@pytest.mark.slow  # starts a child process
def test_results_package_does_not_import_pandas_for_the_worker() -> None:
    """Ranks import results.schema to write results; they must not pay for pandas."""
    import subprocess
    import sys

    code = (
        "import sys, torchscale.contracts.schema.cell_result, torchscale.offline.results.store; "
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def test_what_a_rank_imports_to_write_results_reaches_no_pandas_as_the_source_reads() -> None:
    """The same, read from the source (tests/project/test_torch_free.py): what the schema and
    the store run when imported never imports pandas, directly or through another module."""
    modules = ["torchscale.contracts.schema.cell_result", "torchscale.offline.results.store"]
    graph = import_graph(modules)
    assert {m: import_chain(graph, m, "pandas") for m in modules} == dict.fromkeys(modules)


# ------------------------------------------------------------------- resume of stored results


def test_the_v1_config_plans_new_cells_because_they_train_differently_now() -> None:
    """The 0.1.0 config trains differently today (no DDP wrapper at world size 1, fused
    AdamW on CPU, the loss named): its cells get new ids, and --resume finds no stored result of
    their definitions, so it reruns them instead of passing a 0.1.0 measurement off as
    today's. The converted files stay readable (above)."""
    config = load_config(V1_CONFIG)
    plan = build_plan(config, Machine(gpu_count=0, cpu_cores=2))
    assert not {p.cell.id for p in plan} & {TINY_W1, TINY_W2, CRASH_W2}
    store = ResultStore(V1_DIR)
    assert all(store.finished_ok(p.cell.id, p.cell.definition_sha256) is None for p in plan)
    assert all('"workload_revision":' in p.definition for p in plan)


def _as_todays_cell(exp: Path, old_id: str, planned: PlannedCell) -> str:
    """Rewrite a stored result file as if it had been measured for today's definition of the
    same cell (its id and hash), every figure left as stored."""
    path = exp / "cells" / f"{old_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cell"]["id"] = planned.cell.id
    data["cell"]["definition_sha256"] = planned.cell.definition_sha256
    path.unlink()
    (exp / "cells" / f"{planned.cell.id}.json").write_text(json.dumps(data), encoding="utf-8")
    return planned.cell.id


def test_resume_reuses_stored_results(tmp_path: Path) -> None:
    """--resume over a directory whose results carry today's definitions: the ok cells are
    reused as they are (no launch, file untouched); summary.csv is rewritten in the current
    columns."""
    out = tmp_path / "results"
    exp = out / "v1_fixture"
    shutil.copytree(V1_DIR, exp)
    (exp / "cells" / f"{CRASH_W2}.json").unlink()  # keep the rerun set to ok cells only
    config = tmp_path / "v1.yaml"
    text = V1_CONFIG.read_text(encoding="utf-8").replace(
        '  - name: "tests.fault_models:crash"\n    options: {on_rank: 1}\n', ""
    )
    config.write_text(text, encoding="utf-8")
    planned = {
        p.cell.world_size: p
        for p in build_plan(
            load_config(config, ["launcher.omp_num_threads=1"]),
            Machine(gpu_count=0, cpu_cores=2),
        )
    }
    ids = {_as_todays_cell(exp, TINY_W1, planned[1]), _as_todays_cell(exp, TINY_W2, planned[2])}
    before = {p.name: p.read_bytes() for p in (exp / "cells").glob("*.json")}
    result = CliRunner().invoke(
        app,
        [
            "benchmark",
            *("-c", str(config), "-o", str(out), "--resume"),
            *("--set", "launcher.omp_num_threads=1"),  # as resolved on the 2-core machine
        ],
    )
    assert result.exit_code == 0, result.output
    text_out = " ".join(result.output.split())
    # each cell's row in the live table, with the note that it was not rerun
    rows = [line.split()[:3] for line in result.output.splitlines()]
    assert ["tiny-mlp", "8", "1"] in rows and ["tiny-mlp", "8", "2"] in rows
    assert text_out.count("ok in a previous run (--resume), not rerun") == 2
    assert "Running" not in text_out
    assert not (exp / "logs").exists() or not any((exp / "logs").iterdir())
    after = {p.name: p.read_bytes() for p in (exp / "cells").glob("*.json")}
    assert after == before  # nothing rewritten
    summary = pd.read_csv(exp / "summary.csv")
    assert list(summary.columns) == COLUMNS
    assert set(summary["cell_id"]) == ids
    assert (summary["status"] == "ok").all()


def test_resume_does_not_reuse_a_result_of_another_definition(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    (tmp_path / "cells").mkdir()
    shutil.copy(V1_DIR / "cells" / f"{TINY_W1}.json", store.cell_path(TINY_W1))
    cell = raw(TINY_W1)["cell"]
    assert isinstance(cell, dict)
    sha = cell["definition_sha256"]
    assert isinstance(sha, str)
    assert store.finished_ok(TINY_W1, sha) is not None
    assert store.finished_ok(TINY_W1, "0" * 64) is None
