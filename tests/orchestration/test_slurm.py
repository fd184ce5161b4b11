"""The Slurm launcher: allocations, sbatch scripts and srun steps as data (no Slurm needed),
and whole sweeps against a real two-node Slurm (tests/slurm_cluster.py; skipped without one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.slurm_cluster import SlurmCluster, slurm_cluster  # noqa: F401 (the `slurm` fixture)
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine, cell_shapes
from torchscale.orchestration.schedulers.slurm.allocation import build_allocation, sbatch_script
from torchscale.orchestration.schedulers.slurm.client import parse_fields
from torchscale.orchestration.schedulers.slurm.filesystem import mount_of
from torchscale.orchestration.schedulers.slurm.node import node_argv, node_error_file
from torchscale.orchestration.schedulers.slurm.step import StepPlace, srun_command

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def config(**launcher: object) -> BenchConfig:
    return BenchConfig.model_validate(
        {
            "experiment_name": "sl",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [1, 2],
            "device": "cpu",
            "launcher": {"kind": "slurm", **launcher},
        }
    )


# ------------------------------------------------------------------ the plan: nodes x per node


def test_nodes_multiply_ranks_per_node() -> None:
    shapes = cell_shapes(config(nodes=[1, 2]))
    assert [(s.world_size, s.nodes, s.nproc_per_node) for s in shapes] == [
        (1, 1, 1),
        (2, 2, 1),
        (2, 1, 2),
        (4, 2, 2),
    ]
    plan = build_plan(config(nodes=[1, 2]), Machine(gpu_count=0, cpu_cores=2))
    ids = [p.cell.id for p in plan]
    assert len(set(ids)) == 4
    assert [p.cell.nodes for p in plan] == [1, 2, 1, 2]
    assert "__w2__n2__" in ids[1] and "__n" not in ids[2]


def test_total_gpus_fill_whole_nodes_when_nodes_is_not_given() -> None:
    cfg = BenchConfig.model_validate(
        {
            "experiment_name": "sl",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [4, 16, 12],
            "launcher": {"kind": "slurm", "slurm": {"gpus_per_node": 8}},
        }
    )
    plan = build_plan(cfg, Machine(gpu_count=8, cpu_cores=64))
    by_world = {p.cell.world_size: p for p in plan}
    assert (by_world[4].cell.nodes, by_world[4].launch.nproc_per_node) == (1, 4)
    assert (by_world[16].cell.nodes, by_world[16].launch.nproc_per_node) == (2, 8)
    assert by_world[16].skip_reason is None
    assert "do not fill whole nodes of 8" in (by_world[12].skip_reason or "")


def test_one_node_cells_keep_their_ids_and_hashes() -> None:
    """Local sweeps' cells (and so --resume of their results) are unchanged by the nodes axis."""
    local = BenchConfig.model_validate(
        {"experiment_name": "sl", "models": ["tiny-mlp"], "batch_sizes": [8], "gpu_counts": [2]}
    )
    one = BenchConfig.model_validate({**local.model_dump(mode="json"), "launcher": {"nnodes": 1}})
    machine = Machine(gpu_count=0, cpu_cores=2)
    assert build_plan(local, machine)[0].cell == build_plan(one, machine)[0].cell


# ------------------------------------------------------------------ scripts and steps as data


def test_sbatch_script_has_one_task_per_node_and_the_warning_signal(tmp_path: Path) -> None:
    cfg = config(
        nodes=[2],
        slurm={
            "partition": "gpu",
            "account": "ml",
            "qos": "high",
            "time_limit": "1:00:00",
            "gpus_per_node": 8,
            "cpus_per_task": 32,
            "exclusive": True,
            "extra_sbatch": ["--constraint=h100"],
            "setup": ["module load cuda/12.4"],
        },
    )
    plan = build_plan(cfg, Machine(gpu_count=8, cpu_cores=32))
    store = ResultStore(tmp_path / "sl")
    cells = [p for p in plan if p.cell.nodes == 2]
    allocation = build_allocation("s01-n2", 2, cells, store, cfg.launcher.slurm, None, cfg.comm)
    script = sbatch_script(allocation, cfg.launcher.slurm, "sl")
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    for expected in (
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --cpus-per-task=32",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=ml",
        "#SBATCH --qos=high",
        "#SBATCH --time=1:00:00",
        "#SBATCH --exclusive",
        "#SBATCH --constraint=h100",
        "#SBATCH --signal=B:USR1@120",
        "module load cuda/12.4",
    ):
        assert expected in lines
    assert (
        lines[-1].startswith("exec ")
        and "-m torchscale.orchestration.schedulers.slurm.driver --allocation" in lines[-1]
    )
    assert [c.spec.cell.id for c in allocation.cells] == [p.cell.id for p in cells]
    assert Path(allocation.cells[0].spec.result_path).is_absolute()


def test_srun_step_runs_torchrun_per_node_with_c10d_at_the_head_address(tmp_path: Path) -> None:
    cfg = config(nodes=[2], slurm={"gpus_per_node": 4, "container": "nvcr.io#pytorch"})
    planned = next(p for p in build_plan(cfg, Machine(4, 16)) if p.cell.nodes == 2)
    place = StepPlace("77", "10.0.0.5", 4, None, "nvcr.io#pytorch", "/opt/py/bin/python")
    env = {"RANK": "3", "MASTER_ADDR": "x", "PET_NNODES": "9", "PATH": "/bin"}
    command = srun_command(planned, tmp_path / "spec.json", tmp_path / "log", env, place, 29999, 3)
    argv = command.argv
    assert argv[: argv.index("/opt/py/bin/python")] == [
        "srun",
        "--kill-on-bad-exit=1",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        f"--job-name={planned.cell.id}",
        "--gpus-per-node=4",
        "--container-image=nvcr.io#pytorch",
    ]
    inner = argv[argv.index("--") + 1 :]
    assert inner[:3] == ["/opt/py/bin/python", "-m", "torch.distributed.run"]
    for flag in (
        "--nnodes=2",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=10.0.0.5:29999",
        "--rdzv-id=77-3",
        "--max-restarts=0",
        f"--nproc-per-node={planned.launch.nproc_per_node}",
    ):
        assert flag in inner
    assert "--standalone" not in inner
    assert not {"RANK", "MASTER_ADDR", "PET_NNODES"} & set(command.env)


def test_each_node_gets_its_own_error_file_and_rank_logs() -> None:
    argv = ["python", "-m", "torch.distributed.run", "--log-dir", "/r/logs/c/ranks", "-m", "w"]
    assert node_argv(argv, 1)[4] == "/r/logs/c/ranks/node1"
    assert node_argv(argv, 0)[4] == "/r/logs/c/ranks/node0"
    assert node_error_file("/r/logs/c/error.json", 0) == "/r/logs/c/error.json"
    assert node_error_file("/r/logs/c/error.json", 2) == "/r/logs/c/error-node2.json"


def test_scontrol_fields_and_mounts_are_read() -> None:
    fields = parse_fields("PartitionName=debug Default=YES TotalNodes=2 MaxNodes=UNLIMITED")
    assert fields["TotalNodes"] == "2" and fields["MaxNodes"] == "UNLIMITED"
    mounts = "/dev/sda1 / ext4 rw 0 0\nserver:/export /shared nfs4 rw 0 0\n"
    assert mount_of(Path("/shared/results/x"), mounts).fstype == "nfs4"  # type: ignore[union-attr]
    assert mount_of(Path("/sharedx"), mounts).fstype == "ext4"  # type: ignore[union-attr]


# ------------------------------------------------------------------ bad input, no Slurm needed

SLURM_CONFIG = """experiment_name: {name}
models:
{models}
batch_sizes: [8]
gpu_counts: [1]
device: cpu
measurement: {{warmup_steps: 1, steps: 3, repeats: 1, comm_overhead: false, flops: false}}
launcher:
  kind: slurm
  nodes: {nodes}
  cell_timeout_s: 120
  env: {{PYTHONPATH: "{repo}"}}
  slurm: {{poll_s: 0.5, time_limit: "{time_limit}", signal_grace_s: 60{slurm_extra}}}
{tail}"""


def write_config(
    tmp_path: Path,
    name: str,
    models: str = "  - tiny-mlp",
    nodes: str = "[1, 2]",
    time_limit: str = "10",
    slurm_extra: str = "",
    tail: str = "",
) -> Path:
    path = tmp_path / f"{name}.yaml"
    text = SLURM_CONFIG.format(
        name=name,
        models=models,
        nodes=nodes,
        repo=REPO,
        time_limit=time_limit,
        slurm_extra=slurm_extra,
        tail=tail,
    )
    path.write_text(text)
    return path


def test_without_sbatch_it_is_one_line_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["benchmark", "-c", str(write_config(tmp_path, "x")), "-o", str(out)]
    )
    assert result.exit_code == 2
    assert "needs Slurm's client commands on PATH; missing: sbatch" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_status_of_a_directory_without_jobs_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["benchmark", "--status", str(tmp_path)])
    assert result.exit_code == 2
    assert "no Slurm jobs recorded here" in result.output


def _said(error: dict[str, Any]) -> str:
    """A stored cell error in words, as every surface says it."""
    from torchscale.contracts.schema.cell_result import CellError
    from torchscale.contracts.wording import say

    return say(CellError.model_validate(error).finding)


@pytest.mark.parametrize("flag", ["--status", "--cancel"])
def test_status_of_a_missing_directory_says_so(tmp_path: Path, flag: str) -> None:
    result = runner.invoke(app, ["benchmark", flag, str(tmp_path / "typo")])
    assert result.exit_code == 2
    assert "typo: no such directory" in result.output
    assert "Traceback" not in result.output
    (tmp_path / "file").write_text("x")
    result = runner.invoke(app, ["benchmark", flag, str(tmp_path / "file")])
    assert result.exit_code == 2 and "file: not a directory" in result.output


# ------------------------------------------------------------------ a real two-node Slurm


def _env(slurm: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
    monkeypatch.setenv("PYTHONPATH", str(REPO))


@pytest.mark.slow  # real Slurm jobs
@pytest.mark.slurm
def test_a_sweep_over_one_and_two_nodes_runs_through_sbatch_and_reports(
    slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(slurm, monkeypatch)
    out = tmp_path / "out"
    cfg = write_config(tmp_path, "two")
    dry = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "dry run: nothing submitted" in dry.output
    assert not (out / "two" / "slurm" / "jobs.json").exists()

    result = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out)])
    assert result.exit_code == 0, result.output
    root = out / "two"
    cells = sorted((root / "cells").glob("*.json"))
    assert len(cells) == 2
    results = {json.loads(p.read_text())["cell"]["nodes"]: json.loads(p.read_text()) for p in cells}
    assert set(results) == {1, 2}
    for nodes, cell in results.items():
        assert cell["status"] == "ok"
        assert cell["cell"]["world_size"] == nodes
        assert cell["launch"]["slurm_job_id"].isdigit()
        assert len(cell["launch"]["slurm_nodes"]) == nodes
        assert cell["throughput"]["samples_per_s"] > 0
    # the layout a local sweep leaves, plus slurm/: jobs, scripts, every host's environment
    assert (root / "summary.csv").exists() and (root / "config.yaml").exists()
    state = json.loads((root / "sweep.json").read_text())  # as a local sweep writes it
    assert (state["phase"], state["finished"], len(state["planned"])) == ("complete", 2, 2)
    jobs = json.loads((root / "slurm" / "jobs.json").read_text())["jobs"]
    assert sorted(j["nodes"] for j in jobs) == [1, 2]
    two = next(j for j in jobs if j["nodes"] == 2)
    hosts = sorted((root / "slurm" / two["allocation"] / "hosts").glob("node*.json"))
    assert [h.name for h in hosts] == ["node0.json", "node1.json"]

    import torchscale.results as results_api

    frame = results_api.load(root).cells
    assert isinstance(frame, pd.DataFrame) and sorted(frame["nodes"]) == [1, 2]
    report = runner.invoke(
        app, ["report", "--source", str(root), "--format", "html", "-o", str(tmp_path / "r.html")]
    )
    assert report.exit_code == 0, report.output
    assert (tmp_path / "r.html").stat().st_size > 0

    status = runner.invoke(app, ["benchmark", "--status", str(root)])
    assert status.exit_code == 0, status.output
    assert "COMPLETED" in status.output and ": ok" in status.output


@pytest.mark.slurm
@pytest.mark.slow  # ~40-90 s: validate on both nodes, then a comm sweep, then the cells
def test_the_preflight_validates_every_node_and_measures_the_fabric_first(
    slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(slurm, monkeypatch)
    out = tmp_path / "out"
    cfg = write_config(
        tmp_path,
        "pre",
        nodes="[2]",
        slurm_extra=", preflight: {validate_nodes: true, comm: true}",
        tail="comm: {collectives: [all_reduce], min_bytes: 1KiB, max_bytes: 16KiB, iters: 5}\n",
    )
    result = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "comm: section" not in result.output  # the preflight runs it: no 'not run' warning
    root = out / "pre"
    (job,) = json.loads((root / "slurm" / "jobs.json").read_text())["jobs"]
    progress = json.loads((root / "slurm" / job["allocation"] / "progress.json").read_text())
    verdicts = progress["preflight"]
    assert list(verdicts) == ["validate node0", "validate node1", "comm"], verdicts
    assert all(v.startswith("ok") for v in verdicts.values()), verdicts
    # every node's own validate report, and the comm run where the report reads comm runs
    for k in (0, 1):
        report = json.loads(
            (
                root / "slurm" / job["allocation"] / "preflight" / f"validate-node{k}.json"
            ).read_text()
        )
        assert report["kind"] == "torchscale.validate" and report["ok"] is True
    (comm,) = (root / "comm").glob("*.json")
    run = json.loads(comm.read_text())
    assert run["nodes"] == 2 and run["world_size"] == 2 and run["status"] == "ok"
    assert [r["size_bytes"] for r in run["rows"]] == [1024, 2048, 4096, 8192, 16384]
    assert all(r["status"] == "ok" and r["wrong"] == 0 for r in run["rows"])
    assert "srun" in run["launch"]["argv"][0]
    assert json.loads(next((root / "cells").glob("*.json")).read_text())["status"] == "ok"
    status = runner.invoke(app, ["benchmark", "--status", str(root)])
    assert "preflight validate node1: ok" in status.output
    assert "preflight comm: ok" in status.output


@pytest.mark.slow  # real Slurm jobs
@pytest.mark.slurm
def test_a_cell_failing_inside_slurm_is_reported_with_its_root_cause(
    slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 runs on the second node: its exception comes from that node's error file."""
    _env(slurm, monkeypatch)
    models = '  - name: "tests.fault_models:crash"\n    options: {on_rank: 1}'
    cfg = write_config(tmp_path, "bad", models=models, nodes="[2]")
    result = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    (path,) = (tmp_path / "out" / "bad" / "cells").glob("*.json")
    cell = json.loads(path.read_text())
    assert cell["status"] == "failed"
    assert "injected failure on rank 1" in _said(cell["error"]), cell["error"]


def _start_sweep(cfg: Path, out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "torchscale", "benchmark", "-c", str(cfg), "-o", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _wait_running(root: Path, timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for progress in (root / "slurm").glob("*/progress.json"):
            current = json.loads(progress.read_text()).get("current")
            if current:
                return str(current)
        time.sleep(0.2)
    raise AssertionError("no cell started running")


def _finish(proc: subprocess.Popen[str], timeout_s: float) -> str:
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise AssertionError(f"the sweep did not end: {output}") from None
    return output


@pytest.mark.slow  # real Slurm jobs
@pytest.mark.slurm
def test_cancel_stops_the_jobs_and_the_running_cell_is_recorded(
    slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(slurm, monkeypatch)
    marker = tmp_path / "hang"
    marker.touch()
    models = (
        f'  - name: "tests.fault_models:hang_while_marker"\n    options: {{marker: "{marker}"}}'
    )
    cfg = write_config(tmp_path, "cancel", models=models, nodes="[1]")
    out = tmp_path / "out"
    proc = _start_sweep(cfg, out, dict(os.environ))
    root = out / "cancel"
    running = _wait_running(root)
    result = runner.invoke(app, ["benchmark", "--cancel", str(root)])
    assert result.exit_code == 0, result.output
    assert "cancelled job(s)" in result.output
    output = _finish(proc, 60)
    assert proc.returncode == 1, output
    cell = json.loads((root / "cells" / f"{running}.json").read_text())
    assert cell["status"] == "failed"
    reason = _said(cell["error"])
    assert "SIGTERM" in reason or "CANCELLED" in reason, reason
    state = json.loads((root / "sweep.json").read_text())  # never left 'running'
    assert state["phase"] == "stopped" and state["during"] == running, state
    again = runner.invoke(app, ["benchmark", "--cancel", str(root)])
    assert "no job of this sweep is queued or running" in again.output


@pytest.mark.slurm
@pytest.mark.slow  # ~70-110 s: waits out a real 2-minute Slurm time limit
def test_a_job_killed_by_its_time_limit_resumes(
    slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A two-minute allocation: its first cell hangs past the limit, the second never starts;
    --resume (the hang gone) runs both, nothing finished is lost."""
    _env(slurm, monkeypatch)
    marker = tmp_path / "hang"
    marker.touch()
    models = (
        f'  - name: "tests.fault_models:hang_while_marker"\n    options: {{marker: "{marker}"}}\n'
        "  - tiny-mlp"
    )
    # two minutes with the warning 60 s ahead: Slurm may send it up to 60 s early, and with
    # one minute it came before the driver's handler was in place (the job died of SIGUSR1)
    cfg = write_config(tmp_path, "limit", models=models, nodes="[1]", time_limit="2")
    out = tmp_path / "out"
    first = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out)])
    assert first.exit_code == 1, first.output
    root = out / "limit"
    cells = {p.stem: json.loads(p.read_text()) for p in (root / "cells").glob("*.json")}
    assert sorted(c["status"] for c in cells.values()) == ["failed", "failed"]
    reasons = " | ".join(_said(c["error"]) for c in cells.values())
    assert "time limit" in reasons or "TIMEOUT" in reasons, reasons
    assert "before this cell started" in reasons, reasons
    # the report's first line: stopped, by the job's warning signal, during the hanging cell
    state = json.loads((root / "sweep.json").read_text())
    assert state["phase"] == "stopped" and state["stopped_by"].startswith("Slurm job "), state
    assert state["during"] is not None and "hang_while_marker" in state["during"], state
    from torchscale.offline.results.experiment import load as load_experiment
    from torchscale.offline.results.sweep_progress import sweep_progress

    sentence = sweep_progress(load_experiment(root)).sentence() or ""
    assert sentence.startswith("Sweep stopped by Slurm job ") and "during cell 1 of 2" in sentence
    marker.unlink()
    # the resume gets time enough: the warning would stop its cells at any moment
    cfg = write_config(tmp_path, "limit", models=models, nodes="[1]", time_limit="10")
    second = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out), "--resume"])
    assert second.exit_code == 0, second.output
    cells = {p.stem: json.loads(p.read_text()) for p in (root / "cells").glob("*.json")}
    assert [c["status"] for c in cells.values()] == ["ok", "ok"]
    resumed = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out), "--resume"])
    assert resumed.exit_code == 0
    assert "2 cell(s) already ok, kept" in resumed.output
    assert "nothing to submit" in resumed.output


@pytest.mark.slow  # real Slurm jobs
@pytest.mark.slurm
def test_a_job_slurm_has_forgotten_reads_as_unknown(slurm: SlurmCluster) -> None:
    """squeue -j fails outright on one id older than MinJobAge; --status must still answer."""
    from torchscale.orchestration.schedulers.slurm.client import job_states

    (state,) = job_states(["987654"], slurm.env).values()
    assert (state.state, state.active) == ("UNKNOWN", False)
