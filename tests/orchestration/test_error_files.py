"""A rank's root cause survives a torn error file.

torchrun's agent parses a failed rank's error file as soon as it sees the rank gone; a file that
exists and does not parse (a rank stopped between opening it and writing it) kills torchrun
itself with JSONDecodeError, which then stood in the node's error file as "a rank raised
JSONDecodeError", root cause unknown. Two halves, each tested so it can fail: ranks write their
error files atomically (torchscale/rank/worker/error_file.py), and the classifier tells
torchrun's own failure from a rank's and takes the root cause from the ranks' own files
(torchscale/orchestration/launch/failure.py, error_files.py).

The fixture tests/fixtures/torchrun_torn_error_file/ is a real run of torch 2.13.0+cpu's torchrun
(tests.rank_fault_worker --raise-on 1 --torn-error-file-on 0: rank 0 left an empty error file,
rank 1 raised), its paths shortened; the real run itself is the last test here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

from tests.processes import REPO_ROOT, kill_mentioning
from torchscale.contracts.cell import Status
from torchscale.orchestration.launch.error_files import (
    RecordedError,
    read_recorded_error,
    unreadable_replies,
)
from torchscale.orchestration.launch.failure import classify_failure
from torchscale.orchestration.launch.process import ProcessOutcome, run_launch
from torchscale.orchestration.launch.torchrun import LaunchCommand, torchrun_command
from torchscale.rank.worker import error_file as error_file_module
from torchscale.rank.worker import harness
from torchscale.rank.worker.error_file import AtomicErrorHandler, record_errors

FIXTURE = Path(__file__).parents[1] / "fixtures" / "torchrun_torn_error_file"
RANK1_ERROR = (
    "OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB (injected on rank 1)"
)
TORCHRUN_ERROR = "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
# what a rank stopped mid-write leaves: nothing yet, part of the JSON, or a cut multibyte char
TORN = {
    "empty": b"",
    "truncated": b'{"message": {"message": "RuntimeError: connection closed by pe',
    "cut mid-character": '{"message": {"message": "caf\u00e9'.encode()[:-1],
}


def launch(log_dir: Path, *args: str) -> LaunchCommand:
    return torchrun_command(
        "tests.rank_fault_worker",
        list(args),
        nproc=2,
        device="cpu",
        log_dir=log_dir,
        base_env=dict(os.environ),
        omp_num_threads=1,
        extra_env={"PYTHONPATH": str(REPO_ROOT)},
    )


def fixture_run(tmp_path: Path) -> tuple[LaunchCommand, ProcessOutcome]:
    """The recorded run, laid out where a launch in tmp_path/logs would have written it."""
    log_dir = tmp_path / "logs"
    shutil.copytree(FIXTURE, log_dir)
    command = launch(log_dir)
    return command, ProcessOutcome(1, False, 4.9, command.log_path)


def rank_file(log_dir: Path, local_rank: int) -> Path:
    (path,) = (log_dir / "ranks").glob(f"*/attempt_0/{local_rank}/error.json")
    return path


# ================================================================ reading the files


def test_torchruns_own_exception_is_told_from_a_ranks() -> None:
    """The node file of the real run holds torchrun's JSONDecodeError with torchrun's stack;
    rank 1's file holds its own exception with a rank's stack."""
    assert read_recorded_error(FIXTURE / "error.json") == RecordedError(TORCHRUN_ERROR, True)
    assert read_recorded_error(rank_file(FIXTURE, 1)) == RecordedError(RANK1_ERROR, False)


@pytest.mark.parametrize("torn", TORN.values(), ids=TORN.keys())
def test_a_torn_file_is_no_error(tmp_path: Path, torn: bytes) -> None:
    path = tmp_path / "error.json"
    path.write_bytes(torn)
    assert read_recorded_error(path) is None


def test_the_log_names_the_file_torchrun_could_not_parse() -> None:
    (logged,) = unreadable_replies((FIXTURE / "torchrun.log").read_text())
    assert logged.endswith("/attempt_0/0/error.json")


# ================================================================ classifying the failure


@pytest.mark.parametrize("torn", TORN.values(), ids=TORN.keys())
def test_a_torn_error_file_never_becomes_the_root_cause(tmp_path: Path, torn: bytes) -> None:
    """Whatever rank 0's torn file holds, rank 1 and its own exception are the root cause, and
    the reason says torchrun failed itself and on whose file."""
    command, outcome = fixture_run(tmp_path)
    rank_file(command.log_dir, 0).write_bytes(torn)
    failure = classify_failure(outcome, command, 60)
    assert failure.status == Status.OOM, failure.reason
    assert failure.root_cause_rank == 1
    assert failure.exception == RANK1_ERROR
    assert failure.reason == (
        f"out of memory: {RANK1_ERROR}; torchrun itself failed reading rank 0's error file, "
        f"which did not parse ({TORCHRUN_ERROR})"
    )


def test_the_root_cause_comes_from_a_ranks_own_error_not_a_secondary_one(
    tmp_path: Path,
) -> None:
    """Rank 0's file is whole but says only that its peer went away: rank 1 is still the cause."""
    command, outcome = fixture_run(tmp_path)
    message = "RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer"
    body = {"message": {"message": message, "extraInfo": {"timestamp": "1"}}}
    rank_file(command.log_dir, 0).write_text(json.dumps(body))
    failure = classify_failure(outcome, command, 60)
    assert (failure.root_cause_rank, failure.exception) == (1, RANK1_ERROR)


def test_torchrun_failing_with_no_readable_rank_error_says_so(tmp_path: Path) -> None:
    """Never "a rank raised JSONDecodeError": torchrun raised it, and no rank left its own."""
    command, outcome = fixture_run(tmp_path)
    rank_file(command.log_dir, 1).write_bytes(b"")
    failure = classify_failure(outcome, command, 60)
    assert failure.status == Status.FAILED
    assert failure.root_cause_rank is None
    assert failure.exception == TORCHRUN_ERROR
    assert failure.reason == (
        f"torchrun itself failed reading rank 0's error file, which did not parse "
        f"({TORCHRUN_ERROR}); no rank left an error of its own"
    )


def test_torchruns_stopped_because_another_node_failed_add_no_note(tmp_path: Path) -> None:
    """Under Slurm the other nodes' torchruns record their own SignalException (srun stopped
    them) or a lost rendezvous store: torchrun's own exceptions, so the root cause still comes
    from the ranks, but they follow the failure rather than add to it: no note."""
    command, outcome = fixture_run(tmp_path)
    stack = json.loads((FIXTURE / "error.json").read_text())["message"]["extraInfo"]
    for path, message in [
        (command.error_file, "SignalException: Process 7 got signal: 15"),
        (
            command.error_file.with_name("error-node1.json"),
            "RendezvousConnectionError: The connection to the C10d store has failed.",
        ),
    ]:
        path.write_text(json.dumps({"message": {"message": message, "extraInfo": stack}}))
        assert read_recorded_error(path) == RecordedError(message, True)
    rank_file(command.log_dir, 0).unlink()
    failure = classify_failure(outcome, command, 60)
    assert (failure.root_cause_rank, failure.exception) == (1, RANK1_ERROR)
    assert failure.reason == f"out of memory: {RANK1_ERROR}"


# ================================================================ writing them atomically


def test_a_ranks_error_file_parses_as_torchrun_parses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `record_errors` writes is what torchrun's agent reads: its own ProcessFailure."""
    path = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))

    @record_errors
    def main() -> None:
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        main()
    failure = ProcessFailure(local_rank=0, pid=1, exitcode=1, error_file=str(path))
    assert failure.message["message"] == "ValueError: bad batch"
    assert "raise ValueError" in failure.message["extraInfo"]["py_callstack"]
    assert read_recorded_error(path) == RecordedError("ValueError: bad batch", False)


def test_a_write_stopped_halfway_leaves_the_previous_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rank records its error twice (on the error path, then in `record_errors`); the second
    write stopped before it is on disk (here: fsync fails) must leave the first whole and no
    temporary file that torchrun's glob of error.json could find. torchelastic's own writer
    truncates first: the same stop leaves an empty file, which this test would see."""
    path = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))
    harness.record_error(RuntimeError("first"))
    assert read_recorded_error(path) == RecordedError("RuntimeError: first", False)

    def stopped(fd: int) -> None:
        raise OSError("stopped")

    monkeypatch.setattr(os, "fsync", stopped)
    harness.record_error(RuntimeError("second"))  # the OSError is suppressed, as before
    with pytest.raises(OSError, match="stopped"):
        AtomicErrorHandler().record_exception(RuntimeError("third"))
    assert read_recorded_error(path) == RecordedError("RuntimeError: first", False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["error.json"]


def test_every_rank_entry_point_records_through_the_atomic_handler() -> None:
    """The benchmark, comm, and validate workers all start through the harness's `main`,
    which none wraps in torchelastic's bare `@record`, whose writer truncates before it
    writes."""
    source = (REPO_ROOT / "torchscale/rank/worker/harness.py").read_text(encoding="utf-8")
    assert "@record_errors\ndef main(" in source
    assert "\n@record\n" not in source
    for entry in ("torchscale/rank/worker/main.py", "torchscale/rank/programs/__main__.py"):
        assert "harness import main" in (REPO_ROOT / entry).read_text(encoding="utf-8"), entry
    assert error_file_module.record_errors.__module__ == "torchscale.rank.worker.error_file"


# ================================================================ the real race, made certain


@pytest.mark.slow  # real torchrun with 2 gloo ranks
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torchrun ranks, Linux /proc")
def test_torchrun_failing_on_a_torn_file_still_names_the_rank_that_raised(tmp_path: Path) -> None:
    """Real torchrun: rank 0 leaves an empty error file and waits, rank 1 raises. torchrun stops
    rank 0, cannot parse its file and dies of JSONDecodeError: every time, whatever the load
    (rank 0 empties its file before it joins the group, which rank 1 must join to raise)."""
    log_dir = tmp_path / "logs"
    marker = str(tmp_path)
    command = launch(
        log_dir, "--raise-on", "1", "--torn-error-file-on", "0", "--exit-grace-s", "3",
        "--marker", marker,
    )  # fmt: skip
    try:
        outcome = run_launch(command, 120)
    finally:
        kill_mentioning(marker)
    log = command.log_path.read_text(encoding="utf-8", errors="replace")
    assert unreadable_replies(log), log[-3000:]  # torchrun really failed on the torn file
    assert read_recorded_error(command.error_file) == RecordedError(TORCHRUN_ERROR, True)
    failure = classify_failure(outcome, command, 120)
    assert failure.status == Status.OOM, failure.reason
    assert failure.root_cause_rank == 1
    assert failure.exception == RANK1_ERROR
    assert "torchrun itself failed reading rank 0's error file" in failure.reason
