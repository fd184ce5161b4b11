"""One benchmark, followed call by call from `api.run_benchmark` (benchmarks/benchmark_route.py
on a 1-cell CPU run with the CLI's events): no call runs back up the layers except the
callbacks handed down, and every file of the experiment is written once (the cell's result:
rank 0's part in the launch's log directory, then the host's one file in cells/)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[2] / "benchmarks" / "benchmark_route.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmark_route", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # ~15 s: one torchrun cell
def test_one_benchmark_calls_only_down_and_writes_each_file_once(tmp_path: Path) -> None:
    tool = _tool()
    tracer, writes, root, run = tool.run(tmp_path / "out", cli_events=True)
    assert [r.status.value for r in run.sweep.results] == ["ok"]
    route = tool.route_of(tracer.steps, writes, root)

    assert route.steps and route.modules
    assert [(s.caller, s.callee, s.line) for s in route.real_up] == []
    # the CLI's printer is called back through the events it handed down, and only it
    assert route.callbacks_up
    assert {s.callee for s in route.callbacks_up} == {"torchscale.interfaces.console.benchmark"}

    (result,) = route.result_files
    cell = Path(result).stem
    assert route.writes[result] == 1 and route.writers[result] == {"host atomic"}
    rank_part = f"logs/{cell}/result.json"
    assert route.writes[rank_part] == 1 and route.writers[rank_part] == {"rank 0 atomic"}
    assert route.writes[f"steps/{cell}.jsonl"] == 1  # moved in, not rewritten
    # the sweep's state is a progress file: "running" as it starts, "complete" as it ends
    assert route.writes.pop("sweep.json") == 2
    assert max(route.writes.values()) == 1, route.writes
