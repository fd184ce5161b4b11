"""A sweep's state file: `sweep.json` lists every planned cell and says how far
the sweep got, so a sweep stopped by a signal, an error or --fail-fast never reads as complete.
The launch is replaced (no torchrun): what is tested is what the sweep writes around it."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from torchscale.contracts.cell import Status
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.signals import Terminated
from torchscale.offline.results.documents import read_sweep_state
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import Plan

TINY = {
    "models": ["tiny-mlp"],
    "batch_sizes": [4, 8],
    "gpu_counts": [1, 2],
    "device": "cpu",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
}


def _plan(tmp_path: Path) -> Plan:
    from torchscale.orchestration.config.loader import load_config

    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({"experiment_name": "state", **TINY}), encoding="utf-8")
    return build_plan(load_config(path, []), Machine(gpu_count=0, cpu_cores=2))


def _launches(store: ResultStore, stop_at: int | None, stop: BaseException | None = None) -> Any:
    """A launch that writes an ok result, or raises `stop` at launch number `stop_at`."""
    count = {"n": 0}

    def launch(command: Any, timeout_s: float, finished: Any = None) -> ProcessOutcome:
        count["n"] += 1
        if stop_at is not None and count["n"] == stop_at:
            raise stop or Terminated(signal.SIGTERM)
        spec = json.loads(Path(command.argv[command.argv.index("--spec") + 1]).read_text())
        result_path = Path(spec["result_path"])
        from torchscale.contracts.cell import CellIdentity

        cell = CellIdentity.model_validate(spec["cell"])
        result_path.write_text(CellResult(cell=cell, status=Status.OK).model_dump_json())
        return ProcessOutcome(0, False, 1.0, command.log_path)

    return launch


def _state(store: ResultStore) -> Any:
    read = read_sweep_state(store.sweep_state_path)
    assert read.doc is not None, read.problem
    return read.doc


def test_a_stopped_sweep_says_by_what_and_during_which_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchscale.orchestration.launch.attempt as attempt
    import torchscale.orchestration.sweep as sweep

    plan = _plan(tmp_path)
    store = ResultStore(tmp_path / "out")
    monkeypatch.setattr(attempt, "run_launch", _launches(store, stop_at=2))
    with pytest.raises(Terminated):
        sweep.run_sweep(plan, store, {})
    state = _state(store)
    assert state.phase == "stopped" and state.stopped_by == "SIGTERM"
    assert [p.id for p in state.planned] == [c.cell.id for c in plan.cells]
    assert state.during == plan.cells[1].cell.id and state.finished == 1
    assert state.planned[1].label == "tiny-mlp b4 x2 fp32 ddp"


def test_ctrl_c_and_an_error_are_named_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torchscale.orchestration.launch.attempt as attempt
    import torchscale.orchestration.sweep as sweep

    plan = _plan(tmp_path)
    for stop, said in (
        (KeyboardInterrupt(), "Ctrl-C (SIGINT)"),
        (OSError("disk"), "OSError: disk"),
    ):
        store = ResultStore(tmp_path / said.split()[0])
        monkeypatch.setattr(attempt, "run_launch", _launches(store, stop_at=1, stop=stop))
        with pytest.raises(type(stop)):
            sweep.run_sweep(plan, store, {})
        state = _state(store)
        assert (state.phase, state.stopped_by, state.finished) == ("stopped", said, 0)


def test_a_finished_sweep_is_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torchscale.orchestration.launch.attempt as attempt
    import torchscale.orchestration.sweep as sweep

    plan = _plan(tmp_path)
    store = ResultStore(tmp_path / "out")
    monkeypatch.setattr(attempt, "run_launch", _launches(store, stop_at=None))
    sweep.run_sweep(plan, store, {})
    state = _state(store)
    assert (state.phase, state.stopped_by, state.during) == ("complete", None, None)
    assert state.finished == len(plan.cells) == 4


def test_a_dataset_that_fails_stops_the_sweep_in_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dataset is made before any launch: its error is the sweep's stop, never a 'running'
    left behind."""
    import torchscale.orchestration.sweep as sweep

    def no_dataset(data: Any) -> None:
        raise RuntimeError("no dataset under /data")

    monkeypatch.setattr(sweep, "prepare_data", no_dataset)
    store = ResultStore(tmp_path / "out")
    with pytest.raises(RuntimeError):
        sweep.run_sweep(_plan(tmp_path), store, {})
    state = _state(store)
    assert (state.phase, state.stopped_by, state.finished, state.during) == (
        "stopped",
        "RuntimeError: no dataset under /data",
        0,
        None,
    )


def test_a_stop_after_the_last_cell_leaves_it_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchscale.orchestration.launch.attempt as attempt
    import torchscale.orchestration.sweep as sweep

    plan = _plan(tmp_path)
    store = ResultStore(tmp_path / "out")
    monkeypatch.setattr(attempt, "run_launch", _launches(store, stop_at=None))
    done: list[Any] = []

    def on_done(result: Any, reused: bool) -> None:
        done.append(result)
        if len(done) == len(plan.cells):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(plan, store, {}, hooks=sweep.SweepHooks(on_done=on_done))
    assert (_state(store).phase, _state(store).finished) == ("complete", 4)


def test_a_skip_by_design_is_stored_as_a_code_with_its_figures(tmp_path: Path) -> None:
    """sweep.json keeps why the plan skips a cell as a finding, worded when shown."""
    from torchscale.contracts.wording import say
    from torchscale.orchestration.config.loader import parse_config
    from torchscale.orchestration.sweep import planned_cells

    config = parse_config(json.dumps({"experiment_name": "s", **TINY, "device": "cuda"}))
    planned = planned_cells(build_plan(config, Machine(gpu_count=1, cpu_cores=2)))
    skipped = planned[1]
    assert skipped.skip is not None and "skip_reason" not in skipped.model_dump()
    assert (skipped.skip.code, skipped.skip.figures) == (
        "plan.needs_gpus",
        {"have": 1, "source": None, "gpus": 2, "nodes": 1},
    )
    assert say(skipped.skip) == "needs 2 GPUs; this node has 1"
