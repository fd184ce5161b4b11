"""Hangs and crashes explained: where each rank of a hung cell was (stack dumps asked for
before the kill), which signal killed a rank, and that no rank outlives its torchrun.

The parsing is tested on real faulthandler output captured from this project's runs (torch
2.13.0+cpu, Python 3.11; only the install prefixes are abbreviated), and live: a process that
installed the worker's diagnostics is asked for its stacks. Real torchrun launches use
tests/hang_worker.py (a few seconds each); the hang plug-in model through a whole sweep is
tests/e2e/test_sweep.py's.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.processes import (
    REPO_ROOT,
    kill_mentioning,
    processes_mentioning,
    scan_processes,
    start,
    stop,
    wait_for,
)
from tests.project.test_torch_free import import_chain, import_graph
from torchscale.contracts.cell import Status
from torchscale.contracts.rank_diagnostics import DIAGNOSTICS_ENV
from torchscale.contracts.schema.cell_result import RankPlace
from torchscale.contracts.wording.cell_errors import (
    hang_summary,
    place_line,
    place_short,
    rank_list,
)
from torchscale.orchestration.launch.diagnose import (
    WAITING,
    Frame,
    HangDiagnosis,
    diagnose_hang,
    locate,
    main_thread,
    parse_dump,
    read_pids,
    request_stacks,
)
from torchscale.orchestration.launch.failure import classify_failure
from torchscale.orchestration.launch.process import ProcessOutcome, run_launch, run_logged
from torchscale.orchestration.launch.torchrun import LaunchCommand, torchrun_command

SITE = "/work/main/.venv/lib/python3.11/site-packages"
FAULT_ENV = {"PYTHONPATH": str(REPO_ROOT)}


def real(text: str) -> str:
    """A captured dump with its install prefixes restored."""
    return text.replace("$SITE", SITE).replace("$REPO", "/work/main")


# rank 0 of tests.fault_models:hang (on_rank 1), DDP on gloo: blocked in backward
DDP_BACKWARD_RANK0 = """\
Current thread 0x00007ffb05c2eb80 (most recent call first):
  File "$SITE/torch/autograd/graph.py", line 979 in _engine_run_backward
  File "$SITE/torch/autograd/__init__.py", line 395 in backward
  File "$SITE/torch/_tensor.py", line 623 in backward
  File "$REPO/torchscale/rank/worker/trainer.py", line 160 in step
  File "$REPO/torchscale/rank/worker/measure.py", line 70 in warm_up
  File "$REPO/torchscale/rank/worker/measure.py", line 144 in measure
  File "$REPO/torchscale/rank/worker/main.py", line 97 in run
  File "$REPO/torchscale/rank/worker/main.py", line 119 in main
  File "$SITE/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 367 in wrapper
  File "$REPO/torchscale/rank/worker/main.py", line 123 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""

# rank 1 of the same cell: asleep in the model's forward
DDP_FORWARD_RANK1 = """\
Current thread 0x00007f90b2a8fb80 (most recent call first):
  File "$REPO/tests/fault_models.py", line 39 in forward
  File "$SITE/torch/nn/modules/module.py", line 1789 in _call_impl
  File "$SITE/torch/nn/modules/module.py", line 1778 in _wrapped_call_impl
  File "$SITE/torch/nn/parallel/distributed.py", line 1715 in _run_ddp_forward
  File "$SITE/torch/nn/parallel/distributed.py", line 1890 in forward
  File "$SITE/torch/nn/modules/module.py", line 1789 in _call_impl
  File "$SITE/torch/nn/modules/module.py", line 1778 in _wrapped_call_impl
  File "$REPO/torchscale/rank/models/bundle.py", line 49 in call_model
  File "$REPO/torchscale/rank/worker/trainer.py", line 154 in step
  File "$REPO/torchscale/rank/worker/measure.py", line 70 in warm_up
  File "$REPO/torchscale/rank/worker/measure.py", line 144 in measure
  File "$REPO/torchscale/rank/worker/main.py", line 97 in run
  File "$REPO/torchscale/rank/worker/main.py", line 119 in main
  File "$SITE/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 367 in wrapper
  File "$REPO/torchscale/rank/worker/main.py", line 123 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""

# tests/hang_worker.py --fault hang --collective all_reduce, rank 0
ALL_REDUCE_RANK0 = """\
Current thread 0x00007fc8947f4b80 (most recent call first):
  File "$SITE/torch/distributed/distributed_c10d.py", line 3252 in all_reduce
  File "$SITE/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "$REPO/tests/hang_worker.py", line 31 in collective
  File "$REPO/tests/hang_worker.py", line 56 in main
  File "$REPO/tests/hang_worker.py", line 62 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""

# the same launch, rank 1
COMPUTE_RANK1 = """\
Current thread 0x00007f0a799cdb80 (most recent call first):
  File "$REPO/tests/hang_worker.py", line 26 in compute
  File "$REPO/tests/hang_worker.py", line 52 in main
  File "$REPO/tests/hang_worker.py", line 62 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""

# --collective all_gather_object, rank 0
ALL_GATHER_OBJECT_RANK0 = """\
Current thread 0x00007f7ba9bf0b80 (most recent call first):
  File "$SITE/torch/distributed/distributed_c10d.py", line 4287 in all_gather
  File "$SITE/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "$SITE/torch/distributed/distributed_c10d.py", line 3513 in all_gather_object
  File "$SITE/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "$REPO/tests/hang_worker.py", line 36 in collective
  File "$REPO/tests/hang_worker.py", line 56 in main
  File "$REPO/tests/hang_worker.py", line 62 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""

# --collective barrier, rank 0
BARRIER_RANK0 = """\
Current thread 0x00007f9cbba79b80 (most recent call first):
  File "$SITE/torch/distributed/distributed_c10d.py", line 5356 in barrier
  File "$SITE/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "$REPO/tests/hang_worker.py", line 33 in collective
  File "$REPO/tests/hang_worker.py", line 56 in main
  File "$REPO/tests/hang_worker.py", line 62 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""

# --fault signal:11, rank 1: faulthandler's fatal-signal dump
SEGV_RANK1 = """\
Fatal Python error: Segmentation fault

Current thread 0x00007f5ea007db80 (most recent call first):
  File "$REPO/tests/hang_worker.py", line 54 in main
  File "$REPO/tests/hang_worker.py", line 62 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main

Extension modules: numpy._core._multiarray_umath, numpy.linalg._umath_linalg, torch._C, \
torch._C._dynamo.autograd_compiler, torch._C._dynamo.eval_frame, torch._C._dynamo.guards, \
torch._C._dynamo.utils, torch._C._fft, torch._C._linalg, torch._C._nested, torch._C._nn, \
torch._C._sparse, torch._C._special, yaml._yaml (total: 14)
"""


def lines(path: Path) -> list[str]:
    """The lines written to `path` so far (none while it does not exist)."""
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def line_of(path: Path, text: str) -> int:
    """1-based line of the first line of `path` containing `text`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def line(place: RankPlace) -> str:
    """Where a rank was, as a result's error words it (contracts/wording/cell_errors.py)."""
    return place_line(place.model_dump())


def short(place: RankPlace) -> str:
    return place_short(place.model_dump())


# ===================================================================== reading stack dumps


def test_rank_in_the_models_forward() -> None:
    place = locate(1, real(DDP_FORWARD_RANK1))
    assert place.kind == "code"
    assert place.kind not in WAITING
    assert short(place) == "in forward (fault_models.py:39)"
    assert line(place) == "rank 1 in forward (fault_models.py:39)"


def test_rank_blocked_in_ddp_backward_says_what_the_stack_shows() -> None:
    place = locate(0, real(DDP_BACKWARD_RANK0))
    assert place.kind == "backward"
    assert place.kind in WAITING
    assert short(place) == "in backward (autograd: DDP gradient all-reduce, in C++)"
    assert line(place) == (
        "rank 0 in backward (autograd: DDP gradient all-reduce, in C++), "
        "called from step (trainer.py:160)"
    )


@pytest.mark.parametrize(
    ("dump", "line"),
    [
        (
            ALL_REDUCE_RANK0,
            "rank 0 waiting in all_reduce (distributed_c10d.py:3252), "
            "called from collective (hang_worker.py:31)",
        ),
        (
            BARRIER_RANK0,
            "rank 0 waiting in barrier (distributed_c10d.py:5356), "
            "called from collective (hang_worker.py:33)",
        ),
        (  # the call the code made, not the all_gather inside it
            ALL_GATHER_OBJECT_RANK0,
            "rank 0 waiting in all_gather_object (distributed_c10d.py:3513), "
            "called from collective (hang_worker.py:36)",
        ),
    ],
)
def test_rank_waiting_in_a_collective(dump: str, line: str) -> None:
    place = locate(0, real(dump))
    assert place.kind == "collective"
    assert place_line(place.model_dump()) == line


def test_the_record_wrapper_is_not_a_collective() -> None:
    """Every worker stack has torch/distributed/elastic's @record frame at its bottom."""
    assert "elastic/multiprocessing/errors" in real(DDP_FORWARD_RANK1)
    assert locate(1, real(DDP_FORWARD_RANK1)).kind == "code"


def test_fatal_signal_dump() -> None:
    place = locate(1, real(SEGV_RANK1))
    assert line(place) == "rank 1 in main (hang_worker.py:54)"


def installed(text: str, site: str) -> str:
    """A captured dump as a non-editable install would print it: torch, torchscale and the
    model (tests/fault_models.py) all in the site-packages directory `site`."""
    text = text.replace("$REPO/tests/", "$SITE/").replace("$REPO/", "$SITE/")
    return text.replace("$SITE", site)


STDLIB = sysconfig.get_path("stdlib")


@pytest.mark.parametrize(
    "site",
    [
        f"{STDLIB}/site-packages",  # pyenv, conda, python images: inside the stdlib directory
        f"{sysconfig.get_path('platstdlib')}/site-packages",  # a venv's lib/pythonX.Y
        sysconfig.get_path("purelib"),
        "/usr/lib/python3/dist-packages",  # Debian's system packages
    ],
    ids=["stdlib-site-packages", "platstdlib-site-packages", "purelib", "dist-packages"],
)
def test_code_installed_in_site_packages_is_code(site: str) -> None:
    """Installed code is the model's or the harness's, even where site-packages lies under
    the stdlib prefix (/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages)."""
    forward = locate(1, installed(DDP_FORWARD_RANK1, site))
    assert forward.kind == "code"
    assert line(forward) == "rank 1 in forward (fault_models.py:39)"
    backward = locate(0, installed(DDP_BACKWARD_RANK0, site))
    assert line(backward) == (
        "rank 0 in backward (autograd: DDP gradient all-reduce, in C++), "
        "called from step (trainer.py:160)"
    )
    collective = locate(0, installed(ALL_REDUCE_RANK0, site))
    assert line(collective) == (
        "rank 0 waiting in all_reduce (distributed_c10d.py:3252), "
        "called from collective (hang_worker.py:31)"
    )


# a rank whose main thread runs only torch and the stdlib (no model or harness frame)
NO_CODE_FRAME = """Current thread 0x00007f3c2a1b4b80 (most recent call first):
  File "$STDLIB/threading.py", line 331 in wait
  File "$SITE/torch/utils/data/dataloader.py", line 1284 in _next_data
  File "<frozen runpy>", line 198 in _run_module_as_main
"""


def test_a_dump_without_code_frames_says_where_it_was() -> None:
    """Not 'no stack dump': the rank did dump, its stack just holds no code of ours."""
    text = real(NO_CODE_FRAME).replace("$STDLIB", STDLIB)
    place = locate(2, text)
    assert place.kind == "library"
    assert short(place) == "in wait (threading.py:331), no model or harness code on its stack"
    assert "no stack dump" not in line(place)
    empty = locate(2, "Current thread 0x00007f3c2a1b4b80 (most recent call first):\n")
    assert line(empty) == "rank 2 dumped its stack, but no Python frame was running in it"


# a script whose main thread trains while a threading.Thread sleeps (run from runpy), rank 0
TWO_THREADS = """\
Thread 0x00007f991ec0b6c0 (most recent call first):
  File "worker_threads.py", line 6 in heartbeat
  File "$STDLIB/threading.py", line 982 in run
  File "$STDLIB/threading.py", line 1045 in _bootstrap_inner
  File "$STDLIB/threading.py", line 1002 in _bootstrap

Current thread 0x00007f9920bbdb80 (most recent call first):
  File "worker_threads.py", line 10 in train
  File "worker_threads.py", line 15 in main
  File "worker_threads.py", line 19 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 98 in _run_module_code
  File "<frozen runpy>", line 291 in run_path
  File "<string>", line 1 in <module>
"""


@pytest.mark.parametrize("swap", [False, True], ids=["main-current", "other-current"])
def test_the_main_thread_is_read_whichever_thread_took_the_signal(swap: bool) -> None:
    """The kernel may deliver SIGUSR1 to any thread: 'Current thread' is not the main one."""
    text = TWO_THREADS.replace("$STDLIB", STDLIB)
    if swap:
        text = text.replace("Current thread", "@").replace("Thread 0x", "Current thread 0x")
        text = text.replace("@", "Thread")
    threads = parse_dump(text)
    assert len(threads) == 2
    assert [t.current for t in threads] == ([True, False] if swap else [False, True])
    assert line(locate(0, text)) == "rank 0 in train (worker_threads.py:10)"


def test_a_python_m_main_thread_is_recognised() -> None:
    (thread,) = parse_dump(real(COMPUTE_RANK1))
    assert thread.is_main  # outermost frame: runpy's _run_module_as_main


def test_only_the_last_of_several_dumps_counts() -> None:
    text = real(COMPUTE_RANK1) + "\n" + real(COMPUTE_RANK1).replace("line 26", "line 27")
    (thread,) = parse_dump(text)
    assert thread.frames[0].line == 27


def test_empty_or_foreign_text_locates_nothing() -> None:
    assert parse_dump("") == []
    assert main_thread(parse_dump("no dump here\n")) is None
    assert locate(4, "garbage").kind == "unknown"
    assert "no stack dump" in line(RankPlace(rank=4, kind="unknown"))


@pytest.mark.parametrize(
    ("ranks", "text"),
    [
        ([3], "rank 3"),
        ([1, 0], "ranks 0-1"),
        ([0, 2, 3, 4, 5, 6, 7], "ranks 0, 2-7"),
        ([0, 2, 5, 6], "ranks 0, 2, 5-6"),
    ],
)
def test_rank_list(ranks: list[int], text: str) -> None:
    assert rank_list(ranks) == text


def test_summary_root_cause_first_then_grouped() -> None:
    waiting = locate(0, real(ALL_REDUCE_RANK0))
    stuck = locate(1, real(COMPUTE_RANK1)).model_copy(update={"rank": 3})
    places = [waiting.model_copy(update={"rank": r}) for r in (0, 1, 2)]
    places += [stuck] + [waiting.model_copy(update={"rank": r}) for r in (4, 5)]
    diagnosis = HangDiagnosis(tuple(places))
    assert diagnosis.root_cause_rank == 3
    stored = [p.model_dump() for p in diagnosis.ordered()]
    assert hang_summary(stored) == (
        "rank 3 in compute (hang_worker.py:26); ranks 0-2, 4-5 waiting in all_reduce"
    )
    assert place_line(stored[0]) == "rank 3 in compute (hang_worker.py:26)"
    assert len(stored) == 6


@pytest.mark.parametrize(
    ("dumps", "root"),
    [
        ({0: ALL_REDUCE_RANK0, 1: COMPUTE_RANK1}, 1),
        ({0: DDP_BACKWARD_RANK0, 1: DDP_FORWARD_RANK1}, 1),
        ({0: ALL_REDUCE_RANK0, 1: ALL_REDUCE_RANK0}, None),  # all wait: mismatched calls
        ({0: COMPUTE_RANK1, 1: COMPUTE_RANK1}, None),  # nobody waits: slow, not stuck
        ({0: COMPUTE_RANK1}, None),  # one rank: nothing to wait for
        ({0: ALL_REDUCE_RANK0, 1: ""}, 1),  # the rank that did not answer
        ({0: "", 1: ""}, None),
    ],
)
def test_root_cause_rank(dumps: dict[int, str], root: int | None) -> None:
    places = tuple(locate(r, real(text)) for r, text in dumps.items())
    assert HangDiagnosis(places).root_cause_rank == root


def write_dumps(directory: Path, dumps: dict[int, str]) -> dict[int, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    stacks = {}
    for rank, text in dumps.items():
        (directory / f"rank{rank}.pid").write_text(f"{40000 + rank}\n")
        if text:
            stacks[rank] = directory / f"rank{rank}.stacks.txt"
            stacks[rank].write_text(real(text))
    return stacks


def test_diagnose_hang_reads_the_directory(tmp_path: Path) -> None:
    stacks = write_dumps(tmp_path, {0: DDP_BACKWARD_RANK0, 1: DDP_FORWARD_RANK1, 2: ""})
    (tmp_path / "nccl_trace_rank_0").write_bytes(b"\x80pickle")
    (tmp_path / "unrelated.txt").write_text("x")
    assert read_pids(tmp_path) == {0: 40000, 1: 40001, 2: 40002}
    diagnosis = diagnose_hang(tmp_path, stacks)
    assert [p.rank for p in diagnosis.places] == [0, 1, 2]
    assert diagnosis.places[2].kind == "unknown"  # registered, never answered
    assert diagnosis.root_cause_rank is None  # two ranks not waiting: ambiguous
    assert diagnosis.artifacts == (stacks[0], stacks[1], tmp_path / "nccl_trace_rank_0")


def launch_at(log_dir: Path, module_args: list[str] | None = None) -> LaunchCommand:
    return torchrun_command(
        "tests.hang_worker",
        module_args or [],
        nproc=2,
        device="cpu",
        log_dir=log_dir,
        base_env=dict(os.environ),
        omp_num_threads=1,
        extra_env=FAULT_ENV,
    )


def test_timeout_reason_names_each_rank(tmp_path: Path) -> None:
    command = launch_at(tmp_path)
    stacks = write_dumps(command.diagnostics_dir, {0: DDP_BACKWARD_RANK0, 1: DDP_FORWARD_RANK1})
    command.log_path.write_text("W1122 torchrun noise\n")
    outcome = ProcessOutcome(None, True, 40.2, command.log_path, stacks)
    failure = classify_failure(outcome, command, 40)
    assert failure.status == Status.TIMEOUT
    assert failure.reason == (
        "killed after the 40 s cell timeout: rank 1 in forward (fault_models.py:39); "
        "rank 0 in backward (autograd: DDP gradient all-reduce, in C++)"
    )
    assert failure.root_cause_rank == 1
    error = failure.as_error()
    assert [place_line(p.model_dump()) for p in error.places] == [
        "rank 1 in forward (fault_models.py:39)",
        "rank 0 in backward (autograd: DDP gradient all-reduce, in C++), "
        "called from step (trainer.py:160)",
    ]
    assert error.artifacts == [str(stacks[0]), str(stacks[1])]
    assert error.exit_signal is None


# ========================================================= asking a live process for stacks

SLEEPER = """\
import threading, time
from torchscale.rank.worker.diagnostics import install


def background():
    print("thread ready", flush=True)
    time.sleep(120)


def sleeper():
    print("main ready", flush=True)
    time.sleep(120)  # dumped here


install()
threading.Thread(target=background, daemon=True).start()
sleeper()
"""


READY = ("thread ready", "main ready")  # each a line of its own, or one interleaved


def stacks_once(
    directory: Path, blocked: Callable[[dict[int, Path]], bool], timeout_s: float = 30
) -> dict[int, Path]:
    """Stacks asked for once the processes printed "ready", on the line before their blocking
    call. A dump can still land in the bytecodes between (a process preempted there on a busy
    machine): until `blocked` holds for the dumps, ask again (each dump is appended; the last
    is read). The dumps as they are at the deadline otherwise, for the test to fail on."""
    deadline = time.monotonic() + timeout_s
    while True:
        stacks = request_stacks(directory)
        if blocked(stacks) or time.monotonic() >= deadline:
            return stacks
        time.sleep(0.1)


def innermost(path: Path) -> Frame | None:
    """The innermost frame of the main thread of the last dump in `path`."""
    thread = main_thread(parse_dump(path.read_text()))
    return thread.frames[0] if thread is not None and thread.frames else None


@pytest.mark.slow  # starts a child process
def test_a_registered_process_dumps_its_stacks_and_lives_on(tmp_path: Path) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    directory = tmp_path / "diagnostics"
    env = {DIAGNOSTICS_ENV: str(directory), "RANK": "3"}
    proc = start([sys.executable, str(script)], tmp_path / "out.log", env=env)
    output = tmp_path / "out.log"
    asleep = line_of(script, "dumped here")
    asleep_frame = Frame(str(script), asleep, "sleeper")
    try:
        ready = wait_for(lambda: all(r in "".join(lines(output)) for r in READY), 60)
        assert ready, output.read_text()
        assert read_pids(directory) == {3: proc.pid}
        stacks = stacks_once(directory, lambda s: 3 in s and innermost(s[3]) == asleep_frame)
        assert set(stacks) == {3}
        assert proc.poll() is None  # SIGUSR1 dumped, did not kill
        threads = parse_dump(stacks[3].read_text())
        assert len(threads) == 2  # all threads
        main = main_thread(threads)
        assert main is not None
        assert main.is_main
        place = locate(3, stacks[3].read_text())
        assert short(place) == f"in sleeper (sleeper.py:{asleep})"
        request_stacks(directory)  # a second dump is appended; the last one is read
        assert len(parse_dump(stacks[3].read_text())) == 2
        assert proc.poll() is None
    finally:
        stop(proc, str(script))


@pytest.mark.slow  # starts a child process
def test_a_pid_file_of_another_process_is_never_signalled(tmp_path: Path) -> None:
    """A recycled pid must not get SIGUSR1, whose default action kills."""
    marker = str(tmp_path / "stranger")
    stranger = start(
        [sys.executable, "-c", "import time, sys; time.sleep(120)", marker], tmp_path / "o.log"
    )
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        (tmp_path / "rank0.pid").write_text(f"{stranger.pid}\n")
        (tmp_path / "rank1.pid").write_text(f"{gone.pid}\n")
        (tmp_path / "rank2.pid").write_text("not a pid\n")
        assert read_pids(tmp_path) == {0: stranger.pid, 1: gone.pid}
        assert request_stacks(tmp_path, wait_s=0.5) == {}
        time.sleep(0.3)
        assert stranger.poll() is None
    finally:
        stop(stranger, marker)


def test_pid_files_of_this_process_and_of_no_process_are_never_signalled(
    tmp_path: Path,
) -> None:
    """The same without a process started: rank 0's pid file names this process, whose
    environment does not name the folder (as a recycled pid's would not), rank 1's a pid no
    process can have; a SIGUSR1 here would be caught and counted, and none comes."""
    no_process = int(Path("/proc/sys/kernel/pid_max").read_text())  # pids stay below it
    (tmp_path / "rank0.pid").write_text(f"{os.getpid()}\n")
    (tmp_path / "rank1.pid").write_text(f"{no_process}\n")
    (tmp_path / "rank2.pid").write_text("not a pid\n")
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: received.append(signum))
    try:
        assert read_pids(tmp_path) == {0: os.getpid(), 1: no_process}
        assert request_stacks(tmp_path, wait_s=0.05) == {}
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert received == []


@pytest.mark.slow  # starts a launched command
def test_run_launch_clears_a_previous_runs_pid_files(tmp_path: Path) -> None:
    command = LaunchCommand(
        [sys.executable, "-c", "print('hello')"],
        {**os.environ},
        {},
        1,
        1,
        tmp_path / "e.json",
        tmp_path,
    )
    command.diagnostics_dir.mkdir()
    (command.diagnostics_dir / "rank0.pid").write_text("1\n")
    (command.diagnostics_dir / "rank0.stacks.txt").write_text("old")
    outcome = run_launch(command, 30)
    assert outcome.returncode == 0
    assert not outcome.timed_out
    assert outcome.stacks == {}
    assert list(command.diagnostics_dir.iterdir()) == []
    assert "hello" in command.log_path.read_text()


class StandIn:
    """A launched process, played in this process: it ends with exit 0 once `runs_s` have
    passed (None: never, until killed), and notes what `folder` held when it was started.
    Its pid is this process's: the kill (process.py's `_kill_group`) is recorded, not sent."""

    def __init__(self, folder: Path | None, runs_s: float | None) -> None:
        self.folder, self.runs_s, self.pid = folder, runs_s, os.getpid()
        self.started = time.perf_counter()
        self.folder_at_start: list[str] | None = None
        self.events: list[str] = []

    def start(self) -> StandIn:
        self.started = time.perf_counter()
        if self.folder is not None:
            self.folder_at_start = sorted(p.name for p in self.folder.iterdir())
        return self

    def poll(self) -> int | None:
        left = None if self.runs_s is None else self.started + self.runs_s - time.perf_counter()
        return 0 if left is not None and left <= 0 and "killed" not in self.events else None

    def wait(self, timeout: float) -> int:
        if self.runs_s is not None:
            left = self.started + self.runs_s - time.perf_counter()
            if left <= timeout:
                time.sleep(max(left, 0.0))
                return 0
        time.sleep(timeout)
        raise subprocess.TimeoutExpired("stand-in", timeout)


@pytest.fixture()
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Callable[..., StandIn]:
    """`stand_in(folder, runs_s)`: the StandIn every launch of the test gets for a process."""
    from torchscale.orchestration.launch import process

    def make(folder: Path | None = None, runs_s: float | None = None) -> StandIn:
        made = StandIn(folder, runs_s)
        monkeypatch.setattr(subprocess, "Popen", lambda *args, **kwargs: made.start())
        monkeypatch.setattr(process, "_kill_group", lambda proc: proc.events.append("killed"))
        return made

    return make


def test_run_launch_clears_a_previous_runs_pid_files_before_it_launches(
    tmp_path: Path, stand_in: Callable[..., StandIn]
) -> None:
    """The same with a stand-in for the launched command: the folder was empty when it
    started, and no stacks were asked for."""
    command = LaunchCommand(["torchrun"], {}, {}, 1, 1, tmp_path / "e.json", tmp_path)
    command.diagnostics_dir.mkdir()
    (command.diagnostics_dir / "rank0.pid").write_text("1\n")
    (command.diagnostics_dir / "rank0.stacks.txt").write_text("old")
    made = stand_in(command.diagnostics_dir, runs_s=0.0)
    outcome = run_launch(command, 30)
    assert outcome.returncode == 0 and not outcome.timed_out and outcome.stacks == {}
    assert made.folder_at_start == []


PDEATHSIG_PROBE = """\
import ctypes, json, sys
from torchscale.rank.worker.diagnostics import install
install(json.loads(sys.argv[1]))
value = ctypes.c_int()
ctypes.CDLL(None).prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
print(value.value)
"""

# runs argv[2:] as its child and exits with it; argv[1], unused, is there to be read in its
# /proc/<pid>/cmdline: "torch.distributed.run" makes it pass for torchrun, anything else not
PARENT = """\
import subprocess, sys
run = subprocess.run(sys.argv[2:])
sys.exit(run.returncode if run.returncode >= 0 else 128 - run.returncode)
"""
UNDER_TORCHRUN = [sys.executable, "-c", PARENT, "torch.distributed.run"]
UNDER_ANOTHER = [sys.executable, "-c", PARENT, "some-other-launcher"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.parametrize(
    ("env", "parent", "expected"),
    [
        ({"TORCHELASTIC_RUN_ID": "x"}, UNDER_TORCHRUN, signal.SIGKILL),
        ({}, UNDER_ANOTHER, 0),  # not started by torchrun: nothing to die with
    ],
    ids=["torchrun", "no-torchrun"],
)
@pytest.mark.slow  # starts a child process
def test_a_rank_under_torchrun_dies_with_it(
    env: dict[str, str], parent: list[str], expected: int
) -> None:
    run = subprocess.run(
        [*parent, sys.executable, "-c", PDEATHSIG_PROBE, json.dumps(env)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=True,
    )
    assert int(run.stdout.strip()) == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.slow  # starts a child process
def test_a_rank_whose_parent_is_not_torchrun_exits_at_once() -> None:
    """TORCHELASTIC_RUN_ID says torchrun started the rank; a parent that is not torchrun
    means torchrun is gone and something else inherited the rank."""
    run = subprocess.run(
        [*UNDER_ANOTHER, sys.executable, "-c", PDEATHSIG_PROBE, '{"TORCHELASTIC_RUN_ID": "x"}'],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert run.returncode == 128 + signal.SIGKILL, run.stderr
    assert run.stdout == ""
    assert "torchrun is gone" in run.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.slow  # starts a child process
def test_the_worker_checks_its_torchrun_before_it_imports_torch() -> None:
    """The benchmark worker under a parent that is not torchrun exits before `import torch`
    (-X importtime lists every module imported, in order)."""
    run = subprocess.run(
        [*UNDER_ANOTHER, sys.executable, "-X", "importtime", "-m", "torchscale.rank.worker.main"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TORCHELASTIC_RUN_ID": "x"},
    )
    assert run.returncode == 128 + signal.SIGKILL, run.stderr
    assert "torchrun is gone" in run.stderr
    imported = [
        line.rsplit("|", 1)[-1].strip()
        for line in run.stderr.splitlines()
        if line.startswith("import time:")
    ]
    assert "torchscale.rank.worker.diagnostics" in imported
    assert "torch" not in imported


def test_the_worker_checks_its_torchrun_before_it_imports_torch_as_its_source_reads() -> None:
    """The same read from the source (tests/project/test_torch_free.py): run as __main__, the
    worker calls die_with_torchrun before any statement that imports torch, and what it
    imports to call it reaches no torch; the worker's top does import torch, after."""
    worker = "torchscale.rank.worker.main"
    tree = ast.parse((REPO_ROOT / "torchscale/rank/worker/main.py").read_text(encoding="utf-8"))
    main = "__name__ == '__main__'"
    first = next(
        i for i, n in enumerate(tree.body) if isinstance(n, ast.If) and ast.unparse(n.test) == main
    )
    block = tree.body[first]
    called = [n.func for n in ast.walk(block) if isinstance(n, ast.Call)]
    assert [ast.unparse(f) for f in called] == ["die_with_torchrun"]
    needed = [n.module for n in ast.walk(block) if isinstance(n, ast.ImportFrom) and n.module]
    before = [n.module for n in tree.body[:first] if isinstance(n, ast.ImportFrom) and n.module]
    assert before == ["__future__"]  # nothing else runs before the check
    graph = import_graph([*needed, worker])
    assert [import_chain(graph, module, "torch") for module in needed] == [None] * len(needed)
    assert import_chain(graph, worker, "torch") is not None


# waits until its parent (a stand-in torchrun, pid last in argv) has exited, then sets up as a
# rank does
ORPHAN_PROBE = """\
import os, sys, time
from torchscale.rank.worker.diagnostics import install
parent = int(sys.argv[-1])
deadline = time.monotonic() + 60
while os.getppid() == parent and time.monotonic() < deadline:
    time.sleep(0.01)
print("reparented", os.getppid() != parent, flush=True)
install({"TORCHELASTIC_RUN_ID": "x"})
print("outlived its torchrun", flush=True)
"""

# a stand-in torchrun that dies as soon as its rank has started (told its pid)
ABANDON = """\
import os, subprocess, sys
subprocess.Popen([*sys.argv[2:], str(os.getpid())])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.slow  # starts a child process
def test_a_rank_whose_torchrun_died_before_it_set_up_exits(tmp_path: Path) -> None:
    """The rank's parent-death signal would never come: its torchrun is gone already."""
    marker = str(tmp_path / "orphan")
    output = tmp_path / "out.log"
    argv = [sys.executable, "-c", ABANDON, "torch.distributed.run"]
    parent = start([*argv, sys.executable, "-c", ORPHAN_PROBE, marker], output)
    try:
        parent.wait(timeout=60)
        assert processes_mentioning(marker, grace_s=60) == []
    finally:
        stop(parent, marker)
    assert lines(output)[:1] == ["reparented True"], output.read_text()
    assert "torchrun is gone" in output.read_text()
    assert "outlived" not in output.read_text()


# ====================================================================== real torchrun runs


def launch(tmp_path: Path, *args: str) -> LaunchCommand:
    """tests/hang_worker.py on 2 gloo ranks; its ranks carry tmp_path in their argv."""
    return launch_at(tmp_path / "logs", [*args, "--marker", str(tmp_path)])


def rank_output(command: LaunchCommand) -> str:
    """What the ranks printed so far (torchrun --redirects 3: one stdout.log per rank)."""
    return "".join(p.read_text() for p in (command.log_dir / "ranks").rglob("stdout.log"))


@dataclass
class Hung:
    command: LaunchCommand
    stacks: dict[int, Path]
    alive_after_dump: bool
    leftovers: list[str]


@pytest.fixture(scope="module")
def hung(tmp_path_factory: pytest.TempPathFactory) -> Hung:
    """Rank 1 asleep in compute(), rank 0 in all_reduce. Asked for stacks once both ranks are
    there (each prints "ready" on the line before its blocking call: waiting for that state,
    not racing a timer on a busy machine), then killed."""
    tmp = tmp_path_factory.mktemp("hung")
    command = launch(tmp, "--fault", "hang", "--collective", "all_reduce")
    torchrun = start(command.argv, tmp / "torchrun.log", env=command.env)
    try:
        ready = wait_for(lambda: rank_output(command).count("ready") == 2, 120)
        assert ready, (tmp / "torchrun.log").read_text()
        stacks = stacks_once(command.diagnostics_dir, lambda s: past_main(s, {0, 1}))
        live = {pid for pid, _ in scan_processes(str(tmp))}
        ranks = set(read_pids(command.diagnostics_dir).values())
        alive = torchrun.poll() is None and len(ranks) == 2 and ranks <= live
    finally:
        stop(torchrun, str(tmp))
    return Hung(command, stacks, alive, processes_mentioning(str(tmp)))


def past_main(stacks: dict[int, Path], ranks: set[int]) -> bool:
    """Every rank's main thread has left hang_worker.main(), where it printed "ready", for the
    blocking call that followed (compute(), or a collective inside torch)."""
    if set(stacks) != ranks:
        return False
    frames = [innermost(path) for path in stacks.values()]
    return all(f is not None and f.function != "main" for f in frames)


@pytest.mark.slow  # real torchrun with 2 gloo ranks
def test_hung_ranks_are_located(hung: Hung) -> None:
    assert set(hung.stacks) == {0, 1}
    assert hung.alive_after_dump  # torchrun got no SIGUSR1; the ranks dumped and lived on
    outcome = ProcessOutcome(None, True, 8.1, hung.command.log_path, hung.stacks)
    failure = classify_failure(outcome, hung.command, 8)
    compute = line_of(REPO_ROOT / "tests" / "hang_worker.py", "time.sleep(seconds)")
    assert failure.reason == (
        f"killed after the 8 s cell timeout: rank 1 in compute (hang_worker.py:{compute}); "
        "rank 0 waiting in all_reduce"
    )
    assert failure.root_cause_rank == 1
    lines = [place_line(p.model_dump()) for p in failure.places]
    assert lines[0] == f"rank 1 in compute (hang_worker.py:{compute})"
    assert lines[1].startswith("rank 0 waiting in all_reduce (distributed_c10d.py:")
    assert failure.artifacts == tuple(str(hung.stacks[r]) for r in (0, 1))
    for path in failure.artifacts:  # kept with the logs
        assert Path(path).is_relative_to(hung.command.log_dir)


@pytest.mark.slow  # real torchrun with 2 gloo ranks
def test_stopping_a_hung_launch_leaves_no_rank(hung: Hung) -> None:
    assert hung.leftovers == []


@pytest.mark.slow  # starts a launched command
def test_run_logged_examines_a_timed_out_process_before_killing_it(tmp_path: Path) -> None:
    marker = str(tmp_path / "sleeper")
    seen: list[list[tuple[int, str]]] = []
    outcome = run_logged(
        [sys.executable, "-c", "import time; time.sleep(120)", marker],
        dict(os.environ),
        tmp_path / "sleeper.log",
        1.0,
        on_timeout=lambda: seen.append(scan_processes(marker)),
    )
    assert outcome.timed_out
    assert len(seen) == 1
    assert len(seen[0]) == 1  # still alive when on_timeout ran
    assert processes_mentioning(marker) == []  # and killed after


def test_run_logged_examines_a_timed_out_launch_before_killing_it_in_process(
    tmp_path: Path, stand_in: Callable[..., StandIn]
) -> None:
    """The same with a stand-in that never ends: on_timeout finds it running, the kill after."""
    made = stand_in()

    def examine() -> None:
        made.events.append("examined" if made.poll() is None else "examined after its end")

    outcome = run_logged(["x"], {}, tmp_path / "sleeper.log", 0.05, on_timeout=examine)
    assert outcome.timed_out and outcome.returncode is None
    assert made.events == ["examined", "killed"]


@pytest.mark.slow  # starts a launched command
def test_run_logged_gives_a_finished_launch_only_its_shutdown_grace(tmp_path: Path) -> None:
    """Work done (the marker written), then a hang: killed the grace after, not at the 600 s
    timeout; a launch that ends by itself after finishing is not marked."""
    done = tmp_path / "done"
    script = "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(600)"
    outcome = run_logged(
        [sys.executable, "-c", script, str(done)],
        dict(os.environ),
        tmp_path / "hang.log",
        600.0,
        finished=done.exists,
        shutdown_grace_s=0.5,
    )
    assert outcome.timed_out and outcome.killed_after_finish
    assert outcome.shutdown_grace_s == 0.5  # killed_after_finish: the grace ended it, not 600 s
    assert processes_mentioning(str(done)) == []
    clean = tmp_path / "clean"
    ended = run_logged(
        [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').close()", str(clean)],
        dict(os.environ),
        tmp_path / "clean.log",
        600.0,
        finished=clean.exists,
        shutdown_grace_s=60.0,
    )
    assert ended.ended_cleanly and not ended.killed_after_finish


def test_run_logged_gives_a_finished_launch_only_its_shutdown_grace_in_process(
    tmp_path: Path, stand_in: Callable[..., StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with stand-ins, `finished` asked every 10 ms: one that hangs after its work
    is killed its grace after, long before the 600 s timeout; one that then ends is not."""
    from torchscale.orchestration.launch import process

    monkeypatch.setattr(process, "FINISHED_POLL_S", 0.01)
    made = stand_in()
    finished_at: list[float] = []

    def finished() -> bool:
        finished_at.append(time.perf_counter())
        return len(finished_at) >= 3  # its work done at the third look

    grace = 0.05
    outcome = run_logged(
        ["x"], {}, tmp_path / "hang.log", 600.0, finished=finished, shutdown_grace_s=grace
    )
    assert outcome.timed_out and outcome.killed_after_finish
    assert outcome.shutdown_grace_s == grace and made.events == ["killed"]
    assert grace <= time.perf_counter() - finished_at[2] < 5.0  # the grace, not the 600 s
    ends = stand_in(runs_s=0.1)
    ended = run_logged(
        ["x"], {}, tmp_path / "clean.log", 600.0, finished=lambda: True, shutdown_grace_s=60.0
    )
    assert ended.ended_cleanly and not ended.killed_after_finish and ends.events == []


@pytest.mark.slow  # starts a launched command
def test_run_logged_kills_even_when_on_timeout_fails(tmp_path: Path) -> None:
    marker = str(tmp_path / "sleeper")

    def broken() -> None:
        raise OSError("diagnostics directory gone")

    with pytest.raises(OSError, match="diagnostics directory gone"):
        run_logged(
            [sys.executable, "-c", "import time; time.sleep(120)", marker],
            dict(os.environ),
            tmp_path / "sleeper.log",
            1.0,
            on_timeout=broken,
        )
    assert processes_mentioning(marker) == []


def test_run_logged_kills_even_when_on_timeout_fails_in_process(
    tmp_path: Path, stand_in: Callable[..., StandIn]
) -> None:
    made = stand_in()

    def broken() -> None:
        raise OSError("diagnostics directory gone")

    with pytest.raises(OSError, match="diagnostics directory gone"):
        run_logged(["x"], {}, tmp_path / "sleeper.log", 0.05, on_timeout=broken)
    assert made.events == ["killed"]


@pytest.mark.slow  # real torchrun with 2 gloo ranks
@pytest.mark.parametrize(
    ("signum", "reason", "where"),
    [
        (
            signal.SIGKILL,
            "rank 1 was killed by SIGKILL (signal 9), often the kernel's OOM killer: see dmesg",
            None,  # nothing can run on SIGKILL
        ),
        (
            signal.SIGSEGV,
            "rank 1 was killed by SIGSEGV (signal 11), a segmentation fault in native code "
            "(a C++/CUDA extension, a driver)",
            "signal.pthread_kill(",  # faulthandler's fatal-signal dump points at the line
        ),
    ],
    ids=["sigkill", "sigsegv"],
)
def test_rank_killed_by_a_signal(
    tmp_path: Path, signum: int, reason: str, where: str | None
) -> None:
    command = launch(tmp_path, "--fault", f"signal:{int(signum)}")
    try:
        outcome = run_launch(command, 60)
    finally:
        kill_mentioning(str(tmp_path))
    assert not outcome.timed_out
    failure = classify_failure(outcome, command, 60)
    assert failure.status == Status.FAILED
    assert failure.reason == reason, command.log_path.read_text()
    assert failure.exit_signal == signal.Signals(signum).name
    assert failure.root_cause_rank == 1
    if where is None:
        assert failure.places == ()
    else:
        line = line_of(REPO_ROOT / "tests" / "hang_worker.py", where)
        assert [place_line(p.model_dump()) for p in failure.places] == [
            f"rank 1 in main (hang_worker.py:{line})"
        ]
        assert failure.artifacts == (str(command.diagnostics_dir / "rank1.stacks.txt"),)


@pytest.mark.slow  # real torchrun with 2 gloo ranks
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_ranks_die_when_their_torchrun_is_killed(tmp_path: Path) -> None:
    """torchrun puts each rank in its own session: SIGKILL to torchrun (or its group) cannot
    reach them. The parent-death signal each rank set must."""
    command = launch(tmp_path, "--fault", "hang")
    marker = str(tmp_path)
    torchrun = start(command.argv, tmp_path / "torchrun.log", env=command.env)
    try:
        assert wait_for(lambda: len(read_pids(command.diagnostics_dir)) == 2, 60), (
            tmp_path / "torchrun.log"
        ).read_text()
        ranks = read_pids(command.diagnostics_dir)
        for pid in ranks.values():
            assert os.getsid(pid) != torchrun.pid  # out of reach of torchrun's group
        os.killpg(torchrun.pid, signal.SIGKILL)
        torchrun.wait(timeout=10)
        assert processes_mentioning(marker) == []
    finally:
        stop(torchrun, marker)


@pytest.mark.slow  # real torchrun with 2 gloo ranks
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_ranks_still_importing_torch_die_with_their_torchrun(tmp_path: Path) -> None:
    """The benchmark worker sets its parent-death signal before it imports torch (seconds):
    torchrun SIGKILLed while its ranks import torch leaves none. Their spec is a FIFO nobody
    writes, so a rank that outlived torchrun would block reading it, not exit by itself."""
    spec = tmp_path / "spec.json"
    os.mkfifo(spec)
    command = torchrun_command(
        "torchscale.rank.worker.main",
        ["--spec", str(spec)],
        nproc=2,
        device="cpu",
        log_dir=tmp_path / "logs",
        base_env=dict(os.environ),
        omp_num_threads=1,
        extra_env=FAULT_ENV,
    )
    marker = str(tmp_path)
    torchrun = start(command.argv, tmp_path / "torchrun.log", env=command.env)

    def ranks() -> list[int]:
        return [
            pid
            for pid, cmdline in scan_processes(marker)
            if pid != torchrun.pid and "-m torchscale.rank.worker.main" in cmdline
        ]

    try:
        assert wait_for(lambda: len(ranks()) == 2, 60), (tmp_path / "torchrun.log").read_text()
        assert read_pids(command.diagnostics_dir) == {}  # not registered: still importing
        os.killpg(torchrun.pid, signal.SIGKILL)
        torchrun.wait(timeout=10)
        assert processes_mentioning(marker) == []
    finally:
        stop(torchrun, marker)
