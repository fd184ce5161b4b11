"""One compile cache per experiment: every compiled launch of an experiment (sweep
cells, max-batch probes, profiles, the dry run's commands, Kubernetes pods) points inductor and
Triton at <experiment>/compile_cache/, a user's own setting wins, eager cells get nothing; and
what compile cost each cell is shown in its terminal lines and the report's cell table."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.interfaces.console.cells import cell_lines
from torchscale.interfaces.console.dry_run import plan_lines
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Table
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.launch import process
from torchscale.orchestration.launch.compile_cache import compile_cache_env, inductor_default_dir
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.memory.max_batch_runs import probe_store, search_groups
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import Plan, PlannedCell
from torchscale.orchestration.schedulers.kubernetes.manifests import PodPaths, worker_command
from torchscale.orchestration.sweep import run_cell

CPU_BOX = Machine(gpu_count=0, cpu_cores=2)
INDUCTOR = "TORCHINDUCTOR_CACHE_DIR"
TRITON = "TRITON_CACHE_DIR"


def config(compile_: bool = True, env: Mapping[str, str] | None = None) -> BenchConfig:
    return BenchConfig.model_validate(
        {
            "experiment_name": "cache",
            "models": ["tiny-mlp"],
            "batch_sizes": [4],
            "gpu_counts": [1],
            "device": "cpu",
            "training": {"compile": compile_},
            "launcher": {"env": dict(env or {})},
        }
    )


def planned(compile_: bool = True, env: Mapping[str, str] | None = None) -> PlannedCell:
    (cell,) = build_plan(config(compile_, env), CPU_BOX).cells
    return cell


def launched(cell: PlannedCell, store: ResultStore, base_env: Mapping[str, str]) -> LaunchCommand:
    """The command `run_cell` builds for `cell` (what it set is recorded in the result's
    launch.env): the command builder is the sweep's own; the process it starts exits at once."""
    seen: list[LaunchCommand] = []

    def command_for(
        shared: PlannedCell, spec: Path, log_dir: Path, env: Mapping[str, str]
    ) -> LaunchCommand:
        real = shared.command(spec, log_dir, env)
        seen.append(real)
        quick = [sys.executable, "-c", "pass"]  # no torchrun: only the environment matters
        return LaunchCommand(
            quick, real.env, real.env_overrides, 1, 1, real.error_file, real.log_dir
        )

    result = run_cell(cell, store, base_env, command_for=command_for)
    (command,) = seen
    assert result.launch is not None and result.launch["env"] == command.env_overrides
    return command


def launches_in_process(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, str]]:
    """Every launch ends at once, in-process: the one call that starts its process
    (launch.process.run_logged) leaves an empty log and exit 0. The environments launched."""
    envs: list[Mapping[str, str]] = []

    def run_logged(
        argv: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float, **_: Any
    ) -> ProcessOutcome:
        envs.append(dict(env))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("", encoding="utf-8")
        return ProcessOutcome(0, False, 0.0, log_path)

    monkeypatch.setattr(process, "run_logged", run_logged)
    return envs


def test_the_variables_point_at_the_directory_unless_the_user_set_them() -> None:
    where = PurePosixPath("/r/exp/compile_cache")
    assert compile_cache_env(where, {}) == {
        INDUCTOR: "/r/exp/compile_cache",
        TRITON: "/r/exp/compile_cache/triton",
    }
    # the user's inductor cache: Triton's stays where inductor puts it, under theirs
    assert compile_cache_env(where, {INDUCTOR: "/mine"}) == {}
    assert compile_cache_env(where, {TRITON: "/mine"}) == {INDUCTOR: "/r/exp/compile_cache"}


def test_inductors_own_default_in_the_environment_is_not_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inductor writes its default into os.environ of any process that compiled (or merely
    asked for its cache directory): a notebook that ran torch.compile before the API, or a test
    session. Inherited, that value is inductor's, not the user's: the experiment's cache wins."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir

    assert inductor_default_dir() == default_cache_dir()  # our copy of torch's rule
    monkeypatch.delenv(INDUCTOR, raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # inductor makes the directory
    cache_dir()  # what any compile does first: writes its default into os.environ
    inherited = dict(os.environ)
    assert inherited[INDUCTOR] == default_cache_dir()
    where = PurePosixPath("/r/exp/compile_cache")
    assert compile_cache_env(where, inherited)[INDUCTOR] == "/r/exp/compile_cache"


@pytest.mark.slow  # starts a launched command
def test_a_compiled_cell_of_the_sweep_uses_its_experiments_cache(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "exp")
    env = launched(planned(), store, {"PATH": "/usr/bin"}).env_overrides
    assert env[INDUCTOR] == str(tmp_path / "exp" / "compile_cache")
    assert env[TRITON] == str(tmp_path / "exp" / "compile_cache" / "triton")
    # the resume of the experiment launches with the same directory
    again = launched(planned(), ResultStore(tmp_path / "exp"), {}).env_overrides
    assert {k: again[k] for k in (INDUCTOR, TRITON)} == {k: env[k] for k in (INDUCTOR, TRITON)}


def test_a_compiled_cells_launch_points_at_its_experiments_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above, the launches ended in-process: the environment is built here."""
    envs = launches_in_process(monkeypatch)
    test_a_compiled_cell_of_the_sweep_uses_its_experiments_cache(tmp_path)
    assert [env[INDUCTOR] for env in envs] == [str(tmp_path / "exp" / "compile_cache")] * 2


@pytest.mark.slow  # starts a launched command
def test_an_eager_cell_gets_no_cache_variables(tmp_path: Path) -> None:
    command = launched(planned(compile_=False), ResultStore(tmp_path / "exp"), {})
    assert INDUCTOR not in command.env and TRITON not in command.env


def test_an_eager_cells_launch_gets_no_cache_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    envs = launches_in_process(monkeypatch)
    test_an_eager_cell_gets_no_cache_variables(tmp_path)
    assert len(envs) == 1 and not {INDUCTOR, TRITON} & set(envs[0])


@pytest.mark.parametrize("where", ["inherited", "launcher.env"])
@pytest.mark.slow  # starts a launched command
def test_a_users_own_cache_wins(tmp_path: Path, where: str) -> None:
    mine = {INDUCTOR: str(tmp_path / "mine")}
    cell = planned(env=mine if where == "launcher.env" else None)
    store = ResultStore(tmp_path / "exp")
    command = launched(cell, store, mine if where == "inherited" else {})
    assert command.env[INDUCTOR] == mine[INDUCTOR]
    assert TRITON not in command.env  # Triton's cache stays under the user's inductor cache


@pytest.mark.parametrize("where", ["inherited", "launcher.env"])
def test_a_users_own_cache_wins_in_the_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    envs = launches_in_process(monkeypatch)
    test_a_users_own_cache_wins(tmp_path, where)
    assert [env[INDUCTOR] for env in envs] == [str(tmp_path / "mine")]


@pytest.mark.slow  # starts a launched command
def test_max_batch_probes_share_the_sweeps_cache(tmp_path: Path) -> None:
    cell = planned()
    store = ResultStore(tmp_path / "exp")
    (group,) = search_groups(Plan.of(config(), [cell]))
    probes = probe_store(store, group)
    assert probes.root != store.root
    assert probes.compile_cache_dir == store.compile_cache_dir
    command = launched(cell, probes, {})
    assert command.env[INDUCTOR] == str(tmp_path / "exp" / "compile_cache")


def test_max_batch_probes_launch_with_the_sweeps_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    envs = launches_in_process(monkeypatch)
    test_max_batch_probes_share_the_sweeps_cache(tmp_path)
    assert [env[INDUCTOR] for env in envs] == [str(tmp_path / "exp" / "compile_cache")]


@pytest.mark.slow  # starts a launched command
def test_a_profiled_run_compiles_into_its_experiments_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchscale.orchestration.launch.attempt import run_attempt
    from torchscale.orchestration.profiling import session

    def quick(command: LaunchCommand, *args: object) -> object:  # no torchrun, same env
        return run_attempt(replace(command, argv=[sys.executable, "-c", "pass"]), *args)

    monkeypatch.setattr(session, "run_attempt", quick)
    store = ResultStore(tmp_path / "exp")
    profiled = session.launch_profiled(planned(), store, {}, session.ProfileRequest())
    assert profiled.result.launch is not None
    assert profiled.result.launch["env"][INDUCTOR] == str(tmp_path / "exp" / "compile_cache")


def test_a_profiled_launch_compiles_into_its_experiments_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    envs = launches_in_process(monkeypatch)
    test_a_profiled_run_compiles_into_its_experiments_cache(tmp_path, monkeypatch)
    assert [env[INDUCTOR] for env in envs] == [str(tmp_path / "exp" / "compile_cache")]


def test_the_dry_run_shows_the_cache_a_compiled_cell_will_use(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "cache")
    text = "\n".join(line.text for line in plan_lines(build_plan(config(), CPU_BOX), store, {}))
    assert f"{INDUCTOR}={tmp_path / 'cache' / 'compile_cache'}" in text


def test_kubernetes_pods_compile_into_the_experiment_on_the_claim() -> None:
    pods = ResultLayout(PurePosixPath("/results") / "cache")
    _, env = worker_command(planned(), PodPaths(pods, "cell"))
    assert env[INDUCTOR] == "/results/cache/compile_cache"
    assert env[TRITON] == "/results/cache/compile_cache/triton"


# ------------------------------------------------------------------ compile seconds shown


def compiled_result(compile_s: float | None, wall_s: float | None = 61.2) -> CellResult:
    from tests.interfaces.test_render import ok_result

    result = ok_result()
    data = json.loads(result.model_dump_json())
    data["warmup"] = {"step_s": [30.0, 0.01], "compile_s": compile_s}
    data["wall_s"] = wall_s
    return CellResult.model_validate(data)


def test_the_cell_lines_say_what_compile_cost_the_cell() -> None:
    texts = [line.text for line in cell_lines(compiled_result(25.34))]
    assert (
        "> [INFO] Compile: 25.3 s of the cell's 61.2 s, in the warm-up (outside the measured "
        "windows)"
    ) in texts
    eager = [line.text for line in cell_lines(compiled_result(None))]
    assert not [t for t in eager if "Compile" in t]


def _latency_table(tmp_path: Path, results: list[CellResult]) -> Table:
    store = ResultStore(tmp_path / "exp")
    for result in results:
        store.write_cell(result)
    report = build_report(
        read_sources(tmp_path), ReportOptions(generated_at="2026-01-01T00:00:00Z")
    )
    (table,) = [
        b
        for s in report.sections
        for b in s.blocks
        if isinstance(b, Table) and b.id == "latency-stats"
    ]
    return table


def test_the_reports_cell_table_has_a_compile_column_when_a_cell_compiled(
    tmp_path: Path,
) -> None:
    eager = compiled_result(None)
    compiled = compiled_result(25.34).model_copy(
        update={"cell": eager.cell.model_copy(update={"id": "d", "batch_size": 16})}
    )
    table = _latency_table(tmp_path / "both", [eager, compiled])
    assert table.columns[-1].key == "compile_s" and table.columns[-1].format == "seconds"
    assert sorted((r["compile_s"] is None) for r in table.rows) == [False, True]
    assert "compile cache" in (table.note or "")
    # no compiled cell: no column (and the rows as before)
    table = _latency_table(tmp_path / "eager", [eager])
    assert "compile_s" not in [c.key for c in table.columns]
    assert all("compile_s" not in r for r in table.rows)


# ------------------------------------------------------------------ reuse, for real


def _cache_files(directory: Path) -> dict[str, int]:
    """Every file of a compile cache with its modification time."""
    return {
        str(path.relative_to(directory)): path.stat().st_mtime_ns
        for path in directory.rglob("*")
        if path.is_file()
    }


@pytest.mark.slow
def test_a_rerun_of_a_compiled_cell_loads_what_the_first_run_compiled(tmp_path: Path) -> None:
    """A compiled tiny cell run twice into one experiment (a rerun, or a resume that runs it
    again): the first compiles into <experiment>/compile_cache/, the second rewrites none of
    it (inductor loaded every graph and kernel; a compile would have written them again).
    The seconds saved are a benchmark's (docs/methodology.md), never asserted here."""
    from torchscale.interfaces.api.benchmark import run_benchmark

    cell = config().model_copy(
        update={"measurement": config().measurement.model_copy(update={"warmup_steps": 2})}
    )
    first = run_benchmark(cell, tmp_path)
    cache = first.store.compile_cache_dir
    (result,) = first.sweep.results
    assert result.status == "ok", result.error
    assert result.warmup is not None and result.warmup.compile_s is not None
    compiled = _cache_files(cache)
    assert any(name.startswith("fxgraph/") for name in compiled), sorted(compiled)
    second = run_benchmark(cell, tmp_path)
    (again,) = second.sweep.results
    assert again.status == "ok", again.error
    assert _cache_files(cache) == compiled
