"""Launching a cell, as data: the torchrun argv, the child environment, and how a run that left
no result is classified (timeout, oom, failed with its root-cause rank, killed by a signal).
Nothing is started."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from torchscale.contracts.cell import Device
from torchscale.contracts.rank_diagnostics import DIAGNOSTICS_ENV
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.launch import process
from torchscale.orchestration.launch.attempt import run_attempt
from torchscale.orchestration.launch.error_files import read_error_file
from torchscale.orchestration.launch.failure import classify_failure, root_cause
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.launch.torchrun import (
    LaunchCommand,
    torchrun_command,
    visible_devices,
)
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import WORKER_MODULE

INHERITED = {
    "RANK": "3",
    "WORLD_SIZE": "8",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "4",
    "GROUP_RANK": "0",
    "MASTER_ADDR": "10.0.0.1",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "old-job",
    "TORCHELASTIC_RESTART_COUNT": "0",
    "TORCHELASTIC_ERROR_FILE": "/old/error.json",
    "PET_NPROC_PER_NODE": "8",
    "PET_RDZV_ENDPOINT": "elsewhere:29400",
}
KEPT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/me",
    "RANKING": "keep",  # not RANK
    "MY_RANK": "keep",
    "NCCL_DEBUG": "WARN",
    "OMP_NUM_THREADS": "16",  # inherited, replaced by ours
}
CELL_ID = "tiny-mlp__b8__w2__fp32__ddp__0123abcd"


def make_config(**overrides: Any) -> BenchConfig:
    data: dict[str, Any] = {
        "experiment_name": "launch",
        "models": ["tiny-mlp"],
        "batch_sizes": [8],
        "gpu_counts": [1, 2, 4],
        "device": "cpu",
    }
    data.update(overrides)
    return BenchConfig.model_validate(data)


def command(
    tmp_path: Path,
    world: int = 2,
    device: Device = "cpu",
    base_env: dict[str, str] | None = None,
    omp_num_threads: int = 1,
    **kwargs: Any,
) -> LaunchCommand:
    """The benchmark worker's launch, as the plan builds it."""
    return torchrun_command(
        WORKER_MODULE,
        ["--spec", str(tmp_path / "specs" / f"{CELL_ID}.json")],
        nproc=world,
        device=device,
        log_dir=tmp_path / "logs" / CELL_ID,
        base_env={**INHERITED, **KEPT} if base_env is None else base_env,
        omp_num_threads=omp_num_threads,
        **kwargs,
    )


# ------------------------------------------------------------------------------------ argv


@pytest.mark.parametrize("world", [1, 2, 4])
def test_torchrun_argv(tmp_path: Path, world: int) -> None:
    cmd = command(tmp_path, world)
    argv = cmd.argv
    assert argv[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--standalone" in argv
    assert f"--nproc-per-node={world}" in argv
    assert "--max-restarts=0" in argv
    log_dir = Path(argv[argv.index("--log-dir") + 1])
    assert log_dir.is_relative_to(tmp_path / "logs" / CELL_ID)
    worker = argv.index("-m", 3)
    assert argv[worker : worker + 2] == ["-m", WORKER_MODULE]
    assert argv[worker + 2 :] == ["--spec", str(tmp_path / "specs" / f"{CELL_ID}.json")]
    # every torchrun option comes before the worker module; after it only the worker's own
    assert [a for a in argv[worker:] if a.startswith("--")] == ["--spec"]
    assert cmd.log_dir == tmp_path / "logs" / CELL_ID
    assert cmd.error_file.parent == cmd.log_dir
    assert cmd.log_path.parent == cmd.log_dir
    assert cmd.nproc == world


def test_argv_parses_with_torchruns_own_parser(tmp_path: Path) -> None:
    from torch.distributed.run import get_args_parser

    cmd = command(tmp_path, 2)
    args = get_args_parser().parse_args(cmd.argv[3:])
    assert args.standalone is True
    assert str(args.nproc_per_node) == "2"
    assert args.max_restarts == 0
    assert Path(args.log_dir).is_relative_to(cmd.log_dir)
    assert args.module is True
    assert args.training_script == WORKER_MODULE
    assert args.training_script_args[0] == "--spec"


def test_custom_python(tmp_path: Path) -> None:
    cmd = command(tmp_path, 1, python="/opt/py/bin/python3")
    assert cmd.argv[0] == "/opt/py/bin/python3"


# ------------------------------------------------------------------------------------- env


def test_env_strips_inherited_distributed_variables(tmp_path: Path) -> None:
    cmd = command(tmp_path, 2)
    for name in INHERITED:
        if name == "TORCHELASTIC_ERROR_FILE":
            continue
        assert name not in cmd.env, name
    assert not [k for k in cmd.env if k.startswith("PET_")]
    assert [k for k in cmd.env if k.startswith("TORCHELASTIC_")] == ["TORCHELASTIC_ERROR_FILE"]
    for name in ("PATH", "HOME", "RANKING", "MY_RANK", "NCCL_DEBUG"):
        assert cmd.env[name] == KEPT[name]


def test_env_sets_error_file_per_cell(tmp_path: Path) -> None:
    cmd = command(tmp_path, 2)
    assert cmd.env["TORCHELASTIC_ERROR_FILE"] == str(cmd.error_file)
    assert cmd.error_file != Path(INHERITED["TORCHELASTIC_ERROR_FILE"])
    assert cmd.error_file.is_relative_to(cmd.log_dir)
    assert cmd.env_overrides["TORCHELASTIC_ERROR_FILE"] == str(cmd.error_file)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_env_names_the_diagnostics_dir_for_every_rank(tmp_path: Path, device: Device) -> None:
    cmd = command(tmp_path, 2, device=device, base_env=dict(KEPT))
    assert cmd.env[DIAGNOSTICS_ENV] == str(cmd.diagnostics_dir)
    assert cmd.diagnostics_dir.is_relative_to(cmd.log_dir)


def test_cuda_cells_turn_on_the_nccl_flight_recorder(tmp_path: Path) -> None:
    cuda = command(tmp_path, 2, device="cuda", base_env=dict(KEPT))
    assert int(cuda.env["TORCH_FR_BUFFER_SIZE"]) > 0  # the name torch >= 2.11 reads
    assert cuda.env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    dump = Path(cuda.env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"])
    assert dump.parent == cuda.diagnostics_dir  # kept with the logs, listed as artifacts
    cpu = command(tmp_path, 2, device="cpu", base_env=dict(KEPT))
    assert not [k for k in cpu.env_overrides if k.startswith("TORCH_NCCL_")]


@pytest.mark.parametrize(
    ("version", "names"),
    [
        ((2, 11), {"TORCH_FR_BUFFER_SIZE"}),  # the old name set beside it draws a warning
        ((3, 0), {"TORCH_FR_BUFFER_SIZE"}),
        ((2, 10), {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}),
        ((2, 6), {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}),
        (None, {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}),
    ],
)
def test_the_flight_recorder_size_goes_by_the_name_the_installed_torch_reads(
    version: tuple[int, int] | None, names: set[str]
) -> None:
    from torchscale.orchestration.launch.torchrun import flight_recorder_size

    sizes = flight_recorder_size(version)
    assert set(sizes) == names
    assert all(int(size) > 0 for size in sizes.values())


def test_the_installed_torch_is_read_from_its_metadata() -> None:
    import torch

    from torchscale.orchestration.launch.torchrun import installed_torch

    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    assert installed_torch() == (major, minor)


@pytest.mark.parametrize("threads", [1, 3, 16])
def test_omp_num_threads_is_always_set_explicitly(tmp_path: Path, threads: int) -> None:
    for world in (1, 2):  # torchrun itself sets 1 only for nproc > 1
        cmd = command(tmp_path, world, omp_num_threads=threads)
        assert cmd.env["OMP_NUM_THREADS"] == str(threads)  # the inherited 16 is replaced
        assert cmd.env_overrides["OMP_NUM_THREADS"] == str(threads)
        assert cmd.omp_num_threads == threads


def test_recorded_omp_threads_match_the_child_env(tmp_path: Path) -> None:
    cmd = command(tmp_path, 1, extra_env={"OMP_NUM_THREADS": "4"})
    assert cmd.env["OMP_NUM_THREADS"] == "4"  # an explicit launcher.env value wins
    assert cmd.omp_num_threads == int(cmd.env["OMP_NUM_THREADS"])


def test_cuda_cell_gets_first_n_of_inherited_devices(tmp_path: Path) -> None:
    env = {**KEPT, "CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    cmd = command(tmp_path, 2, device="cuda", base_env=env)
    assert cmd.env["CUDA_VISIBLE_DEVICES"] == "4,5"
    assert cmd.env_overrides["CUDA_VISIBLE_DEVICES"] == "4,5"
    cmd = command(tmp_path, 4, device="cuda", base_env=env)
    assert cmd.env["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"


def test_cuda_cell_without_inherited_devices(tmp_path: Path) -> None:
    cmd = command(tmp_path, 2, device="cuda", base_env=dict(KEPT))
    assert cmd.env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_cpu_cell_sets_no_cuda_devices(tmp_path: Path) -> None:
    cmd = command(tmp_path, 2, device="cpu")
    assert "CUDA_VISIBLE_DEVICES" not in cmd.env_overrides


@pytest.mark.parametrize(
    ("inherited", "count", "expected"),
    [
        (None, 1, "0"),
        (None, 3, "0,1,2"),
        ("", 2, "0,1"),
        ("3", 1, "3"),
        (" 2, 3 ,5", 2, "2,3"),
        ("GPU-aaa,GPU-bbb", 1, "GPU-aaa"),
    ],
)
def test_visible_devices(inherited: str | None, count: int, expected: str) -> None:
    assert visible_devices(inherited, count) == expected


def test_extra_env_is_applied(tmp_path: Path) -> None:
    extra = {"PYTHONPATH": "/repo", "NCCL_DEBUG": "INFO", "GLOO_SOCKET_IFNAME": "lo"}
    cmd = command(tmp_path, 2, extra_env=extra)
    for key, value in extra.items():
        assert cmd.env[key] == value
        assert cmd.env_overrides[key] == value


def test_planned_cell_command_takes_launcher_settings_from_the_config(tmp_path: Path) -> None:
    config = make_config(launcher={"omp_num_threads": 3, "env": {"PYTHONPATH": "/repo"}})
    planned = next(p for p in build_plan(config, Machine(0, 2)) if p.cell.world_size == 2)
    spec = tmp_path / "spec.json"
    cmd = planned.command(spec, tmp_path / "logs", {**INHERITED, **KEPT})
    assert cmd.argv[-2:] == ["--spec", str(spec)]
    assert cmd.log_dir == tmp_path / "logs"
    assert cmd.env["OMP_NUM_THREADS"] == "3"
    assert cmd.env["PYTHONPATH"] == "/repo"
    assert "RANK" not in cmd.env


# ------------------------------------------------------------------------ failure classes

ROOT_CAUSE_LOG = """\
[W1121 19:57:21] Sending process 11234 closing signal SIGTERM
E1121 19:57:21 failed (exitcode: 1) local_rank: 1 (pid: 11235) of binary: python
Traceback (most recent call last):
  File "torch/distributed/run.py", line 1, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
torchscale.rank.worker.main FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-21_19:57:22
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 11234)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 11234
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-21_19:57:21
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 11235)
  error_file: /tmp/x/attempt_0/1/error.json
  traceback : Traceback (most recent call last):
    File "tests/fault_models.py", line 32, in forward
      raise RuntimeError(f"injected failure on rank {_rank()}")
  RuntimeError: boom on rank 1
============================================================
"""


def cell(tmp_path: Path) -> LaunchCommand:
    """A launch whose log is tmp_path/torchrun.log and error file tmp_path/error.json."""
    return torchrun_command(
        WORKER_MODULE, [], nproc=2, device="cpu", log_dir=tmp_path, base_env={}, omp_num_threads=1
    )


def outcome(
    tmp_path: Path, log: str, returncode: int | None = 1, timed_out: bool = False
) -> ProcessOutcome:
    path = cell(tmp_path).log_path
    path.write_text(log, encoding="utf-8")
    return ProcessOutcome(returncode, timed_out, 3.5, path)


def error_file(tmp_path: Path, message: str, nested: bool = True) -> Path:
    path = cell(tmp_path).error_file
    body: Any = {"message": message, "extraInfo": {"py_callstack": "...", "timestamp": "1"}}
    path.write_text(json.dumps({"message": body if nested else message}), encoding="utf-8")
    return path


def test_timeout_without_stack_dumps(tmp_path: Path) -> None:
    failure = classify_failure(
        outcome(tmp_path, "started\nstill going\n", returncode=None, timed_out=True),
        cell(tmp_path),
        15.0,
    )
    assert failure.status == "timeout"
    assert failure.reason.startswith("killed after the 15 s cell timeout")
    assert "no rank dumped its stack" in failure.reason
    assert failure.root_cause_rank is None
    assert failure.exception is None
    assert failure.places == ()
    assert "still going" in failure.log_tail


def test_timeout_wins_over_an_error_file(tmp_path: Path) -> None:
    error_file(tmp_path, "RuntimeError: x")
    failure = classify_failure(outcome(tmp_path, ROOT_CAUSE_LOG, None, True), cell(tmp_path), 30)
    assert failure.status == "timeout"


def test_oom_from_the_error_file(tmp_path: Path) -> None:
    message = (
        "Traceback (most recent call last):\n  File ...\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a "
        "total capacity of 79.11 GiB of which 3.12 GiB is free."
    )
    error_file(tmp_path, message)
    failure = classify_failure(outcome(tmp_path, ROOT_CAUSE_LOG), cell(tmp_path), 60)
    assert failure.status == "oom"
    assert failure.exception is not None
    assert failure.exception.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert "Tried to allocate 20.00 GiB" in failure.reason  # the numbers are kept
    assert failure.root_cause_rank == 1


def test_cpu_oom_from_the_log_without_error_file(tmp_path: Path) -> None:
    log = (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: "
        "can't allocate memory: you tried to allocate 999 bytes\n"
    )
    failure = classify_failure(outcome(tmp_path, log), cell(tmp_path), 60)
    assert failure.status == "oom"


def test_root_cause_rank_and_exception(tmp_path: Path) -> None:
    error_file(tmp_path, "RuntimeError: boom on rank 1")
    failure = classify_failure(outcome(tmp_path, ROOT_CAUSE_LOG), cell(tmp_path), 60)
    assert failure.status == "failed"
    assert failure.root_cause_rank == 1  # the Root Cause block, not the first "rank :" line
    assert failure.exception == "RuntimeError: boom on rank 1"
    assert failure.reason == "rank 1 raised RuntimeError: boom on rank 1"
    assert failure.exit_signal is None
    error = failure.as_error()
    assert error.root_cause_rank == 1
    assert error.exception == "RuntimeError: boom on rank 1"
    assert error.log_tail is not None
    assert "RuntimeError: boom on rank 1" in error.log_tail


def test_root_cause_rank_from_the_log_alone(tmp_path: Path) -> None:
    failure = classify_failure(outcome(tmp_path, ROOT_CAUSE_LOG), cell(tmp_path), 60)
    assert failure.status == "failed"
    assert failure.root_cause_rank == 1
    assert failure.exception is None
    assert failure.exit_signal is None  # exit code 1: no signal (rank 0's -15 is not the cause)
    assert failure.reason == "torchrun exited with 1"


@pytest.mark.parametrize("returncode", [1, 3])
def test_no_error_file_reason_names_the_exit_code(tmp_path: Path, returncode: int) -> None:
    failure = classify_failure(
        outcome(tmp_path, "something went wrong\n", returncode), cell(tmp_path), 60
    )
    assert failure.status == "failed"
    assert failure.reason == f"torchrun exited with {returncode}"
    assert failure.root_cause_rank is None
    assert failure.exception is None
    assert failure.exit_signal is None


def test_unreadable_error_file_is_ignored(tmp_path: Path) -> None:
    cell(tmp_path).error_file.write_text("{not json", encoding="utf-8")
    failure = classify_failure(outcome(tmp_path, "x\n", 2), cell(tmp_path), 60)
    assert failure.status == "failed"
    assert failure.exception is None
    assert failure.reason == "torchrun exited with 2"


def test_missing_log_is_tolerated(tmp_path: Path) -> None:
    gone = ProcessOutcome(1, False, 0.1, tmp_path / "never-written.log")
    failure = classify_failure(gone, cell(tmp_path), 60)
    assert failure.status == "failed"
    assert failure.log_tail == ""


def test_log_tail_is_the_last_lines(tmp_path: Path) -> None:
    log = "".join(f"line {i}\n" for i in range(100))
    failure = classify_failure(outcome(tmp_path, log), cell(tmp_path), 60)
    lines = failure.log_tail.splitlines()
    assert lines[-1] == "line 99"
    assert "line 0" not in lines
    assert 10 <= len(lines) <= 50


@pytest.mark.parametrize("nested", [True, False])
def test_read_error_file_formats(tmp_path: Path, nested: bool) -> None:
    path = error_file(tmp_path, "Traceback ...\n  File x\nValueError: bad value\n", nested)
    assert read_error_file(path) == "ValueError: bad value"


# --------------------------------------------------------------------- killed by a signal

# torchrun's log (torch 2.13.0+cpu) when rank 1 of 2 sent itself SIGKILL (tests/hang_worker.py
# --fault signal:9), verbatim but for paths and the traceback of torchrun's own frames
SIGKILL_LOG = """\
W1122 07:36:27.046000 3736 torch/distributed/elastic/multiprocessing/api.py:1028] Sending \
process 3816 closing signal SIGTERM
E1122 07:36:27.062000 3736 torch/distributed/elastic/multiprocessing/api.py:1002] failed \
(exitcode: -9) local_rank: 1 (pid: 3817) of binary: /work/main/.venv/bin/python
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n\
======================================================
tests.hang_worker FAILED
------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-22_07:36:27
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 3816)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 3816
------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-22_07:36:27
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 3817)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 3817
======================================================
"""


def killed_log(signum: int, name: str) -> str:
    """The real SIGKILL log with another signal in the root cause (same format)."""
    return (
        SIGKILL_LOG.replace("(exitcode: -9)", f"(exitcode: -{signum})")
        .replace(
            "exitcode  : -9 (pid: 3817)  (SIGKILL)", f"exitcode  : -{signum} (pid: 3817)  ({name})"
        )
        .replace(
            "Signal 9 (SIGKILL) received by PID 3817",
            f"Signal {signum} ({name}) received by PID 3817",
        )
    )


def test_rank_killed_by_sigkill_real_torchrun_log(tmp_path: Path) -> None:
    failure = classify_failure(outcome(tmp_path, SIGKILL_LOG), cell(tmp_path), 60)
    assert failure.status == "failed"
    assert failure.reason == (
        "rank 1 was killed by SIGKILL (signal 9), often the kernel's OOM killer: see dmesg"
    )
    assert failure.root_cause_rank == 1
    assert failure.exit_signal == "SIGKILL"
    assert failure.as_error().exit_signal == "SIGKILL"


@pytest.mark.parametrize(
    ("signum", "name", "cause"),
    [
        (11, "SIGSEGV", "segmentation fault"),
        (6, "SIGABRT", "aborted in native code"),
        (7, "SIGBUS", "/dev/shm too small"),
        (15, "SIGTERM", "stopped it"),
    ],
)
def test_rank_killed_by_a_signal_names_it_and_its_likely_cause(
    tmp_path: Path, signum: int, name: str, cause: str
) -> None:
    failure = classify_failure(outcome(tmp_path, killed_log(signum, name)), cell(tmp_path), 60)
    assert failure.reason.startswith(f"rank 1 was killed by {name} (signal {signum}), ")
    assert cause in failure.reason
    assert failure.exit_signal == name
    assert failure.root_cause_rank == 1


def test_root_cause_from_the_agent_line_when_the_block_is_missing() -> None:
    """The agent's line names a local rank and a pid, not a global rank."""
    (line,) = [x for x in SIGKILL_LOG.splitlines() if "failed (exitcode" in x]
    first = root_cause(line)
    assert (first.rank, first.local_rank, first.pid) == (None, 1, 3817)
    assert (first.exitcode, first.signum) == (-9, 9)
    assert root_cause("nothing here").signum is None


def test_a_one_node_launch_names_the_rank_of_the_agent_line(tmp_path: Path) -> None:
    """On one node (`--standalone`) the local rank is the global rank."""
    (line,) = [x for x in SIGKILL_LOG.splitlines() if "failed (exitcode" in x]
    failure = classify_failure(outcome(tmp_path, line + "\n"), cell(tmp_path), 60)
    assert failure.root_cause_rank == 1
    assert failure.reason.startswith("rank 1 was killed by SIGKILL")


def test_torchrun_itself_killed_by_a_signal(tmp_path: Path) -> None:
    failure = classify_failure(outcome(tmp_path, "starting\n", returncode=-9), cell(tmp_path), 60)
    assert failure.reason.startswith("torchrun was killed by SIGKILL (signal 9)")
    assert failure.exit_signal == "SIGKILL"


def test_an_exception_wins_over_a_signal(tmp_path: Path) -> None:
    error_file(tmp_path, "RuntimeError: boom")
    failure = classify_failure(outcome(tmp_path, SIGKILL_LOG), cell(tmp_path), 60)
    assert failure.reason == "rank 1 raised RuntimeError: boom"


def _rank_error(tmp_path: Path, local_rank: int, message: str, node: str | None = None) -> None:
    base = tmp_path / "ranks" / (node or "") / "run-x" / "attempt_0" / str(local_rank)
    base.mkdir(parents=True)
    body = {"message": {"message": message, "extraInfo": {"timestamp": "1"}}}
    (base / "error.json").write_text(json.dumps(body), encoding="utf-8")


GLOO_PEER = (
    "RuntimeError: [third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
    "[127.0.0.1]:1234. This is typically caused by a remote worker crashing."
)


def test_a_peer_that_closed_the_socket_is_not_the_root_cause(tmp_path: Path) -> None:
    """Under load rank 0's collective error (its peer died) can be timestamped before rank 1's
    own exception; the rank that failed on its own is named (seen in a CI run)."""
    error_file(tmp_path, GLOO_PEER)
    _rank_error(tmp_path, 0, GLOO_PEER)
    _rank_error(tmp_path, 1, "RuntimeError: injected failure on rank 1")
    log = ROOT_CAUSE_LOG.replace("rank      : 1 (local_rank: 1)", "rank      : 0 (local_rank: 0)")
    failure = classify_failure(outcome(tmp_path, log), cell(tmp_path), 60)
    assert failure.status == "failed"
    assert failure.root_cause_rank == 1
    assert failure.reason == "rank 1 raised RuntimeError: injected failure on rank 1"


def test_only_secondary_errors_keep_torchruns_choice(tmp_path: Path) -> None:
    error_file(tmp_path, GLOO_PEER)
    _rank_error(tmp_path, 0, GLOO_PEER)
    log = ROOT_CAUSE_LOG.replace("rank      : 1 (local_rank: 1)", "rank      : 0 (local_rank: 0)")
    failure = classify_failure(outcome(tmp_path, log), cell(tmp_path), 60)
    assert failure.root_cause_rank == 0 and "Connection closed by peer" in failure.reason


def test_another_nodes_rank_is_named_without_a_guessed_number(tmp_path: Path) -> None:
    error_file(tmp_path, GLOO_PEER)
    _rank_error(tmp_path, 0, GLOO_PEER, node="node0")
    _rank_error(tmp_path, 0, "ValueError: bad shard", node="node1")
    failure = classify_failure(outcome(tmp_path, ROOT_CAUSE_LOG), cell(tmp_path), 60)
    assert failure.root_cause_rank is None
    assert failure.reason == "a rank raised ValueError: bad shard"


def test_a_node_that_lost_the_rendezvous_store_is_not_the_root_cause(tmp_path: Path) -> None:
    """Seen under Slurm: rank 1 fails on node 1, node 0's torchrun (hosting the store) stops,
    and node 1's torchrun records RendezvousConnectionError over its worker's error."""
    lost = (
        "RendezvousConnectionError: The connection to the C10d store has failed. See inner "
        "exception for details."
    )
    error_file(tmp_path, "SignalException: Process 1 got signal: 15")
    node1 = cell(tmp_path).error_file
    node1 = node1.with_name(f"{node1.stem}-node1{node1.suffix}")
    body = {"message": {"message": lost, "extraInfo": {"timestamp": "1"}}}
    node1.write_text(json.dumps(body), encoding="utf-8")
    _rank_error(tmp_path, 0, "RuntimeError: injected failure on rank 1", node="node1")
    failure = classify_failure(outcome(tmp_path, ROOT_CAUSE_LOG), cell(tmp_path), 60)
    assert failure.reason == "a rank raised RuntimeError: injected failure on rank 1"


# ------------------------------------------------------------------------ one launch, read


def _script_command(tmp_path: Path, script: str) -> LaunchCommand:
    """A launch whose 'ranks' are one plain Python process running `script` (run_attempt
    cares what was written and how the process ended, not that it is torchrun)."""
    log_dir = tmp_path / "logs"
    return LaunchCommand(
        argv=[sys.executable, "-c", script],
        env={"PATH": "/usr/bin:/bin"},
        env_overrides={},
        omp_num_threads=1,
        nproc=1,
        error_file=log_dir / "error.json",
        log_dir=log_dir,
    )


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def _ends_in_process(
    monkeypatch: pytest.MonkeyPatch, returncode: int, log: str, written: tuple[Path, str] | None
) -> None:
    """The launch's process stood in for in-process: the one call that starts it
    (launch.process.run_logged) writes what the script would have (`written`: a file and its
    text), leaves `log` as its output and ends with `returncode`."""

    def run_logged(
        argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float, **_: Any
    ) -> ProcessOutcome:
        if written is not None:
            written[0].write_text(written[1], encoding="utf-8")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(log, encoding="utf-8")
        return ProcessOutcome(returncode, False, 0.1, log_path)

    monkeypatch.setattr(process, "run_logged", run_logged)


@pytest.mark.slow
def test_a_result_written_before_a_hung_shutdown_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    script = f"import time, pathlib; pathlib.Path({str(out)!r}).write_text('42'); time.sleep(60)"
    attempt = run_attempt(_script_command(tmp_path, script), 3.0, lambda: _read(out))
    assert attempt.outcome.timed_out
    assert attempt.written == "42" and attempt.failure is None
    assert any(
        "killed in their shutdown; measurement kept" in warning_words(w) for w in attempt.warnings
    )


@pytest.mark.slow  # starts a launched command
def test_a_result_written_before_a_bad_exit_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    script = f"import pathlib, sys; pathlib.Path({str(out)!r}).write_text('7'); sys.exit(3)"
    attempt = run_attempt(_script_command(tmp_path, script), 30.0, lambda: _read(out))
    assert attempt.written == "7" and attempt.failure is None
    assert [warning_words(w) for w in attempt.warnings] == [
        f"torchrun exited with 3 after the result was written (shutdown failure; measurement "
        f"kept): see {tmp_path / 'logs'}"
    ]


def test_a_result_written_before_a_nonzero_exit_is_kept_with_the_exit_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "result.txt"
    _ends_in_process(monkeypatch, 3, "", (out, "7"))
    attempt = run_attempt(_script_command(tmp_path, "exit 3"), 30.0, lambda: _read(out))
    assert attempt.written == "7" and attempt.failure is None
    assert attempt.launch_failure is not None  # how it ended stays known to its caller
    assert [warning_words(w) for w in attempt.warnings] == [
        f"torchrun exited with 3 after the result was written (shutdown failure; measurement "
        f"kept): see {tmp_path / 'logs'}"
    ]


@pytest.mark.slow  # starts a launched command
def test_a_launch_that_wrote_nothing_is_a_classified_failure(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    script = "raise SystemExit('boom')"
    attempt = run_attempt(_script_command(tmp_path, script), 30.0, lambda: _read(out))
    assert attempt.written is None and attempt.warnings == []
    assert attempt.failure is not None and attempt.failure.status == "failed"


def test_a_launch_that_wrote_nothing_is_a_failure_read_from_its_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "result.txt"
    _ends_in_process(monkeypatch, 1, "boom\n", None)
    attempt = run_attempt(_script_command(tmp_path, "exit 1"), 30.0, lambda: _read(out))
    assert attempt.written is None and attempt.warnings == []
    assert attempt.failure is not None and attempt.failure.status == "failed"


# ----------------------------------------------------------------- launcher.cpu_malloc

REUSE = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"


@pytest.mark.parametrize(
    ("inherited", "expected"),
    [
        ({}, {"GLIBC_TUNABLES": REUSE}),
        (  # the user's other tunables kept, ours after them
            {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"},
            {"GLIBC_TUNABLES": f"glibc.malloc.arena_max=2:{REUSE}"},
        ),
        (  # a threshold the user set is theirs
            {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"},
            {
                "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0:"
                "glibc.malloc.mmap_threshold=33554432"
            },
        ),
        (
            {"MALLOC_MMAP_THRESHOLD_": "65536"},
            {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1073741824"},
        ),
        ({"MALLOC_MMAP_THRESHOLD_": "1", "MALLOC_TRIM_THRESHOLD_": "2"}, {}),
    ],
    ids=["nothing-set", "other-tunables", "user-trim", "user-legacy-mmap", "user-both"],
)
def test_malloc_reuse_adds_only_the_thresholds_the_user_did_not_set(
    inherited: dict[str, str], expected: dict[str, str]
) -> None:
    from torchscale.orchestration.launch.cpu_malloc import malloc_reuse_env

    assert malloc_reuse_env(inherited) == expected


def test_cpu_cells_keep_freed_memory_unless_the_config_says_default(tmp_path: Path) -> None:
    """launcher.cpu_malloc: reuse (the default) sets GLIBC_TUNABLES for CPU cells only, a
    value in launcher.env counts as the user's, and the setting is in a CPU cell's definition
    (its measurements differ), not in a CUDA cell's (it is not applied there)."""

    def first(config: BenchConfig, machine: Machine) -> Any:
        return next(p for p in build_plan(config, machine) if p.cell.world_size == 1)

    spec = tmp_path / "spec.json"
    reuse = first(make_config(), Machine(0, 2))
    cmd = reuse.command(spec, tmp_path / "logs", dict(KEPT))
    assert cmd.env["GLIBC_TUNABLES"] == cmd.env_overrides["GLIBC_TUNABLES"] == REUSE
    plain = first(make_config(launcher={"cpu_malloc": "default"}), Machine(0, 2))
    assert "GLIBC_TUNABLES" not in plain.command(spec, tmp_path / "l2", dict(KEPT)).env
    assert '"cpu_malloc":"reuse"' in reuse.definition
    assert '"cpu_malloc":"default"' in plain.definition
    assert reuse.cell.id != plain.cell.id
    own = first(
        make_config(launcher={"env": {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=0"}}),
        Machine(0, 2),
    )
    own_env = own.command(spec, tmp_path / "l3", dict(KEPT)).env
    assert own_env["GLIBC_TUNABLES"] == (
        "glibc.malloc.mmap_threshold=0:glibc.malloc.trim_threshold=1073741824"
    )
    gpu = first(make_config(device="cuda"), Machine(gpu_count=2, cpu_cores=8))
    assert "GLIBC_TUNABLES" not in gpu.command(spec, tmp_path / "l4", dict(KEPT)).env
    assert "cpu_malloc" not in gpu.definition
