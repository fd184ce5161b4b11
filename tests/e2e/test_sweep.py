"""`torchscale benchmark` end to end through the CLI (typer's CliRunner, in process), with real
torchrun cells on CPU.

Real launches are few and shared through module-scoped fixtures (7 cells, each ~6-10 s on
2 cores): the healthy sweep (tiny-mlp at world sizes 1 and 2), a fault sweep (a rank that
raises, an OOM, then a healthy cell), a hung cell under --fail-fast (timeout, then a cell that
must not run), and a --resume of the healthy sweep with one result deleted (one cell reruns).
Fault models are the test-only plug-ins in tests/fault_models.py, reached through PYTHONPATH
set in `launcher.env`. Timings on a shared 2-core machine are noise: only sanity is asserted.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest
from typer.testing import CliRunner, Result

from tests.e2e import surfaces
from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION, CellResult
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say, why
from torchscale.contracts.wording.cell_errors import place_line
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.console.live_table import stall_text
from torchscale.interfaces.report.diagnosis_text import straggler_text
from torchscale.offline.results.frame import cells_table
from torchscale.offline.results.split_figures import split_figures
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.loader import load_config
from torchscale.orchestration.launch import process

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN_SCHEMA = Path(__file__).parents[1] / "golden" / "cell_result.schema.json"
REGENERATE = (
    "python -c 'import json; from torchscale.contracts.schema.cell_result import CellResult; "
    "print(json.dumps(CellResult.model_json_schema(), indent=2, sort_keys=True))' "
    "> tests/golden/cell_result.schema.json"
)
TINY_MLP_PARAMETERS = 22_026  # tiny-mlp defaults (32 -> 128 -> 128 -> 10)
FAULT_ENV = {"PYTHONPATH": str(REPO_ROOT)}


def _cuda_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


no_gpu_only = pytest.mark.skipif(_cuda_gpus() > 0, reason="asserts what happens without a GPU")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["benchmark", *map(str, args)])


def flat(text: str) -> str:
    """Output with any line wrapping undone."""
    return " ".join(text.split())


def write_config(path: Path, **data: Any) -> Path:
    """JSON is YAML 1.2: the config file as data, no quoting surprises."""
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def read_cells(exp_dir: Path) -> list[CellResult]:
    return [
        CellResult.model_validate_json(p.read_text(encoding="utf-8"))
        for p in sorted((exp_dir / "cells").glob("*.json"))
    ]


def by_world(results: list[CellResult]) -> dict[int, CellResult]:
    return {r.cell.world_size: r for r in results}


def by_model(results: list[CellResult]) -> dict[str, CellResult]:
    return {r.cell.model: r for r in results}


def processes_mentioning(marker: str, grace_s: float = 5.0) -> list[str]:
    """Command lines of live processes that mention `marker` (a path unique to one sweep),
    after giving processes that are already on their way out up to `grace_s` to go."""
    deadline = time.monotonic() + grace_s
    while True:
        found = _scan_processes(marker)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def _scan_processes(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


@dataclass
class Sweep:
    result: Result
    exp_dir: Path
    config: Path
    leftovers: list[str]

    @property
    def output(self) -> str:
        return self.result.output

    @property
    def cells(self) -> list[CellResult]:
        return read_cells(self.exp_dir)


def run_sweep(tmp: Path, name: str, *flags: str, **config: Any) -> Sweep:
    cfg = write_config(tmp / f"{name}.yaml", experiment_name=name, device="cpu", **config)
    out = tmp / "results"
    result = invoke("-c", cfg, "-o", out, *flags)
    exp_dir = out / name
    return Sweep(result, exp_dir, cfg, processes_mentioning(str(exp_dir)))


MAIN_CONFIG: dict[str, Any] = {
    "models": ["tiny-mlp"],
    "batch_sizes": [8],
    "gpu_counts": [1, 2],
    "measurement": {"warmup_steps": 2, "steps": 5, "repeats": 2},
}
SHORT = {"warmup_steps": 1, "steps": 2, "repeats": 1}


@pytest.fixture(scope="module")
def main_sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """The healthy sweep, run once for real: tiny-mlp, batch 8, world sizes 1 and 2."""
    return run_sweep(tmp_path_factory.mktemp("main"), "sweep", **MAIN_CONFIG)


@pytest.fixture(scope="module")
def fault_sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """A rank that raises, an OOM, then a healthy cell: 2 ranks each, run once."""
    return run_sweep(
        tmp_path_factory.mktemp("faults"),
        "faults",
        models=[
            {"name": "tests.fault_models:crash", "options": {"on_rank": 1}},
            {"name": "tests.fault_models:oom"},
            {"name": "tests.fault_models:healthy"},
        ],
        batch_sizes=[4],
        gpu_counts=[2],
        measurement=SHORT,
        launcher={"env": FAULT_ENV, "cell_timeout_s": 120},
    )


@pytest.fixture(scope="module")
def hang_sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """A hung rank under a 30 s cell timeout with --fail-fast: the healthy cell after it must
    never run. (30 s: a 2-rank cell needs ~8.5 s to reach its first step on an idle 2-core
    machine; the timeout must not fire before rank 1 is in forward, even under load.)"""
    return run_sweep(
        tmp_path_factory.mktemp("hang"),
        "hang",
        "--fail-fast",
        models=[
            {"name": "tests.fault_models:hang", "options": {"on_rank": 1}},
            {"name": "tests.fault_models:healthy"},
        ],
        batch_sizes=[4],
        gpu_counts=[2],
        measurement=SHORT,
        launcher={"env": FAULT_ENV, "cell_timeout_s": HANG_TIMEOUT_S},
    )


HANG_TIMEOUT_S = 30


def line_of(path: Path, text: str) -> int:
    """1-based line of the first line of `path` containing `text`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@dataclass
class Resumed:
    sweep: Sweep
    kept_id: str
    kept_bytes: bytes
    kept_started_at: str | None
    rerun_id: str
    rerun_started_at: str | None
    dry_run: Result  # `--dry-run --resume` just before the resume


@pytest.fixture(scope="module")
def resumed(main_sweep: Sweep, tmp_path_factory: pytest.TempPathFactory) -> Resumed:
    """The healthy sweep's results, copied, with the world-2 result deleted (as if the sweep
    had been interrupted there), then `--resume`d: only that cell runs again."""
    assert main_sweep.result.exit_code == 0, main_sweep.output
    tmp = tmp_path_factory.mktemp("resume")
    exp_dir = tmp / "results" / "sweep"
    shutil.copytree(main_sweep.exp_dir, exp_dir)
    cells = by_world(read_cells(exp_dir))
    kept, lost = cells[1], cells[2]
    store = ResultStore(exp_dir)
    kept_bytes = store.cell_path(kept.cell_id).read_bytes()
    store.cell_path(lost.cell_id).unlink()
    store.steps_path(lost.cell_id).unlink()
    dry_run = invoke("-c", main_sweep.config, "-o", tmp / "results", "--resume", "--dry-run")
    result = invoke("-c", main_sweep.config, "-o", tmp / "results", "--resume")
    sweep = Sweep(result, exp_dir, main_sweep.config, processes_mentioning(str(exp_dir)))
    return Resumed(
        sweep, kept.cell_id, kept_bytes, kept.started_at, lost.cell_id, lost.started_at, dry_run
    )


# ============================================================================ healthy sweep


@pytest.mark.slow  # real torchrun cells
def test_sweep_exits_zero(main_sweep: Sweep) -> None:
    assert main_sweep.result.exit_code == 0, main_sweep.output
    assert main_sweep.leftovers == []


@pytest.mark.slow  # real torchrun cells
def test_sweep_prints_one_table_a_row_per_cell(main_sweep: Sweep) -> None:
    """The default output: the live table's header, a row per cell with at most two notes,
    nothing wider than the console (80 here), then where the results are."""
    lines = main_sweep.output.splitlines()
    # the table, its notes and legend; the results line holds a path, a word never cut
    table = lines[: next(i for i, line in enumerate(lines) if line.startswith("results:"))]
    assert all(len(line) <= 80 for line in table), main_sweep.output
    (header,) = [i for i, line in enumerate(lines) if line.startswith("model ")]
    assert lines[header].split()[:4] == ["model", "batch", "ranks", "samples/s"]
    rows = [i for i, line in enumerate(lines) if line.startswith("tiny-mlp ")]
    assert [lines[i].split()[:3] for i in rows] == [["tiny-mlp", "8", "1"], ["tiny-mlp", "8", "2"]]
    assert rows[1] - rows[0] <= 3  # a row and at most two notes
    assert "Average Throughput" not in main_sweep.output  # -v shows each cell's lines
    assert "results:" in flat(main_sweep.output)
    assert "2 cell(s), 0 failed" in flat(main_sweep.output)
    assert "time: 2 cell(s) in " in flat(main_sweep.output)  # where the minutes went


@pytest.mark.slow  # real torchrun cells
def test_sweep_writes_config_and_environment(main_sweep: Sweep) -> None:
    exp = main_sweep.exp_dir
    assert load_config(exp / "config.yaml") == load_config(main_sweep.config)  # as resolved
    env = json.loads((exp / "env.json").read_text(encoding="utf-8"))
    assert isinstance(env, dict)
    assert env


@pytest.mark.slow  # real torchrun cells
def test_sweep_cell_results(main_sweep: Sweep) -> None:
    cells = main_sweep.cells
    assert len(cells) == 2
    schema = json.loads(GOLDEN_SCHEMA.read_text(encoding="utf-8"))
    for path in (main_sweep.exp_dir / "cells").glob("*.json"):
        jsonschema.Draft202012Validator(schema).validate(json.loads(path.read_text()))
        assert path.stem == CellResult.model_validate_json(path.read_text()).cell_id
    for world, cell in by_world(cells).items():
        assert cell.status == "ok", cell.error
        assert cell.schema_version == RESULT_SCHEMA_VERSION
        identity = cell.cell
        assert (identity.model, identity.batch_size, identity.precision, identity.strategy) == (
            "tiny-mlp",
            8,
            "fp32",
            "ddp",
        )
        assert (cell.cell.device, cell.cell.backend) == ("cpu", "gloo")
        assert cell.parameters == TINY_MLP_PARAMETERS
        assert cell.global_batch == 8 * world
        assert (cell.measured_steps, cell.warmup_steps, cell.repeats) == (5, 2, 2)
        assert cell.error is None
        thr = cell.throughput
        assert thr is not None
        assert thr.samples_per_s > 0
        assert math.isfinite(thr.samples_per_s)
        assert thr.samples_per_s_per_device == pytest.approx(thr.samples_per_s / world)
        assert len(thr.repeats) == 2
        assert all(r > 0 and math.isfinite(r) for r in thr.repeats)
        assert thr.tokens_per_s is None
        assert cell.step_time is not None
        assert cell.step_time.count == world * 2 * 5
        assert 0 < cell.step_time.min <= cell.step_time.p50 <= cell.step_time.max
        assert [r.rank for r in cell.ranks] == list(range(world))
        assert all(r.step_time.count == 10 for r in cell.ranks)
        assert cell.compute is not None
        assert cell.compute.flops_per_step is not None
        assert cell.compute.flops_per_step > 0
        assert cell.compute.mfu is None
        assert cell.unavailable["mfu"]  # with the reason: no GPU peak on CPU
        assert cell.memory is not None
        assert cell.memory.parameter_bytes == TINY_MLP_PARAMETERS * 4
        assert cell.memory.peak_allocated_bytes is None
        assert cell.memory.peak_rss_bytes is not None
        assert cell.memory.peak_rss_bytes > 0
        assert f"--nproc-per-node={world}" in cell.launch["argv"]
        assert cell.launch["env"]["OMP_NUM_THREADS"] == str(cell.launch["omp_num_threads"])
        # launcher.cpu_malloc: reuse, as the ranks saw it (unless the shell set GLIBC_TUNABLES)
        if "GLIBC_TUNABLES" not in os.environ:
            tunables = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
            assert cell.launch["env"]["GLIBC_TUNABLES"] == tunables
            assert cell.environment["env"]["GLIBC_TUNABLES"] == tunables
        assert cell.environment["libc"].startswith("glibc")
        # launcher.cpu_binding: cores, as the launch carried it and rank 0 did it
        assert cell.launch["env"]["TORCHSCALE_CPU_BINDING"] == "cores"
        cores = len(os.sched_getaffinity(0))
        bound = cell.environment["cpu_binding"]
        assert bound.get("local_rank" if world <= cores else "not_bound") is not None, bound
        assert cell.environment["usable_cores"] == cores  # the node's, not rank 0's share
        assert cell.started_at
        assert cell.wall_s is not None
        assert cell.wall_s > 0
        assert cell.environment


@pytest.mark.slow  # real torchrun cells
def test_sweep_communication(main_sweep: Sweep) -> None:
    cells = by_world(main_sweep.cells)
    one, two = cells[1], cells[2]
    assert split_figures(one).comm_overhead is None
    assert "world size 1" in (why(one.unavailable["comm_overhead"]) or "")
    assert one.diagnosis is None or one.diagnosis.straggler is None
    overhead = split_figures(two).comm_overhead
    # the step model's exposed transfer: a share of the step, or not measurable with why
    if overhead is None:
        assert "not measurable" in two.unavailable["comm_overhead"]
    else:
        assert 0 < overhead < 1
    no_sync = split_figures(two).no_sync_step_s
    assert no_sync is not None and no_sync > 0
    attribution = two.diagnosis
    assert attribution is not None and attribution.ranks == 2
    assert sum(p.seconds.value or 0.0 for p in attribution.parts) <= (
        attribution.step_s.value or 0.0
    ) * (1 + 1e-9)
    verdict = attribution.straggler
    assert verdict is not None
    # balanced ranks: a straggler is named only when the test says so, and then once
    assert (verdict.rank is not None) == verdict.named
    assert [c.check for c in attribution.cross_checks] == [
        "paired",
        "cpu_wait",
        "others_wait",
        "no_sync_comm",
    ]
    assert attribution.cross_checks[2].detail.figures["source"] == "phase timers"
    # every rank read its wait for a CPU at each step's edges (Linux): the check judged it
    host = attribution.cross_checks[1]
    assert host.estimate is not None and verdict.host_wait_s == host.estimate
    # the host's time is a kind of straggler: named, never a withdrawal
    assert verdict.host_bound is (verdict.kind == "host")
    withdrawn = verdict.why_not
    assert withdrawn is None or withdrawn.code != "straggler.withdrawn"
    assert withdrawn is None or "cpu_wait" not in withdrawn.figures.get("by", [])


@pytest.mark.slow  # real torchrun cells
def test_sweep_step_records(main_sweep: Sweep) -> None:
    store = ResultStore(main_sweep.exp_dir)
    for world, cell in by_world(main_sweep.cells).items():
        path = store.steps_path(cell.cell_id)
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert rows
        assert {r["rank"] for r in rows} == set(range(world))
        phases = {"data_s", "forward_s", "backward_s", "grad_sync_wait_s", "optimizer_s"}
        # not phases: the training thread's wait for a CPU and its time on one inside the step
        # (Linux, read at each edge)
        clocks = {"cpu_wait_s", "cpu_time_s"}
        columns = {"rank", "window", "repeat", "step", "time_s"} | clocks | phases
        assert all(set(r) == columns for r in rows)
        assert all(0 <= r["cpu_wait_s"] <= r["time_s"] for r in rows)
        assert all(0 <= r["cpu_time_s"] <= r["time_s"] for r in rows)
        assert any(r["cpu_time_s"] > 0 for r in rows)  # the step's work ran on a CPU
        assert all(r["time_s"] > 0 and math.isfinite(r["time_s"]) for r in rows)
        # the phases of a step add up to (a little under) the step: the timer edges differ
        for r in rows:
            known = [r[p] for p in phases if r[p] is not None]
            assert r["forward_s"] is not None and r["forward_s"] > 0
            assert sum(known) <= r["time_s"] * 1.05 + 1e-4
        if world == 1:  # no gradient sync to wait for on one rank
            assert all(r["grad_sync_wait_s"] is None or r["grad_sync_wait_s"] < 0.05 for r in rows)
        for rank in range(world):
            sync = [r for r in rows if r["rank"] == rank and r["window"] == "sync"]
            no_sync = [r for r in rows if r["rank"] == rank and r["window"] == "no_sync"]
            assert sorted((r["repeat"], r["step"]) for r in sync) == [
                (rep, step) for rep in range(2) for step in range(5)
            ]
            # one no_sync window after each synchronised one (interleaved)
            assert sorted((r["repeat"], r["step"]) for r in no_sync) == (
                [(rep, step) for rep in range(2) for step in range(5)] if world > 1 else []
            )
        windows = {r["window"] for r in rows}
        assert windows == ({"sync", "no_sync"} if world > 1 else {"sync"})


@pytest.mark.slow  # real torchrun cells
def test_sweep_summary_csv(main_sweep: Sweep) -> None:
    table = pd.read_csv(main_sweep.exp_dir / "summary.csv")
    assert len(table) == 2
    assert list(table["world_size"]) == [1, 2]
    assert set(table["status"]) == {"ok"}
    assert set(table["cell_id"]) == {c.cell_id for c in main_sweep.cells}
    assert (table["samples_per_s"] > 0).all()
    eff = dict(zip(table["world_size"], table["scaling_efficiency"], strict=True))
    assert eff[1] == pytest.approx(1.0)
    assert eff[2] > 0
    assert math.isfinite(eff[2])
    assert (table["global_batch"] == table["batch_size"] * table["world_size"]).all()


@pytest.mark.slow  # real torchrun cells
def test_sweep_keeps_per_cell_and_per_rank_logs(main_sweep: Sweep) -> None:
    for world, cell in by_world(main_sweep.cells).items():
        log_dir = Path(cell.launch["log_dir"])
        assert log_dir.is_relative_to(main_sweep.exp_dir / "logs")
        assert (log_dir / "torchrun.log").is_file()
        rank_logs = list((log_dir / "ranks").rglob("stderr.log"))
        assert len(rank_logs) == world


@pytest.mark.slow  # real torchrun cells
def test_the_two_rank_cell_says_the_same_on_every_surface(
    main_sweep: Sweep, tmp_path: Path
) -> None:
    """One verdict per cell, the same on every surface: the step split, the straggler verdict
    and its what-if read from the live table, result.json, summary.csv (as numbers) and the
    Markdown, HTML and term reports."""
    cell = by_world(main_sweep.cells)[2]
    diagnosis = cell.diagnosis
    assert diagnosis is not None and diagnosis.source == "phase timers"
    # the terminal: the live table's row shows the same sync stall (its share of the step,
    # the one figure, compact), and a named straggler's own line under it; -v prints the
    # sentences (tests/interfaces/test_render.py)
    terminal = surfaces.flat(main_sweep.output)
    (row,) = [
        line
        for line in main_sweep.output.splitlines()
        if line.split()[:3] == ["tiny-mlp", "8", "2"]
    ]
    table = cells_table([cell])
    assert re.search(rf"(?<!\S){re.escape(stall_text(table.iloc[0]))}(?!\S)", row), row  # '5.1 %'
    stall = diagnosis.part("wait_for_peers")
    assert stall is not None
    assert table.iloc[0]["wait_for_peers_share"] == stall.share.value or (
        stall.share.value is None and pd.isna(table.iloc[0]["wait_for_peers_share"])
    )
    if diagnosis.straggler is not None and diagnosis.straggler.named:
        assert surfaces.printed_once(terminal, straggler_text(diagnosis.straggler, 2))
    # summary.csv: the same figures as numbers
    summary = pd.read_csv(main_sweep.exp_dir / "summary.csv")
    (row,) = summary[summary["world_size"] == 2].to_dict("records")
    for part in diagnosis.parts:
        stored = part.share.value
        shown = row[f"{part.name}_share"]
        assert (stored is None and pd.isna(shown)) or shown == pytest.approx(stored)
    verdict = diagnosis.straggler
    assert verdict is not None
    assert bool(row["straggler_named"]) == verdict.named
    assert row["straggler_summary"] == verdict_words.straggler_text(verdict, diagnosis.ranks)
    # the reports
    for fmt, text in surfaces.reports(main_sweep.exp_dir, tmp_path).items():
        for line in surfaces.verdict_texts(diagnosis):
            assert line in text, (fmt, line)


@pytest.mark.slow  # starts a child process
def test_process_scan_sees_a_live_process(tmp_path: Path) -> None:
    """The leftover-process check above is not vacuous: it finds a process by its argv."""
    marker = str(tmp_path / "marker")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        # until the child has exec'd, /proc shows the parent's command line: poll for it
        deadline = time.monotonic() + 10
        while not _scan_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(processes_mentioning(marker, grace_s=0)) == 1
    finally:
        proc.kill()
        proc.wait()
    assert processes_mentioning(marker, grace_s=0) == []


def test_process_scan_sees_a_live_process_by_its_argv_and_never_this_one() -> None:
    """The same without starting one: this process's parent is found by its command line;
    this process (the test itself) is left out even where its own command line matches."""

    def cmdline(pid: int | str) -> str:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return raw.replace(b"\0", b" ").decode(errors="replace")

    parent = os.getppid()
    if not cmdline(parent).strip():
        pytest.skip("this process's parent shows no command line")
    assert f"{parent}: {cmdline(parent)}" in processes_mentioning(cmdline(parent), grace_s=0)
    mine = processes_mentioning(cmdline("self"), grace_s=0)
    assert not [line for line in mine if line.startswith(f"{os.getpid()}: ")]


# ================================================================================= dry run


def test_dry_run_prints_argv_and_env_and_runs_nothing(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "dry.yaml", experiment_name="dry", device="cpu", **MAIN_CONFIG)
    out = tmp_path / "results"
    result = invoke("-c", cfg, "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert text.count("argv:") == 2
    assert text.count("env:") == 2
    assert "-m torch.distributed.run --standalone" in text
    assert "--nproc-per-node=1" in text
    assert "--nproc-per-node=2" in text
    assert "--max-restarts=0" in text
    assert "-m torchscale.rank.worker.main --spec" in text
    assert "OMP_NUM_THREADS=" in text
    assert "TORCHELASTIC_ERROR_FILE=" in text
    assert "2 cell(s) to run, 0 skipped" in text
    assert "estimated" in text
    assert "Running" not in text
    assert not (out / "dry" / "cells").exists()
    assert not list(out.rglob("*.json"))


@no_gpu_only
def test_dry_run_shows_what_is_skipped_and_why(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path / "dry.yaml", experiment_name="dry", **{**MAIN_CONFIG, "device": "cuda"}
    )
    result = invoke("-c", cfg, "-o", tmp_path / "results", "--dry-run")
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert text.count("skip: device 'cuda' requested but no CUDA GPU is visible") == 2
    assert "argv:" not in text
    assert "0 cell(s) to run, 2 skipped" in text


@no_gpu_only
def test_skipped_cells_are_recorded_without_launching(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path / "cuda.yaml", experiment_name="cuda", **{**MAIN_CONFIG, "device": "cuda"}
    )
    result = invoke("-c", cfg, "-o", tmp_path / "results")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    exp = tmp_path / "results" / "cuda"
    cells = read_cells(exp)
    assert [c.status for c in cells] == ["skipped", "skipped"]
    assert all(c.error and "no CUDA GPU" in say(c.error.finding) for c in cells)
    assert not (exp / "logs").exists()  # nothing was launched
    table = pd.read_csv(exp / "summary.csv")
    assert list(table["status"]) == ["skipped", "skipped"]
    assert table["scaling_efficiency"].isna().all()


# ================================================================================ bad input


def test_unknown_model_fails_before_anything_runs(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path / "bad.yaml", experiment_name="bad", **{**MAIN_CONFIG, "models": ["resnet-50"]}
    )
    out = tmp_path / "results"
    result = invoke("-c", cfg, "-o", out)
    assert result.exit_code == 2, result.output
    text = flat(result.output)
    assert "unknown model 'resnet-50'" in text
    assert "did you mean 'resnet50'?" in text
    assert not out.exists()


def test_unknown_model_lists_what_exists(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path / "bad.yaml", experiment_name="bad", **{**MAIN_CONFIG, "models": ["zzzz"]}
    )
    result = invoke("-c", cfg, "-o", tmp_path / "results")
    assert result.exit_code == 2, result.output
    text = flat(result.output)
    for name in ("tiny-mlp", "resnet50", "bert-large", "gpt2", "transformer", "vit-b16"):
        assert name in text
    assert not (tmp_path / "results").exists()


def test_unknown_strategy_fails_before_anything_runs(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path / "bad.yaml",
        experiment_name="bad",
        **{**MAIN_CONFIG, "training": {"strategy": "zero3"}},
    )
    result = invoke("-c", cfg, "-o", tmp_path / "results")
    assert result.exit_code == 2, result.output
    text = flat(result.output)
    assert "'zero3'" in text
    assert "ddp" in text
    assert "fsdp" in text
    assert not (tmp_path / "results").exists()


# ==================================================================================== faults


@pytest.mark.slow  # real torchrun cells
def test_faults_exit_one_and_every_cell_has_a_result(fault_sweep: Sweep) -> None:
    assert fault_sweep.result.exit_code == 1, fault_sweep.output
    cells = by_model(fault_sweep.cells)
    assert set(cells) == {
        "tests.fault_models:crash",
        "tests.fault_models:oom",
        "tests.fault_models:healthy",
    }
    assert "3 cell(s), 2 failed" in flat(fault_sweep.output)
    assert fault_sweep.leftovers == []


@pytest.mark.slow  # real torchrun cells
def test_a_rank_that_raises_is_failed_with_its_root_cause(fault_sweep: Sweep) -> None:
    crash = by_model(fault_sweep.cells)["tests.fault_models:crash"]
    assert crash.status == "failed"
    assert crash.error is not None
    assert crash.error.root_cause_rank == 1
    assert "injected failure on rank 1" in crash.error.exception
    assert "rank 1" in say(crash.error.finding)
    assert "injected failure on rank 1" in say(crash.error.finding)
    assert crash.error.log_tail
    assert crash.throughput is None
    assert crash.launch["argv"]
    assert not ResultStore(fault_sweep.exp_dir).steps_path(crash.cell_id).exists()
    assert "· rank 1 raised" in fault_sweep.output  # the cause, under the cell's row


@pytest.mark.slow  # real torchrun cells
def test_an_oom_is_recorded_as_oom_with_the_numbers(fault_sweep: Sweep) -> None:
    oom = by_model(fault_sweep.cells)["tests.fault_models:oom"]
    assert oom.status == "oom"
    assert oom.error is not None
    assert "out of memory" in say(oom.error.finding)
    assert "20.00 GiB" in say(oom.error.finding)


@pytest.mark.slow  # real torchrun cells
def test_the_sweep_continues_after_failures(fault_sweep: Sweep) -> None:
    healthy = by_model(fault_sweep.cells)["tests.fault_models:healthy"]
    assert healthy.status == "ok", healthy.error
    assert healthy.throughput is not None
    assert healthy.throughput.samples_per_s > 0
    assert healthy.model_kind == "other"
    # plug-in names are shortened from the left to fit 80 columns ('…odels:healthy')
    rows = [
        line
        for line in fault_sweep.output.splitlines()
        if line.split()[:1] and line.split()[0].endswith((":crash", ":oom", ":healthy"))
    ]
    # in the order they ran, the failure's cause under its row, the healthy cell measured
    cells = [row for row in rows if not row.startswith("  ")]
    states = [row.split()[-1] for row in cells]
    # the healthy cell reads ok, or '1 rep' (SHORT runs one repeat: no spread to judge), or
    # busy / noisy when the suite runs beside other work
    healthy_state = cells[2].split()[-1]
    if healthy_state == "rep":
        healthy_state = " ".join(cells[2].split()[-2:])
    assert states[:2] == ["failed", "oom"], rows
    assert healthy_state in ("ok", "1 rep", "busy", "noisy"), rows
    healthy_row = next(row for row in rows if "healthy" in row)
    assert any(ch.isdigit() for ch in healthy_row.split("healthy")[1])


@pytest.mark.slow  # real torchrun cells
def test_fault_summary(fault_sweep: Sweep) -> None:
    table = pd.read_csv(fault_sweep.exp_dir / "summary.csv")
    assert list(table["status"]) == ["failed", "oom", "ok"]
    assert table.loc[0, "error"].startswith("rank 1 raised")
    assert pd.isna(table.loc[2, "error"])
    assert table.loc[:1, "samples_per_s"].isna().all()
    assert table.loc[:1, "scaling_efficiency"].isna().all()
    # one world size measured: no base to scale from (never a 100 %), the reason beside it
    assert pd.isna(table.loc[2, "scaling_efficiency"])
    assert table.loc[2, "scaling_efficiency_reason"].startswith("no base")


@pytest.mark.slow  # real torchrun cells, one waits out a 30 s cell timeout
def test_hung_cell_times_out_and_leaves_no_processes(hang_sweep: Sweep) -> None:
    assert hang_sweep.result.exit_code == 1, hang_sweep.output
    (cell,) = hang_sweep.cells
    assert cell.cell.model == "tests.fault_models:hang"
    assert cell.status == "timeout"
    assert cell.error is not None
    assert f"{HANG_TIMEOUT_S} s" in say(cell.error.finding)
    assert cell.wall_s is not None
    assert cell.wall_s >= HANG_TIMEOUT_S
    assert hang_sweep.leftovers == []


@pytest.mark.slow  # real torchrun cells, one waits out a 30 s cell timeout
def test_hung_cell_says_where_every_rank_was(hang_sweep: Sweep) -> None:
    """The timeout reason names the stuck rank and its line and what the other rank was doing;
    every rank's stacks are kept with the cell's logs."""
    (cell,) = hang_sweep.cells
    error = cell.error
    assert error is not None
    forward = line_of(REPO_ROOT / "tests" / "fault_models.py", "time.sleep(3600)")
    assert say(error.finding) == (
        f"killed after the {HANG_TIMEOUT_S} s cell timeout: rank 1 in forward "
        f"(fault_models.py:{forward}); rank 0 in backward (autograd: DDP gradient all-reduce, "
        "in C++)"
    )
    assert error.root_cause_rank == 1
    lines = [place_line(p.model_dump()) for p in error.places]
    assert lines[0] == f"rank 1 in forward (fault_models.py:{forward})"
    assert lines[1].startswith("rank 0 in backward (autograd: DDP gradient")
    logs = hang_sweep.exp_dir / "logs" / cell.cell_id
    assert error.artifacts == [str(logs / "diagnostics" / f"rank{r}.stacks.txt") for r in (0, 1)]
    assert all(Path(p).stat().st_size > 0 for p in error.artifacts)
    assert "rank 1 in forward" in flat(hang_sweep.output)  # the line a user reads


@pytest.mark.slow  # real torchrun cells, one waits out a 30 s cell timeout
def test_fail_fast_stops_after_the_first_failure(hang_sweep: Sweep) -> None:
    assert len(list((hang_sweep.exp_dir / "cells").glob("*.json"))) == 1
    assert "tests.fault_models:healthy" not in hang_sweep.output
    assert "--fail-fast" in hang_sweep.output
    table = pd.read_csv(hang_sweep.exp_dir / "summary.csv")
    assert list(table["status"]) == ["timeout"]


# ==================================================================================== resume


@pytest.mark.slow  # real torchrun cells
def test_dry_run_counts_what_resume_would_reuse(resumed: Resumed) -> None:
    """The dry run tells the real run's truth: the kept cell is reused (no argv), the lost one
    would run, and the summary counts both."""
    out = resumed.dry_run.output
    assert resumed.dry_run.exit_code == 0, out
    kept_block = out.split(resumed.kept_id, 1)[1].split("\n", 2)[1]
    assert "reuse: ok in a previous run (--resume)" in kept_block
    rerun_block = out.split(resumed.rerun_id, 1)[1].split("\n", 2)[1]
    assert "argv:" in rerun_block
    assert "1 cell(s) to run, 1 reused (--resume), 0 skipped" in out


@pytest.mark.slow  # real torchrun cells
def test_resume_exits_zero(resumed: Resumed) -> None:
    assert resumed.sweep.result.exit_code == 0, resumed.sweep.output
    assert resumed.sweep.leftovers == []


@pytest.mark.slow  # real torchrun cells
def test_resume_does_not_rerun_a_finished_cell(resumed: Resumed) -> None:
    store = ResultStore(resumed.sweep.exp_dir)
    assert store.cell_path(resumed.kept_id).read_bytes() == resumed.kept_bytes
    kept = store.read_cell(resumed.kept_id)
    assert kept is not None
    assert kept.started_at == resumed.kept_started_at
    text = flat(resumed.sweep.output)
    # the kept cell's row says it was not rerun
    assert "ok in a previous run (--resume), not rerun" in text
    assert text.count("ok in a previous run") == 1  # only the rerun cell measured anew


@pytest.mark.slow  # real torchrun cells
def test_resume_reruns_the_missing_cell(resumed: Resumed) -> None:
    store = ResultStore(resumed.sweep.exp_dir)
    rerun = store.read_cell(resumed.rerun_id)
    assert rerun is not None
    assert rerun.status == "ok"
    assert rerun.started_at is not None
    assert resumed.rerun_started_at is not None
    assert rerun.started_at > resumed.rerun_started_at
    assert store.steps_path(resumed.rerun_id).is_file()
    rows = [line.split()[:3] for line in resumed.sweep.output.splitlines()]
    assert ["tiny-mlp", "8", "2"] in rows
    table = pd.read_csv(resumed.sweep.exp_dir / "summary.csv")
    assert list(table["status"]) == ["ok", "ok"]
    eff = dict(zip(table["world_size"], table["scaling_efficiency"], strict=True))
    assert eff[1] == pytest.approx(1.0)
    assert eff[2] > 0


def test_resume_only_trusts_ok_results_of_the_same_definition(tmp_path: Path) -> None:
    """The --resume check, without launching: ok + same definition hash, nothing else."""
    store = ResultStore(tmp_path)
    base = {
        "cell": {
            "id": "c",
            "definition_sha256": "a" * 64,
            "model": "tiny-mlp",
            "label": "tiny-mlp",
            "batch_size": 8,
            "world_size": 1,
            "precision": "fp32",
            "strategy": "ddp",
            "device": "cpu",
            "backend": "gloo",
        }
    }
    assert store.finished_ok("c", "a" * 64) is None  # no file
    store.write_cell(CellResult.model_validate({**base, "status": "ok"}))
    assert store.finished_ok("c", "a" * 64) is not None
    assert store.finished_ok("c", "b" * 64) is None  # the definition changed
    for status in ("failed", "oom", "timeout", "skipped"):
        store.write_cell(CellResult.model_validate({**base, "status": status}))
        assert store.finished_ok("c", "a" * 64) is None, status
    store.cell_path("c").write_text("{truncated", encoding="utf-8")
    assert store.finished_ok("c", "a" * 64) is None  # unreadable: rerun


# ============================================================================= schema golden


def test_result_schema_matches_golden_file() -> None:
    current = json.dumps(CellResult.model_json_schema(), indent=2, sort_keys=True)
    golden = GOLDEN_SCHEMA.read_text(encoding="utf-8")
    assert current.strip() == golden.strip(), (
        "The JSON Schema of cells/<cell_id>.json (CellResult) changed. If that is deliberate, "
        "bump RESULT_SCHEMA_VERSION (and the schema_version Literal) in "
        "torchscale/contracts/schema/cell_result.py, then regenerate the golden file:\n"
        f"    {REGENERATE}"
    )


def test_schema_version_constant_matches_model() -> None:
    field = CellResult.model_fields["schema_version"]
    assert field.default == RESULT_SCHEMA_VERSION
    schema = CellResult.model_json_schema()
    assert schema["properties"]["schema_version"]["const"] == RESULT_SCHEMA_VERSION


@pytest.mark.slow  # real torchrun cells
def test_fsdp_cell_with_tied_weights_runs(tmp_path: Path) -> None:
    """FSDP2 on gloo with a model whose head is tied to its embedding (tiny-gpt2): the tied
    weight must stay in one FSDP unit, or the forward mixes DTensor and Tensor and fails."""
    sweep = run_sweep(
        tmp_path,
        "fsdp",
        models=["tiny-gpt2"],
        batch_sizes=[4],
        gpu_counts=[2],
        training={"strategy": "fsdp"},
        measurement=SHORT,
    )
    (cell,) = sweep.cells
    assert cell.status == "ok", cell.error
    assert cell.cell.strategy == "fsdp"
    assert cell.throughput is not None and cell.throughput.samples_per_s > 0
    assert "FSDP" in (why(cell.unavailable["comm_overhead"]) or "")
    # each rank holds a shard: less than the whole model's parameter bytes
    assert cell.memory is not None and cell.parameters is not None
    assert cell.memory.parameter_bytes < cell.parameters * 4


@pytest.mark.slow  # real torchrun cells
def test_result_written_before_a_bad_exit_is_kept_with_a_warning(tmp_path: Path) -> None:
    sweep = run_sweep(
        tmp_path,
        "badexit",
        models=["tests.fault_models:exits_badly_after_result"],
        batch_sizes=[4],
        gpu_counts=[1],
        measurement=SHORT,
        launcher={"env": FAULT_ENV},
    )
    (cell,) = sweep.cells
    assert cell.status == "ok"
    assert cell.throughput is not None
    said = [warning_words(w) for w in cell.warnings]
    assert any("torchrun exited with 1 after the result was written" in w for w in said)
    assert sweep.result.exit_code == 0


@pytest.mark.slow  # real torchrun cells
def test_result_written_before_a_hung_shutdown_is_kept_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranks that write the result and then hang at exit are killed the shutdown grace after
    the result appeared, long before the cell timeout; the finished measurement is kept (seen
    once in CI: two gloo ranks stuck in their teardown). The timeout is generous, so a busy
    machine cannot make the cell time out before it writes its result."""
    monkeypatch.setattr(process, "SHUTDOWN_GRACE_S", 3.0)
    sweep = run_sweep(
        tmp_path,
        "hungexit",
        models=["tests.fault_models:hangs_after_result"],
        batch_sizes=[4],
        gpu_counts=[1],
        measurement=SHORT,
        launcher={"env": FAULT_ENV, "cell_timeout_s": 600},
    )
    (cell,) = sweep.cells
    assert cell.status == "ok"
    assert cell.throughput is not None
    assert any(
        "had not exited 3 s after the result was written: killed in their shutdown; "
        "measurement kept" in warning_words(w)
        for w in cell.warnings
    ), cell.warnings
    assert sweep.result.exit_code == 0  # ok, not timeout: the grace ended it, not the 600 s
