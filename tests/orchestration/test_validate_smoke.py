"""The `validate` smoke test: planning, command, judging, the worker, and process handling.

Only one real torchrun is started here (a smoke run that must fail and name its root cause);
the passing gloo x2 run is exercised once, through the CLI, in test_validate_cli.py. Multi-GPU
plans are tested with the fake torch of test_validate_checks.py and a stand-in for the launch.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.orchestration.test_validate_checks import fake_torch, make_ctx
from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import validate_measured as shown
from torchscale.orchestration.launch import attempt, process
from torchscale.orchestration.launch.process import ProcessOutcome, run_logged
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.launch.torchrun_env import (
    child_environment,
    is_inherited_distributed_var,
)
from torchscale.orchestration.validate import smoke
from torchscale.orchestration.validate.check_result import CheckResult, CheckStatus, passed
from torchscale.orchestration.validate.smoke import (
    SMOKE_ELEMENTS,
    SMOKE_ITERS,
    WORKER_MODULE,
    SmokeSpec,
    check_smoke,
    judge_smoke,
    plan_smoke,
    run_smoke,
    smoke_launch,
)
from torchscale.rank.programs import smoke as smoke_worker
from torchscale.rank.worker import harness

GLOO_CPU = SmokeSpec("gloo", 2, "cpu")


# ------------------------------------------------------------------------------------ plan


@pytest.mark.parametrize(
    ("device", "gpus", "expected"),
    [
        ("cuda", 8, [SmokeSpec("nccl", 8, "cuda")]),
        ("cuda", 4, [SmokeSpec("nccl", 4, "cuda")]),
        ("cuda", 3, [SmokeSpec("nccl", 3, "cuda")]),
        ("cuda", 2, [SmokeSpec("nccl", 2, "cuda")]),
        ("cuda", 1, [SmokeSpec("nccl", 1, "cuda"), SmokeSpec("gloo", 2, "cpu")]),
        ("cuda", 0, [SmokeSpec("gloo", 2, "cpu")]),
        ("cpu", 8, [SmokeSpec("gloo", 2, "cpu")]),
        ("cpu", 0, [SmokeSpec("gloo", 2, "cpu")]),
    ],
)
def test_plan_smoke(device: Any, gpus: int, expected: list[SmokeSpec]) -> None:
    assert plan_smoke(device, gpus) == expected


def test_spec_label() -> None:
    assert SmokeSpec("nccl", 8, "cuda").label == "nccl x8 on cuda"


def _planned(
    monkeypatch: pytest.MonkeyPatch, device: str, gpus: int
) -> list[tuple[SmokeSpec, float]]:
    """The specs check_smoke runs on a node whose torch sees `gpus` GPUs (nothing launched)."""
    ran: list[tuple[SmokeSpec, float]] = []

    def fake_run(spec: SmokeSpec, timeout_s: float, base_env: dict[str, str]) -> CheckResult:
        ran.append((spec, timeout_s))
        return passed(f"smoke_{spec.backend}_{spec.device}", spec.label, Finding(code="test.noted"))

    monkeypatch.setattr(smoke, "run_smoke", fake_run)
    ctx = make_ctx(device, quick=False, torch=fake_torch(gpus=gpus))
    ctx.smoke_timeout_s = 42.0
    results = check_smoke(ctx, {})
    assert len(results) == len(ran)
    return ran


@pytest.mark.parametrize("gpus", [2, 8])
def test_check_smoke_runs_nccl_on_every_gpu_torch_sees(
    monkeypatch: pytest.MonkeyPatch, gpus: int
) -> None:
    """An 8-GPU node is vetted with 8 NCCL ranks, not the first 2."""
    assert _planned(monkeypatch, "cuda", gpus) == [(SmokeSpec("nccl", gpus, "cuda"), 42.0)]


def test_check_smoke_single_gpu_and_cpu_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [s for s, _ in _planned(monkeypatch, "cuda", 1)] == [
        SmokeSpec("nccl", 1, "cuda"),
        SmokeSpec("gloo", 2, "cpu"),
    ]
    assert [s for s, _ in _planned(monkeypatch, "cuda", 0)] == [GLOO_CPU]
    assert [s for s, _ in _planned(monkeypatch, "cpu", 8)] == [GLOO_CPU]


# --------------------------------------------------------------------------------- command


INHERITED = {
    "RANK": "3",
    "WORLD_SIZE": "8",
    "MASTER_ADDR": "10.0.0.1",
    "MASTER_PORT": "29500",
    "LOCAL_RANK": "1",
    "TORCHELASTIC_RUN_ID": "old-job",
    "PET_NPROC_PER_NODE": "8",
}


def test_smoke_launch_argv(tmp_path: Path) -> None:
    command = smoke_launch(GLOO_CPU, tmp_path, {})
    argv = command.argv
    assert argv[:3] == [sys.executable, "-m", "torch.distributed.run"]
    module_at = argv.index(WORKER_MODULE)
    assert argv[module_at - 1] == "-m"
    # torchrun's flags come before the worker module (after it they would go to the worker)
    for flag in ("--standalone", "--max-restarts=0", "--nproc-per-node=2", "--nnodes=1"):
        assert flag in argv[3 : module_at - 1], flag
    assert argv[module_at + 1] == "smoke"  # the program the entry runs
    worker_args = argv[module_at + 2 :]
    result_file = tmp_path / "result.json"
    assert worker_args == [
        "--backend", "gloo",
        "--device", "cpu",
        "--elements", str(SMOKE_ELEMENTS),
        "--iters", str(SMOKE_ITERS),
        "--out", str(result_file),
    ]  # fmt: skip
    # the worker accepts exactly these arguments
    parsed = smoke_worker._parse(worker_args)
    assert (parsed.backend, parsed.device, parsed.out) == ("gloo", "cpu", str(result_file))
    assert (command.nproc, command.log_dir, command.log_path) == (
        2,
        tmp_path,
        tmp_path / "torchrun.log",
    )


def test_smoke_launch_environment(tmp_path: Path) -> None:
    base = {
        **INHERITED,
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/u",
        "NCCL_DEBUG": "INFO",
        "OMP_NUM_THREADS": "16",
    }
    env = smoke_launch(GLOO_CPU, tmp_path, base).env
    for name in INHERITED:
        assert name not in env, name
    assert not [
        k for k in env if is_inherited_distributed_var(k) and k != "TORCHELASTIC_ERROR_FILE"
    ]
    assert env["PATH"] == "/usr/bin:/bin"
    assert env["HOME"] == "/home/u"
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["OMP_NUM_THREADS"] == "1"
    assert env["TORCHELASTIC_ERROR_FILE"] == str(tmp_path / "error.json")
    assert "CUDA_VISIBLE_DEVICES" not in env  # CPU ranks: the GPUs are none of their business
    assert base["RANK"] == "3"  # the caller's mapping is not modified


@pytest.mark.parametrize(
    ("inherited", "expected"),
    [(None, "0,1,2,3,4,5,6,7"), ("7,6,5,4,3,2,1,0", "7,6,5,4,3,2,1,0")],
)
def test_smoke_launch_on_8_gpus_hands_every_gpu_to_a_rank(
    tmp_path: Path, inherited: str | None, expected: str
) -> None:
    base = {} if inherited is None else {"CUDA_VISIBLE_DEVICES": inherited}
    command = smoke_launch(SmokeSpec("nccl", 8, "cuda"), tmp_path, base)
    assert "--nproc-per-node=8" in command.argv
    assert command.argv[command.argv.index("--backend") + 1] == "nccl"
    assert command.env["CUDA_VISIBLE_DEVICES"] == expected


def test_child_environment_extra_wins_and_strips() -> None:
    env = child_environment({"A": "1", "MASTER_PORT": "1", "PET_X": "y"}, {"A": "2", "B": "3"})
    assert env == {"A": "2", "B": "3"}


@pytest.mark.parametrize(
    ("name", "inherited"),
    [
        ("RANK", True),
        ("LOCAL_WORLD_SIZE", True),
        ("TORCHELASTIC_RESTART_COUNT", True),
        ("PET_RDZV_ENDPOINT", True),
        ("NCCL_DEBUG", False),
        ("RANKING", False),
        ("PATH", False),
    ],
)
def test_is_inherited_distributed_var(name: str, inherited: bool) -> None:
    assert is_inherited_distributed_var(name) is inherited


# ----------------------------------------------------------------------------------- judge


def outcome(
    tmp_path: Path,
    *,
    returncode: int | None = 0,
    timed_out: bool = False,
    wall_s: float = 6.4,
    log: str = "",
) -> ProcessOutcome:
    log_path = tmp_path / "torchrun.log"
    log_path.write_text(log)
    return ProcessOutcome(returncode, timed_out, wall_s, log_path)


def good_verdict(**changes: Any) -> dict[str, Any]:
    verdict = {
        "backend": "gloo",
        "device": "cpu",
        "world_size": 2,
        "elements": SMOKE_ELEMENTS,
        "bytes": SMOKE_ELEMENTS * 4,
        "iters": SMOKE_ITERS,
        "expected_value": 3.0,
        "wrong_elements": 0,
        "all_gather_ranks": [0, 1],
        "all_gather_ok": True,
        "seconds_per_all_reduce": 0.011,
        "algbw_gbps": 0.381,
        "busbw_gbps": 0.381,
        "torch_version": "2.13.0+cpu",
    }
    verdict.update(changes)
    return verdict


def test_judge_correct_result_passes(tmp_path: Path) -> None:
    result = judge_smoke(GLOO_CPU, outcome(tmp_path), good_verdict(), None)
    assert result.status is CheckStatus.PASS
    assert (result.id, result.title) == ("smoke_gloo_cpu", "Smoke test (gloo x2 on cpu)")
    assert shown.detail(result) == (
        "all_reduce of 4 MiB correct on 2 rank(s): 11.00 ms each, busbw "
        "0.38 GB/s; all_gather correct; 6.4 s wall"
    )
    assert result.data["result"]["wrong_elements"] == 0
    assert result.data["spec"] == {"backend": "gloo", "nproc": 2, "device": "cpu"}
    assert result.data["wall_s"] == 6.4
    assert shown.hint(result) == ""


def test_judge_eight_nccl_ranks_pass(tmp_path: Path) -> None:
    spec = SmokeSpec("nccl", 8, "cuda")
    verdict = good_verdict(
        backend="nccl",
        device="cuda",
        world_size=8,
        expected_value=36.0,
        all_gather_ranks=list(range(8)),
        seconds_per_all_reduce=0.0001,
        algbw_gbps=41.94,
        busbw_gbps=73.40,
    )
    result = judge_smoke(spec, outcome(tmp_path), verdict, None)
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert (result.id, result.title) == ("smoke_nccl_cuda", "Smoke test (nccl x8 on cuda)")
    assert shown.detail(result).startswith(
        "all_reduce of 4 MiB correct on 8 rank(s): 0.10 ms each, busbw 73.40 GB/s;"
    )


def test_judge_one_rank_prints_no_bus_bandwidth(tmp_path: Path) -> None:
    """busbw = algbw x 2(n-1)/n is 0 at one rank: meaningless, so it is not printed."""
    spec = SmokeSpec("nccl", 1, "cuda")
    verdict = good_verdict(
        backend="nccl",
        device="cuda",
        world_size=1,
        expected_value=1.0,
        all_gather_ranks=[0],
        busbw_gbps=None,
    )
    result = judge_smoke(spec, outcome(tmp_path), verdict, None)
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert shown.detail(result) == (
        "all_reduce of 4 MiB correct on 1 rank(s): 11.00 ms each, 1 rank: no bus bandwidth; "
        "all_gather correct; 6.4 s wall"
    )
    assert "busbw" not in shown.detail(result)


def test_judge_fewer_ranks_than_planned_fails(tmp_path: Path) -> None:
    """A verdict from 2 of 8 planned ranks must not declare an 8-GPU node ready."""
    spec = SmokeSpec("nccl", 8, "cuda")
    result = judge_smoke(spec, outcome(tmp_path), good_verdict(world_size=2), None)
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result) == "ran on 2 rank(s), expected 8"
    assert "CUDA_VISIBLE_DEVICES" in shown.hint(result)


def test_judge_wrong_elements_fail(tmp_path: Path) -> None:
    result = judge_smoke(GLOO_CPU, outcome(tmp_path), good_verdict(wrong_elements=3), None)
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result).startswith(
        "WRONG RESULTS: 3 wrong all_reduce element(s) (expected 3.0)"
    )
    assert "ECC" in shown.hint(result)
    assert result.data["result"]["wrong_elements"] == 3


def test_judge_bad_all_gather_fails(tmp_path: Path) -> None:
    verdict = good_verdict(all_gather_ok=False, all_gather_ranks=[0, 0])
    result = judge_smoke(GLOO_CPU, outcome(tmp_path), verdict, None)
    assert result.status is CheckStatus.FAIL
    assert "WRONG RESULTS: 0 wrong" in shown.detail(result)
    assert "all_gather ranks [0, 0]" in shown.detail(result)


def test_judge_incomplete_verdict_fails(tmp_path: Path) -> None:
    result = judge_smoke(GLOO_CPU, outcome(tmp_path), {"backend": "gloo"}, None)
    assert result.status is CheckStatus.FAIL
    assert "WRONG RESULTS" in shown.detail(result)


def test_judge_timeout_fails(tmp_path: Path) -> None:
    run = outcome(tmp_path, returncode=None, timed_out=True, wall_s=120.3, log="waiting\n")
    result = judge_smoke(GLOO_CPU, run, None, None)
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result).startswith("no result after 120 s")
    assert "killed" in shown.detail(result)
    assert f"full log: {run.log_path} (each rank's output under {tmp_path / 'ranks'})" in (
        shown.hint(result)
    )
    assert "GLOO_SOCKET_IFNAME" in shown.hint(result)


def test_judge_timeout_wins_over_a_verdict(tmp_path: Path) -> None:
    run = outcome(tmp_path, returncode=None, timed_out=True, wall_s=30)
    assert judge_smoke(GLOO_CPU, run, good_verdict(), None).status is CheckStatus.FAIL


def test_judge_crash_quotes_root_cause(tmp_path: Path) -> None:
    run = outcome(tmp_path, returncode=1, log="Traceback ...\n  boom\n=========\n")
    cause = "RuntimeError: Connection reset by peer"
    result = judge_smoke(GLOO_CPU, run, None, cause)
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result) == f"torchrun exited with 1: {cause}"
    assert (
        shown.hint(result)
        == f"full log: {run.log_path} (each rank's output under {tmp_path / 'ranks'})"
    )
    assert result.data["log_tail"].endswith("=========")


def test_judge_crash_without_root_cause_quotes_log(tmp_path: Path) -> None:
    log = "".join(f"line {i}\n" for i in range(20)) + "torch.distributed.DistNetworkError: nope\n"
    run = outcome(tmp_path, returncode=1, log=log)
    result = judge_smoke(GLOO_CPU, run, None, None)
    assert result.status is CheckStatus.FAIL
    assert (
        shown.detail(result) == "torchrun exited with 1: torch.distributed.DistNetworkError: nope"
    )
    assert len(result.data["log_tail"].splitlines()) == 8


def test_judge_crash_with_empty_log(tmp_path: Path) -> None:
    result = judge_smoke(GLOO_CPU, outcome(tmp_path, returncode=-9), None, None)
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result) == "torchrun exited with -9: no output"


def test_judge_exit_zero_without_verdict_fails(tmp_path: Path) -> None:
    result = judge_smoke(GLOO_CPU, outcome(tmp_path, returncode=0, log="done\n"), None, None)
    assert result.status is CheckStatus.FAIL
    assert "torchrun exited with 0: done" in shown.detail(result)


def test_judge_nonzero_exit_with_verdict_fails(tmp_path: Path) -> None:
    result = judge_smoke(GLOO_CPU, outcome(tmp_path, returncode=1), good_verdict(), "X: y")
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result) == "torchrun exited with 1: X: y"


# ---------------------------------------------------------------------------------- worker


@pytest.mark.parametrize(("world", "expected"), [(1, 1.0), (2, 3.0), (4, 10.0), (8, 36.0)])
def test_expected_sum(world: int, expected: float) -> None:
    assert smoke_worker.expected_sum(world) == expected


def test_count_wrong() -> None:
    result = torch.full((1000,), 10.0)
    assert smoke_worker.count_wrong(result, 4) == 0
    result[3] = 9.0
    result[997] = float("nan")
    assert smoke_worker.count_wrong(result, 4) == 2
    assert smoke_worker.count_wrong(result, 3) == 1000


@pytest.mark.parametrize(("world", "expected"), [(1, None), (2, 10.0), (4, 15.0), (8, 17.5)])
def test_bus_bandwidth(world: int, expected: float | None) -> None:
    assert smoke_worker.bus_bandwidth(10.0, world) == expected


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_worker_single_rank_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's verdict has what judge_smoke reads (one gloo rank, no torchrun)."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch without gloo")
    for name, value in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TORCHELASTIC_ERROR_FILE", raising=False)
    out = tmp_path / "verdict.json"
    harness.run(
        smoke_worker.PROGRAM,
        smoke_worker.PROGRAM.read(
            [
                "--backend",
                "gloo",
                "--device",
                "cpu",
                "--elements",
                "4096",
                "--iters",
                "2",
                "--out",
                str(out),
            ]
        ),
    )
    assert not dist.is_initialized()
    verdict = json.loads(out.read_text())
    assert verdict["world_size"] == 1
    assert verdict["wrong_elements"] == 0
    assert verdict["expected_value"] == 1.0
    assert verdict["all_gather_ranks"] == [0]
    assert verdict["all_gather_ok"] is True
    assert verdict["bytes"] == 4096 * 4
    assert verdict["busbw_gbps"] is None  # one rank: no bus bandwidth
    assert verdict["algbw_gbps"] > 0
    assert [p.name for p in tmp_path.iterdir()] == ["verdict.json"]
    result = judge_smoke(SmokeSpec("gloo", 1, "cpu"), outcome(tmp_path), verdict, None)
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert "1 rank: no bus bandwidth" in shown.detail(result)


# ------------------------------------------------------------------------------- real runs


@pytest.mark.slow  # a real torchrun smoke run
def test_failing_smoke_run_names_root_cause_and_keeps_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real torchrun whose worker raises (NCCL asked to run on the CPU): FAIL, not a hang,
    with the rank's exception (from torchelastic's error file) as the detail."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = run_smoke(SmokeSpec("nccl", 1, "cpu"), 60.0, dict(os.environ))
    assert result.status is CheckStatus.FAIL
    assert result.id == "smoke_nccl_cpu"
    assert shown.detail(result).startswith("torchrun exited with 1: ")
    cause = shown.detail(result).removeprefix("torchrun exited with 1: ")
    assert "Error" in cause.split(":")[0], cause  # an exception line, not a log separator
    assert "=====" not in cause
    assert shown.hint(result).startswith("full log: ")
    log = Path(shown.hint(result).removeprefix("full log: ").split(" (")[0])
    assert log.is_file()
    assert log.name == "torchrun.log"
    assert log.parent.parent == tmp_path
    assert log.parent.name.startswith("torchscale-validate-")
    assert (log.parent / "error.json").is_file()  # the shared builder's error file was read
    assert cause in log.read_text() or any(
        cause in p.read_text() for p in (log.parent / "ranks").rglob("*.log")
    )
    assert result.data["log_tail"]


def _fake_launch(
    monkeypatch: pytest.MonkeyPatch, verdict: dict[str, Any] | None, error: str | None
) -> list[LaunchCommand]:
    """Replace the launch: write what the ranks would have written, return an outcome."""
    launched: list[LaunchCommand] = []

    def run_launch(
        command: LaunchCommand, timeout_s: float, finished: Any = None
    ) -> ProcessOutcome:
        launched.append(command)
        command.log_path.write_text("torchrun output\n")
        if verdict is not None:
            (command.log_dir / "result.json").write_text(json.dumps(verdict))
        if error is not None:
            message = {"message": f"Traceback (most recent call last):\n  ...\n{error}\n"}
            command.error_file.write_text(json.dumps({"message": message}))
        code = 0 if error is None else 1
        return ProcessOutcome(code, False, 1.5, command.log_path)

    monkeypatch.setattr(attempt, "run_launch", run_launch)
    return launched


def test_run_smoke_passing_run_removes_its_work_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    launched = _fake_launch(monkeypatch, good_verdict(), None)
    result = run_smoke(GLOO_CPU, 30.0, {"PATH": "/bin"})
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert len(launched) == 1
    assert launched[0].log_dir.parent == tmp_path
    assert not launched[0].log_dir.exists()


def test_run_smoke_reads_the_shared_error_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    launched = _fake_launch(monkeypatch, None, "ValueError: bad device")
    result = run_smoke(SmokeSpec("nccl", 8, "cuda"), 30.0, {})
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result) == "torchrun exited with 1: ValueError: bad device"
    assert launched[0].error_file == launched[0].log_dir / "error.json"
    assert launched[0].log_dir.is_dir()  # kept for the person reading the hint


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_run_smoke_unreadable_verdict_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    launched: list[LaunchCommand] = []

    def run_launch(
        command: LaunchCommand, timeout_s: float, finished: Any = None
    ) -> ProcessOutcome:
        launched.append(command)
        command.log_path.write_text("done\n")
        (command.log_dir / "result.json").write_text(content)
        return ProcessOutcome(0, False, 1.0, command.log_path)

    monkeypatch.setattr(attempt, "run_launch", run_launch)
    result = run_smoke(GLOO_CPU, 30.0, {})
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result) == "torchrun exited with 0: done"


def _live_group_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that are not zombies (Linux /proc)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            live.append(int(entry.name))
    return live


def _wait_until_gone(pgid: int, within_s: float = 3.0) -> list[int]:
    """Live members of group `pgid` once they are gone, or after `within_s` (signal delivery
    to the other members of a group is asynchronous)."""
    deadline = time.monotonic() + within_s
    while (live := _live_group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return live


def _kill_stray(pid: int, pgid: int) -> None:
    """SIGKILL `pid` if it is still a live member of the test's process group `pgid` (so a
    recycled pid is never touched)."""
    if pid in _live_group_members(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


@pytest.mark.slow
@needs_proc
def test_run_logged_kills_hung_process_group(tmp_path: Path) -> None:
    code = (
        "import os, subprocess, sys, time\n"
        "print(os.getpid(), flush=True)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    run = run_logged([sys.executable, "-c", code], dict(os.environ), tmp_path / "hung.log", 1.0)
    pids = [int(x) for x in run.log_tail().split()]
    try:
        assert run.timed_out is True
        assert run.returncode is None
        assert run.wall_s >= 1.0  # it ran until its timeout, then was killed
        leader = pids[0]
        assert os.getpgid(0) != leader  # it ran in its own process group
        with pytest.raises(ProcessLookupError):
            os.kill(leader, 0)  # dead and reaped
        assert _wait_until_gone(leader) == []  # its child died with it
    finally:
        for pid in pids[1:]:
            _kill_stray(pid, pids[0])


@pytest.mark.slow
@needs_proc
def test_run_logged_sigkills_descendants_that_ignore_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "TERM_GRACE_S", 0.5)
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    code = (
        "import os, subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', {stubborn!r}], stdout=subprocess.PIPE)\n"
        "child.stdout.readline()\n"  # SIGTERM is ignored from here on
        "print(os.getpid(), child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    run = run_logged([sys.executable, "-c", code], dict(os.environ), tmp_path / "hung.log", 2.0)
    pids = [int(x) for x in run.log_tail().split()]
    try:
        assert run.timed_out is True
        assert len(pids) == 2, "the test's own set-up did not finish in time"
        assert _wait_until_gone(pids[0], within_s=2.0) == []
    finally:
        for pid in pids[1:]:
            _kill_stray(pid, pids[0])


@pytest.mark.slow  # starts a launched command
def test_run_logged_captures_output_and_exit_code(tmp_path: Path) -> None:
    code = (
        "import os, sys; print('to stdout', os.environ['SMOKE_TEST_VAR'], flush=True); "
        "print('to stderr', file=sys.stderr, flush=True); print(os.getcwd()); sys.exit(3)"
    )
    log = tmp_path / "logs" / "run.log"
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    run = run_logged(
        [sys.executable, "-c", code],
        {**os.environ, "SMOKE_TEST_VAR": "xyz"},
        log,
        30.0,
        cwd=workdir,
    )
    assert run.returncode == 3
    assert run.timed_out is False
    assert run.log_path == log
    text = log.read_text()
    assert "to stdout xyz" in text
    assert "to stderr" in text
    assert str(workdir) in text
    assert run.log_tail(1) == str(workdir)


def test_log_tail_of_missing_log_is_empty(tmp_path: Path) -> None:
    assert ProcessOutcome(1, False, 0.1, tmp_path / "nope.log").log_tail() == ""


# ---------------------------------------------------------------------------- atomic write


def test_write_text_atomic_writes_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "result.json"
    assert write_text_atomic(target, '{"a": "µ"}\n') == target
    assert target.read_text(encoding="utf-8") == '{"a": "µ"}\n'
    assert [p.name for p in target.parent.iterdir()] == ["result.json"]


def test_write_text_atomic_replaces_existing(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    target.write_text("old content that is longer than the new one")
    write_text_atomic(str(target), "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_write_text_atomic_failure_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep").write_text("x")  # a non-empty directory cannot be replaced by a file
    with pytest.raises(OSError):
        write_text_atomic(target, "data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (target / "keep").read_text() == "x"


def test_write_text_atomic_honours_the_umask(tmp_path: Path) -> None:
    """Result files get the usual permissions, not mkstemp's private 0600."""
    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
