"""`torchscale.results.load` and schema evolution: every version ever written reads into the
current schema and pandas, a newer version is refused in one line, and --resume still trusts a
version-1 result whose definition hash matches.

tests/fixtures/results_v1/ is a real results directory written by torchscale 0.1.0 (result
schema 1) from tests/fixtures/results_v1/v1.yaml: tiny-mlp at world sizes 1 and 2 (ok), the
crash plug-in (ok at world 1, failed at world 2) and one skipped cell (device cuda, no GPU).

tests/fixtures/results_v2/ is a real results directory written at result schema 2 (the tree of
commit 7530faa) from tests/fixtures/results_v2/v2.yaml: tiny-mlp at world sizes 1 and 2 under
DDP and FSDP. Version 2's comm_overhead pooled the no_sync step over ranks (load imbalance and
communication together): the upgrade moves it to sync_overhead.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import torchscale.results
from torchscale.contracts.cell import Status
from torchscale.contracts.errors import ResultsError
from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION, CellResult
from torchscale.contracts.wording import verdicts as verdict_words
from torchscale.contracts.wording.unavailable import why
from torchscale.interfaces.cli.app import app
from torchscale.offline.analysis.uncertainty import median_of_repeats
from torchscale.offline.results.frame import COLUMNS
from torchscale.offline.results.split_figures import SplitFigures, split_figures
from torchscale.offline.results.store import ResultStore
from torchscale.offline.results.upgrades.edge_steps import EDGE_NOTE
from torchscale.offline.results.upgrades.point_figures import is_point_figures
from torchscale.offline.results.versions import (
    V2_COMM_OVERHEAD,
    V2_STRAGGLER,
    parse_cell_result,
    read_cell_result,
    upgrade_v1,
    upgrade_v2,
    upgrade_v3,
    upgrade_v4,
    upgrade_v5,
    upgrade_v6,
    upgrade_v7,
    upgrade_v8,
    upgrade_v9,
    upgrade_v10,
    upgrade_v11,
    upgrade_v12,
    upgrade_v13,
    upgrade_v14,
    upgrade_v15,
    upgrade_v16,
    upgrade_v17,
    upgrade_v18,
    upgrade_v19,
)
from torchscale.orchestration.config.loader import load_config
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import PlannedCell

FIXTURES = Path(__file__).parents[1] / "fixtures" / "results_v1"
V1_DIR = FIXTURES / "v1_fixture"
V1_CONFIG = FIXTURES / "v1.yaml"
TINY_W1 = "tiny-mlp__b8__w1__fp32__ddp__a654a748"
TINY_W2 = "tiny-mlp__b8__w2__fp32__ddp__cb115c3f"
CRASH_W1 = "tests.fault_models_crash__b8__w1__fp32__ddp__4d78d128"
CRASH_W2 = "tests.fault_models_crash__b8__w2__fp32__ddp__da59d299"
SKIPPED = "tiny-mlp__b8__w1__fp32__ddp__f95bc20a"
V2_DIR = Path(__file__).parents[1] / "fixtures" / "results_v2" / "v2_fixture"
V2_DDP_W1 = "tiny-mlp__b8__w1__fp32__ddp__24c2df7e"
V2_DDP_W2 = "tiny-mlp__b8__w2__fp32__ddp__982c8c77"
V2_FSDP_W2 = "tiny-mlp__b8__w2__fp32__fsdp__055245f5"


def raw(cell_id: str) -> dict[str, object]:
    data = json.loads((V1_DIR / "cells" / f"{cell_id}.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


# ------------------------------------------------------------------------ the v1 fixture


def test_fixture_is_really_version_1() -> None:
    versions = {raw(p.stem)["schema_version"] for p in (V1_DIR / "cells").glob("*.json")}
    assert versions == {1}
    assert RESULT_SCHEMA_VERSION > 1


def test_load_reads_every_v1_cell() -> None:
    experiment = torchscale.results.load(V1_DIR)
    assert experiment.skipped == []
    assert experiment.name == "v1_fixture"
    cells = experiment.cells.set_index("cell_id")
    assert set(cells.index) == {TINY_W1, TINY_W2, CRASH_W1, CRASH_W2, SKIPPED}
    assert (cells["schema_version"] == 1).all()
    assert list(experiment.cells.columns) == [*COLUMNS, "schema_version"]
    assert cells.loc[TINY_W1, "status"] == "ok"
    assert cells.loc[CRASH_W2, "status"] == "failed"
    assert cells.loc[SKIPPED, "status"] == "skipped"
    assert "no CUDA GPU" in cells.loc[SKIPPED, "error"]


def _respread(throughput: dict[str, Any]) -> dict[str, Any]:
    """A stored throughput as read: its figures as measured, its spread (stored as the range
    over the median) the farthest repeat from their median, re-derived from its repeats."""
    repeats = throughput["repeats"]
    middle = statistics.median(repeats)
    assert throughput["spread"] == pytest.approx((max(repeats) - min(repeats)) / middle)
    return throughput | {"spread": max(abs(v / middle - 1) for v in repeats)}


def test_v1_figures_survive_the_upgrade_unchanged() -> None:
    experiment = torchscale.results.load(V1_DIR)
    old = raw(TINY_W2)
    new = experiment.result(TINY_W2)
    assert new.cell.id == old["cell_id"]
    assert new.cell.definition_sha256 == old["definition_sha256"]
    assert new.cell.label == old["model_label"]
    assert new.cell.nodes == 1
    assert new.throughput is not None
    assert new.throughput.model_dump() == _respread(old["throughput"])
    assert new.step_time is not None  # read without each window's first step (edge_steps)
    assert new.step_time.count == old["step_time"]["count"] - 2 * 2  # 2 ranks x 2 windows
    assert new.unavailable["step_time"] == EDGE_NOTE
    memory = old["memory"]
    assert isinstance(memory, dict)
    assert new.memory is not None
    assert new.memory.non_static_peak_bytes == memory["activation_bytes"]
    assert new.memory.peak_rss_bytes == memory["peak_rss_bytes"]
    row = experiment.cells.set_index("cell_id").loc[TINY_W2]
    assert row["samples_per_s"] == pytest.approx(new.throughput.samples_per_s)
    assert row["world_size"] == 2


def test_v1_error_becomes_the_typed_error() -> None:
    failed = torchscale.results.load(V1_DIR).result(CRASH_W2)
    old = raw(CRASH_W2)["error"]
    assert isinstance(old, dict)
    assert failed.status is Status.FAILED
    assert failed.error is not None
    assert failed.error.reason == old["reason"]
    assert failed.error.root_cause_rank == old["root_cause_rank"] == 1
    assert failed.error.exception == old["exception"]
    assert failed.error.log_tail == old["log_tail"]


def test_steps_and_ranks_tables() -> None:
    experiment = torchscale.results.load(V1_DIR)
    steps = experiment.steps
    phases = ["data_s", "forward_s", "backward_s", "grad_sync_wait_s", "optimizer_s"]
    phases += ["cpu_wait_s", "cpu_time_s"]  # not phases: the thread's wait for and time on a CPU
    phases += ["comm_hold_s", "comm_hold_backward_s"]  # nor these: a DDP comm hook's hold
    assert list(steps.columns) == ["cell_id", "rank", "window", "repeat", "step", "time_s", *phases]
    assert steps[phases].isna().all().all()  # v1 step files hold no phase times or CPU clocks
    w2 = steps[steps["cell_id"] == TINY_W2]
    # 2 ranks x 2 repeats x 5 steps in sync windows, 2 ranks x 5 steps under no_sync, each
    # window less its first step (it followed the window's edge work)
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


# ------------------------------------------------------------------------ the v2 fixture


def raw_v2(cell_id: str) -> dict[str, Any]:
    data = json.loads((V2_DIR / "cells" / f"{cell_id}.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_v2_fixture_is_really_version_2() -> None:
    versions = {raw_v2(p.stem)["schema_version"] for p in (V2_DIR / "cells").glob("*.json")}
    assert versions == {2}
    assert RESULT_SCHEMA_VERSION > 2


def test_load_reads_every_v2_cell() -> None:
    experiment = torchscale.results.load(V2_DIR)
    assert experiment.skipped == []
    cells = experiment.cells.set_index("cell_id")
    assert len(cells) == 4
    assert (cells["schema_version"] == 2).all()
    assert (cells["status"] == "ok").all()
    assert list(experiment.cells.columns) == [*COLUMNS, "schema_version"]
    steps = experiment.steps
    assert len(steps[steps["cell_id"] == V2_DDP_W2]) == 2 * 2 * 4 + 2 * 4  # less edge steps


def test_v2_comm_overhead_becomes_sync_overhead() -> None:
    """Version 2's comm_overhead mixed load imbalance with communication: it keeps its value
    under the name that says so, and comm_overhead (now: exposed communication only) is null
    with the reason. The v2 straggler rank (highest synchronised median: noise) is dropped."""
    experiment = torchscale.results.load(V2_DIR)
    old = raw_v2(V2_DDP_W2)
    new = experiment.result(V2_DDP_W2)
    comm = split_figures(new)
    assert comm.sync_overhead == old["communication"]["comm_overhead"]
    assert comm.no_sync_step_s == old["communication"]["step_time_no_sync_s"]
    assert comm.comm_overhead is None and comm.load_imbalance is None
    assert new.unavailable["comm_overhead"] == V2_COMM_OVERHEAD
    assert "sync_overhead" in str(why(new.unavailable["comm_overhead"]))
    assert old["straggler_rank"] is not None
    assert new.diagnosis is not None and new.diagnosis.straggler is None
    assert new.unavailable["straggler"] == V2_STRAGGLER
    assert new.ranks[0].phases is None and new.ranks[0].compute_time is None
    assert "no per-step phase timing" in str(why(new.unavailable["phases"]))
    row = experiment.cells.set_index("cell_id").loc[V2_DDP_W2]
    assert row["sync_overhead"] == pytest.approx(old["communication"]["comm_overhead"])
    assert pd.isna(row["comm_overhead"])
    assert pd.isna(row["straggler_rank"])
    # everything else as measured, but the step times: without each window's first step
    assert new.throughput is not None
    assert new.throughput.model_dump() == _respread(old["throughput"])
    assert new.step_time is not None
    assert new.step_time.count == old["step_time"]["count"] - 2 * 2


@pytest.mark.parametrize("cell_id", [V2_DDP_W1, V2_FSDP_W2])
def test_v2_unmeasured_comm_keeps_its_reason(cell_id: str) -> None:
    old = raw_v2(cell_id)
    new = torchscale.results.load(V2_DIR).result(cell_id)
    assert split_figures(new) == SplitFigures()
    assert why(new.unavailable["comm_overhead"]) == old["unavailable"]["comm_overhead"]
    assert why(new.unavailable["sync_overhead"]) == old["unavailable"]["comm_overhead"]


def test_upgrade_v2_does_not_touch_its_input() -> None:
    data = raw_v2(V2_DDP_W2)
    before = json.dumps(data, sort_keys=True)
    upgraded = upgrade_v2(data)
    assert json.dumps(data, sort_keys=True) == before
    assert upgraded["schema_version"] == 3
    upgraded = upgrade_v6(upgrade_v5(upgrade_v4(upgrade_v3(upgraded))))
    upgraded = upgrade_v10(upgrade_v9(upgrade_v8(upgrade_v7(upgraded))))
    upgraded = upgrade_v14(upgrade_v13(upgrade_v12(upgrade_v11(upgraded))))
    upgraded = upgrade_v18(upgrade_v17(upgrade_v16(upgrade_v15(upgraded))))
    CellResult.model_validate(upgrade_v19(upgraded))


def test_v1_upgrades_through_v2_to_the_current_version() -> None:
    new = torchscale.results.load(V1_DIR).result(TINY_W2)
    old = raw(TINY_W2)["communication"]
    assert isinstance(old, dict)
    assert new.schema_version == RESULT_SCHEMA_VERSION
    assert split_figures(new).sync_overhead == old["comm_overhead"]
    assert split_figures(new).comm_overhead is None


# ------------------------------------------------------------------ versions and bad files


def test_newer_version_is_skipped_with_one_line(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    shutil.copytree(V1_DIR, exp)
    future = raw(TINY_W1) | {"schema_version": RESULT_SCHEMA_VERSION + 1}
    (exp / "cells" / f"{TINY_W1}.json").write_text(json.dumps(future), encoding="utf-8")
    (exp / "cells" / "torn.json").write_text('{"kind": "torchscale.cell", "sche', "utf-8")
    experiment = torchscale.results.load(exp)
    reasons = {path.name: reason for path, reason in experiment.skipped}
    assert f"schema version {RESULT_SCHEMA_VERSION + 1} is newer" in reasons[f"{TINY_W1}.json"]
    assert "upgrade torchscale" in reasons[f"{TINY_W1}.json"]
    assert "not valid JSON" in reasons["torn.json"]
    assert all("\n" not in reason for reason in reasons.values())
    assert TINY_W1 not in set(experiment.cells["cell_id"])
    assert TINY_W2 in set(experiment.cells["cell_id"])


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "not a torchscale cell result"),
        ({"kind": "other"}, "not a torchscale cell result"),
        ({"kind": "torchscale.cell", "schema_version": "1"}, "bad schema_version"),
        ({"kind": "torchscale.cell", "schema_version": 0}, "bad schema_version"),
        ({"kind": "torchscale.cell", "schema_version": True}, "bad schema_version"),
        ({"kind": "torchscale.cell", "schema_version": 1}, "invalid version 1 result"),
        ({"kind": "torchscale.cell", "schema_version": 2, "status": "ok"}, "invalid version 2"),
    ],
)
def test_bad_result_data_is_a_problem_not_a_crash(data: object, problem: str) -> None:
    result, _, reason = parse_cell_result(data)
    assert result is None
    assert reason is not None and problem in reason


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    read = read_cell_result(tmp_path / "missing.json")
    assert read.result is None and read.problem is not None
    assert "unreadable" in read.problem


def test_upgrade_v1_does_not_touch_its_input() -> None:
    data = raw(TINY_W2)
    before = json.dumps(data, sort_keys=True)
    upgraded = upgrade_v1(data)
    assert json.dumps(data, sort_keys=True) == before
    assert upgraded["schema_version"] == 2
    upgraded = upgrade_v6(upgrade_v5(upgrade_v4(upgrade_v3(upgrade_v2(upgraded)))))
    upgraded = upgrade_v10(upgrade_v9(upgrade_v8(upgrade_v7(upgraded))))
    upgraded = upgrade_v14(upgrade_v13(upgrade_v12(upgrade_v11(upgraded))))
    upgraded = upgrade_v18(upgrade_v17(upgrade_v16(upgrade_v15(upgraded))))
    CellResult.model_validate(upgrade_v19(upgraded))


def test_load_refuses_a_directory_without_cells(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="not a torchscale results directory"):
        torchscale.results.load(tmp_path)
    shutil.copytree(V1_DIR, tmp_path / "v1_fixture")
    shutil.copytree(V1_DIR, tmp_path / "second")
    # the experiments by their folders' names, never the 'cells' folder inside each
    with pytest.raises(ResultsError, match=r"holds experiment\(s\) second, v1_fixture: pass one"):
        torchscale.results.load(tmp_path)


def test_load_of_a_current_version_sweep(tmp_path: Path) -> None:
    """Written by this version: schema_version column says so, and the table is the same as
    summary.csv's."""
    exp = tmp_path / "exp"
    shutil.copytree(V1_DIR, exp)
    store = ResultStore(exp)
    current = torchscale.results.load(V1_DIR).result(TINY_W1)
    store.write_cell(current)  # rewritten in the current schema
    experiment = torchscale.results.load(exp)
    versions = experiment.cells.set_index("cell_id")["schema_version"]
    assert versions[TINY_W1] == RESULT_SCHEMA_VERSION
    assert versions[TINY_W2] == 1
    on_disk = json.loads(store.cell_path(TINY_W1).read_text(encoding="utf-8"))
    assert on_disk["schema_version"] == RESULT_SCHEMA_VERSION


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


# ---------------------------------------------------------------------------- resume of v1


def test_the_v1_config_plans_new_cells_because_they_train_differently_now() -> None:
    """The v1 config trains differently today (no DDP wrapper at world size 1, fused
    AdamW on CPU, the loss named): its cells get new ids, and --resume finds no v1 result of
    their definitions, so it reruns them instead of passing a 0.1.0 measurement off as
    today's. The v1 files stay readable (above)."""
    config = load_config(V1_CONFIG)
    plan = build_plan(config, Machine(gpu_count=0, cpu_cores=2))
    assert not {p.cell.id for p in plan} & {TINY_W1, TINY_W2, CRASH_W2}
    store = ResultStore(V1_DIR)
    assert all(store.finished_ok(p.cell.id, p.cell.definition_sha256) is None for p in plan)
    assert all('"workload_revision":' in p.definition for p in plan)


def _as_todays_cell(exp: Path, old_id: str, planned: PlannedCell) -> str:
    """Rewrite a v1 result file as if it had been measured for today's definition of the same
    cell (its id and hash), the schema and every figure left at version 1."""
    path = exp / "cells" / f"{old_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cell_id"] = planned.cell.id
    data["definition_sha256"] = planned.cell.definition_sha256
    path.unlink()
    (exp / "cells" / f"{planned.cell.id}.json").write_text(json.dumps(data), encoding="utf-8")
    return planned.cell.id


def test_resume_reuses_version_1_results(tmp_path: Path) -> None:
    """--resume over a v1 directory whose results carry today's definitions: the ok v1 cells
    are reused as they are (no launch, file untouched); summary.csv is rewritten in the
    current columns."""
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


def test_resume_does_not_reuse_a_v1_result_of_another_definition(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    (tmp_path / "cells").mkdir()
    shutil.copy(V1_DIR / "cells" / f"{TINY_W1}.json", store.cell_path(TINY_W1))
    sha = raw(TINY_W1)["definition_sha256"]
    assert isinstance(sha, str)
    assert store.finished_ok(TINY_W1, sha) is not None
    assert store.finished_ok(TINY_W1, "0" * 64) is None


def test_a_version_5_result_from_a_real_h100_reads_as_the_current_schema() -> None:
    """Written by torchscale 0.7.0 on one H100 (GPT-2 bf16, torch.compile): read through the
    upgrade chain, its figures untouched, the fields schema 6 added empty."""
    path = Path(__file__).parents[1] / "fixtures" / "results_v5" / "h100_gpt2_bf16_compile.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 5
    result, version, problem = parse_cell_result(raw)
    assert problem is None and version == 5 and result is not None
    assert result.schema_version == RESULT_SCHEMA_VERSION
    assert result.parallel is None and result.warmup is None
    assert result.throughput is not None
    assert result.throughput.samples_per_s == raw["throughput"]["samples_per_s"]
    assert result.cell.parallel is None and result.cell.strategy == "ddp"


def test_a_version_6_tp_result_reads_as_the_current_schema() -> None:
    """Written by torchscale 0.8.0 (tiny GPT-2, tp2 on two CPU ranks): its mesh and figures
    untouched, no profiled communication, and the reason it had none kept."""
    path = Path(__file__).parents[1] / "fixtures" / "results_v6" / "cpu_tiny_gpt2_tp2.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 6
    result, version, problem = parse_cell_result(raw)
    assert problem is None and version == 6 and result is not None
    assert result.schema_version == RESULT_SCHEMA_VERSION
    assert result.parallel is not None and result.parallel.profiled_comm is None
    assert result.parallel.mesh_shape == raw["parallel"]["mesh_shape"]
    assert "parallel.tp_comm" in result.unavailable
    assert result.cell.parallel is not None and result.cell.parallel.tp == 2


def test_a_version_7_ddp_result_reads_as_the_current_schema() -> None:
    """Written by torchscale 0.9.0 (tiny-mlp, DDP on two CPU ranks): its point figures kept
    as measured and read as its diagnosis (no interval), the missing step model's reason
    said; its throughput interval in the cells table comes from the recorded repeats by the
    same rule as schema 8's."""
    path = Path(__file__).parents[1] / "fixtures" / "results_v7" / "cpu_tiny_mlp_ddp_w2.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 7
    result, version, problem = parse_cell_result(raw)
    assert problem is None and version == 7 and result is not None
    assert result.schema_version == RESULT_SCHEMA_VERSION
    assert is_point_figures(result.diagnosis) and result.intervals is None
    assert "schema 7 or older" in str(why(result.unavailable["diagnosis"]))
    assert split_figures(result).comm_overhead == raw["communication"]["comm_overhead"]
    from torchscale.offline.results.frame import cells_table

    row = cells_table([result]).iloc[0]
    repeats = raw["throughput"]["repeats"]
    # three repeats: Student t on log throughput (a bootstrap of 3 is only their range)
    expected = median_of_repeats(repeats)
    assert expected.method == (
        "Student t on log throughput, 3 repeats, widened by between-run drift (sd 0.04)"
    )
    assert row["samples_per_s_low"] == pytest.approx(expected.low)
    assert row["samples_per_s_high"] == pytest.approx(expected.high)
    assert 0 < row["samples_per_s_low"] < min(repeats) <= row["samples_per_s"]
    assert row["samples_per_s"] <= max(repeats) < row["samples_per_s_high"]
    # the point share, with no interval
    assert row["exposed_transfer_share"] == pytest.approx(raw["communication"]["comm_overhead"])
    low = row["exposed_transfer_share_low"]
    assert low is None or low != low


def test_a_version_11_result_reads_with_no_cpu_wait() -> None:
    """Written by torchscale 0.10.0 at result schema 11 (commit 908d53d; tiny-mlp, DDP on two
    CPU ranks, tests/fixtures/results_v11/v11.yaml): its straggler verdict untouched, the
    wait for a CPU (schema 12) null, never invented."""
    path = Path(__file__).parents[1] / "fixtures" / "results_v11" / "cpu_tiny_mlp_ddp_w2.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 11
    result, version, problem = parse_cell_result(raw)
    assert problem is None and version == 11 and result is not None
    assert result.schema_version == RESULT_SCHEMA_VERSION
    assert result.diagnosis is not None and result.diagnosis.straggler is not None
    verdict = result.diagnosis.straggler
    assert verdict_words.summary(verdict) == raw["diagnosis"]["straggler"]["summary"]
    assert verdict.host_wait_s is None and verdict.host_bound is None
    assert all(c.name != "CPU wait (host)" for c in result.diagnosis.cross_checks)


def test_a_version_12_result_reads_with_no_straggler_kind() -> None:
    """Written by torchscale at result schema 12 (commit c34b213; tiny-mlp, DDP on two CPU
    ranks, tests/fixtures/results_v12/v12.yaml): its verdict read as written, the kind of a
    straggler null (never invented), and why nobody is named in the rule's words read off the
    verdict's own interval (it reaches 0), as a schema-13 verdict says it."""
    path = Path(__file__).parents[1] / "fixtures" / "results_v12" / "cpu_tiny_mlp_ddp_w2.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 12
    result, version, problem = parse_cell_result(raw)
    assert problem is None and version == 12 and result is not None
    assert result.schema_version == RESULT_SCHEMA_VERSION
    assert result.diagnosis is not None and result.diagnosis.straggler is not None
    verdict = result.diagnosis.straggler
    assert verdict_words.summary(verdict) == raw["diagnosis"]["straggler"]["summary"]
    assert verdict.host_bound == raw["diagnosis"]["straggler"]["host_bound"]
    assert verdict.kind is None and verdict.kind_basis is None
    assert not verdict.named and verdict.gap_s is not None and verdict.gap_s.low is not None
    assert verdict.gap_s.low <= 0 and raw["diagnosis"]["straggler"].get("not_named") is None
    assert verdict_words.why_not(verdict) == "could be noise: its interval reaches 0"


def test_step_records_written_before_the_cpu_time_read_with_it_nan(tmp_path: Path) -> None:
    """The schema-12 fixture's step records carry `cpu_wait_s` but not `cpu_time_s` (the
    thread's time on a CPU came later): `exp.steps` keeps every wait as written and reads the
    time NaN, never invented, and skips nothing."""
    fixture = Path(__file__).parents[1] / "fixtures" / "results_v12"
    raw = json.loads((fixture / "cpu_tiny_mlp_ddp_w2.json").read_text())
    cell_id = raw["cell"]["id"]
    (tmp_path / "cells").mkdir()
    (tmp_path / "steps").mkdir()
    shutil.copy(fixture / "cpu_tiny_mlp_ddp_w2.json", tmp_path / "cells" / f"{cell_id}.json")
    shutil.copy(
        fixture / "cpu_tiny_mlp_ddp_w2.steps.jsonl", tmp_path / "steps" / f"{cell_id}.jsonl"
    )
    experiment = torchscale.results.load(tmp_path)
    assert experiment.skipped == []
    steps = experiment.steps
    assert list(steps.columns[-4:-2]) == ["cpu_wait_s", "cpu_time_s"]
    assert len(steps) > 0 and steps["cpu_wait_s"].notna().all()
    assert steps["cpu_time_s"].isna().all() and steps["cpu_time_s"].dtype == "float64"


def test_a_version_13_result_reads_injected_from_its_delays() -> None:
    """Written at result schema 13 (tests/fixtures/sweep8_v13, a real 8-cell sweep): a named
    straggler's `injected` (schema 14) is read off the result's recorded delays (none here);
    its line reads as before."""
    from torchscale.interfaces.report.diagnosis_text import straggler_text

    cells = Path(__file__).parents[1] / "fixtures" / "sweep8_v13" / "default_scaling" / "cells"
    named = 0
    for path in sorted(cells.glob("*.json")):
        raw = json.loads(path.read_text())
        assert raw["schema_version"] == 13
        result, version, problem = parse_cell_result(raw)
        assert problem is None and version == 13 and result is not None
        verdict = result.diagnosis.straggler if result.diagnosis else None
        if verdict is not None and verdict.named:
            named += 1
            assert verdict.injected is False  # no delay injected: its recorded delays say so
            assert "injected" not in straggler_text(verdict, result.cell.world_size)
    assert named >= 1


def test_an_older_injected_straggler_reads_injected_from_its_delays() -> None:
    """A schema-13 result whose named rank is one its own --inject-delay slowed reads injected
    (the delays are recorded in the result); another named rank reads not injected."""
    from torchscale.interfaces.report.diagnosis_text import straggler_text

    cells = Path(__file__).parents[1] / "fixtures" / "sweep8_v13" / "default_scaling" / "cells"
    raw = next(
        data
        for data in (json.loads(p.read_text()) for p in sorted(cells.glob("*.json")))
        if data.get("diagnosis") and (data["diagnosis"].get("straggler") or {}).get("named")
    )
    rank = raw["diagnosis"]["straggler"]["rank"]
    delayed = raw | {"injected_delays": [{"rank": rank, "phase": "backward", "ms": 20.0}]}
    before = json.dumps(delayed, sort_keys=True)
    result, _, problem = parse_cell_result(delayed)
    assert json.dumps(delayed, sort_keys=True) == before  # the input is not touched
    assert result is not None and result.diagnosis is not None, problem
    verdict = result.diagnosis.straggler
    assert verdict is not None and verdict.injected is True
    assert straggler_text(verdict, 2).endswith("(injected: --inject-delay)")
    other = raw | {"injected_delays": [{"rank": rank + 1, "phase": "backward", "ms": 20.0}]}
    result, _, _ = parse_cell_result(other)
    assert result is not None and result.diagnosis is not None
    assert result.diagnosis.straggler is not None and result.diagnosis.straggler.injected is False
