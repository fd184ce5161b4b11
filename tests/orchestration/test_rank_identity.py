"""A failed rank is named by the global rank it had, not by where its logs lie.

torch's dynamic rendezvous numbers nodes by sorting (host name, pid): `gpu10` sorts before `gpu9`,
so Slurm's node 0 can hold global ranks 8..15. Each rank records who it was
(rank<N>.identity.json beside its pid file), and the failure reader maps torchrun's per-node
error files (`ranks/node<k>/<run>/attempt_0/<local rank>/error.json`) and the pid of the
agent's "failed" line through those records. The layouts here are what a 2-node, 2-ranks-per-node
Slurm step writes when Slurm node 0 is gpu9 (rendezvous group rank 1: ranks 2, 3) and node 1 is
gpu10 (group rank 0: ranks 0, 1); the last test has a real c10d rendezvous number two local
"nodes" whose addresses sort against their Slurm ids.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT, kill_mentioning
from torchscale.contracts.cell import Status
from torchscale.contracts.rank_diagnostics import (
    DIAGNOSTICS_ENV,
    RankIdentity,
    identity_file,
    pid_file,
)
from torchscale.orchestration.launch.diagnose import read_identities, read_pids
from torchscale.orchestration.launch.failure import RankMap, classify_failure, one_node, rank_errors
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.launch.torchrun import LaunchCommand, torchrun_command
from torchscale.rank.worker.diagnostics import rank_identity

OOM = "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
PEER = (
    "RuntimeError: [third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
    "[10.0.0.9]:1234. This is typically caused by a remote worker crashing."
)
# (Slurm node, local rank) -> (global rank, host, pid): Slurm node 0 is gpu9, second in the sort
PLACES = {
    (0, 0): (2, "gpu9", 4242),
    (0, 1): (3, "gpu9", 4243),
    (1, 0): (0, "gpu10", 5150),
    (1, 1): (1, "gpu10", 5151),
}
RUNS = {0: "job-7_a1b2", 1: "job-7_c3d4"}  # torchrun's per-node run directory


def two_nodes(log_dir: Path) -> LaunchCommand:
    """The cell's torchrun as each node of a 2-node Slurm step runs it."""
    return torchrun_command(
        "torchscale.rank.worker.main",
        [],
        nproc=2,
        device="cpu",
        log_dir=log_dir,
        base_env={},
        omp_num_threads=1,
        rendezvous=("--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=gpu9:29400"),
    )


def rank_dir(log_dir: Path, node: int, local: int) -> Path:
    return log_dir / "ranks" / f"node{node}" / RUNS[node] / "attempt_0" / str(local)


def write_identities(command: LaunchCommand, root: str | None = None) -> None:
    """Every rank's records, as install() writes them; `root` is the results directory as the
    nodes mounted it (by default the same path as here)."""
    directory = command.diagnostics_dir
    directory.mkdir(parents=True, exist_ok=True)
    for (node, local), (rank, host, pid) in PLACES.items():
        error = rank_dir(command.log_dir, node, local) / "error.json"
        if root is not None:
            error = Path(root) / error.relative_to(command.log_dir.parent)
        identity = RankIdentity(rank, local, 1 - node, node, host, pid, str(error))
        identity_file(directory, rank).write_text(identity.to_json())
        pid_file(directory, rank).write_text(f"{pid}\n")


def rank_error(log_dir: Path, node: int, local: int, message: str) -> None:
    path = rank_dir(log_dir, node, local) / "error.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"message": {"message": message, "extraInfo": {"timestamp": "1"}}}
    path.write_text(json.dumps(body))


def node_error(command: LaunchCommand, node: int, message: str) -> None:
    """What node k's torchrun wrote to its error file (error.json, error-node<k>.json)."""
    path = command.error_file
    if node:
        path = path.with_name(f"{path.stem}-node{node}{path.suffix}")
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"message": {"message": message, "extraInfo": {"timestamp": "1"}}}
    path.write_text(json.dumps(body))


def root_cause_block(rank: int, local: int, pid: int, message: str) -> str:
    """A node's torchrun summary: every node's torchrun prints one into srun's combined log."""
    return (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        f"  rank      : {rank} (local_rank: {local})\n"
        f"  exitcode  : 1 (pid: {pid})\n"
        f"  {message}\n"
        "============================================================\n"
    )


def failure_of(command: LaunchCommand, log: str) -> tuple[Status, int | None, str]:
    command.log_path.parent.mkdir(parents=True, exist_ok=True)
    command.log_path.write_text(log)
    outcome = ProcessOutcome(1, False, 9.0, command.log_path)
    failure = classify_failure(outcome, command, 60)
    return failure.status, failure.root_cause_rank, failure.reason


# ============================================================================ the record


def test_a_rank_records_torchruns_and_slurms_numbering(tmp_path: Path) -> None:
    env = {
        "RANK": "3",
        "LOCAL_RANK": "1",
        "GROUP_RANK": "1",
        "SLURM_NODEID": "0",
        "TORCHELASTIC_ERROR_FILE": "/r/ranks/node0/run/attempt_0/1/error.json",
    }
    identity = rank_identity(env)
    assert identity == RankIdentity(
        rank=3,
        local_rank=1,
        group_rank=1,
        slurm_node_id=0,
        hostname=socket.gethostname(),
        pid=os.getpid(),
        error_file="/r/ranks/node0/run/attempt_0/1/error.json",
    )
    assert RankIdentity.from_json(identity.to_json()) == identity
    outside = rank_identity({})  # not under torchrun or Slurm
    assert (outside.rank, outside.local_rank, outside.slurm_node_id) == (0, None, None)


@pytest.mark.parametrize("text", ["", "{", "[]", '{"rank": 1}', '{"rank": "x", "pid": 1}'])
def test_a_partial_or_foreign_record_is_no_identity(text: str) -> None:
    assert RankIdentity.from_json(text) is None


@pytest.mark.slow  # starts a child process
def test_install_writes_the_identity_beside_the_pid(tmp_path: Path) -> None:
    """In a process of its own: install() registers signal handlers."""
    env = {
        **os.environ,
        DIAGNOSTICS_ENV: str(tmp_path),
        "RANK": "5",
        "LOCAL_RANK": "1",
        "GROUP_RANK": "2",
        "SLURM_NODEID": "0",
    }
    script = "from torchscale.rank.worker.diagnostics import install; install(); print('ok')"
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "ok", done.stderr
    (identity,) = read_identities(tmp_path).values()
    assert (identity.rank, identity.local_rank, identity.group_rank) == (5, 1, 2)
    assert identity.slurm_node_id == 0
    assert read_pids(tmp_path) == {5: identity.pid}


def test_install_writes_the_identity_the_reader_maps_to_the_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process, its signal handlers not registered (faulthandler's calls stood in for):
    the records written, and what the failure reader makes of them."""
    import faulthandler

    from torchscale.rank.worker import diagnostics

    monkeypatch.setattr(faulthandler, "register", lambda *a, **k: None)
    monkeypatch.setattr(faulthandler, "enable", lambda *a, **k: None)
    monkeypatch.setattr(diagnostics, "_open_files", [])
    env = {DIAGNOSTICS_ENV: str(tmp_path), "RANK": "5", "LOCAL_RANK": "1", "GROUP_RANK": "2"}
    try:
        diagnostics.install({**env, "SLURM_NODEID": "0"})
    finally:
        for handle in diagnostics._open_files:
            handle.close()
    (identity,) = read_identities(tmp_path).values()
    assert (identity.rank, identity.local_rank, identity.group_rank) == (5, 1, 2)
    assert identity.slurm_node_id == 0
    assert read_pids(tmp_path) == {5: os.getpid()} == {5: identity.pid}


# ============================================================================ the reader


def test_a_raising_ranks_own_error_file_names_its_global_rank(tmp_path: Path) -> None:
    """torchrun recorded the peers' errors; the rank that failed on its own is Slurm node 0's
    local rank 1: global rank 3, not 1 (which is gpu10's)."""
    command = two_nodes(tmp_path / "cell")
    write_identities(command)
    node_error(command, 0, PEER)
    node_error(command, 1, PEER)
    rank_error(command.log_dir, 0, 0, PEER)
    rank_error(command.log_dir, 0, 1, OOM)
    rank_error(command.log_dir, 1, 0, PEER)
    log = root_cause_block(2, 0, 4242, PEER)
    assert failure_of(command, log) == (Status.OOM, 3, f"out of memory: {OOM}")


def test_the_exception_goes_with_the_rank_that_raised_it(tmp_path: Path) -> None:
    """srun's log holds every node's Root Cause block; the first may be the peer's (gpu10's
    rank 0), while the exception recorded is rank 3's own."""
    command = two_nodes(tmp_path / "cell")
    write_identities(command)
    node_error(command, 0, OOM)
    node_error(command, 1, PEER)
    rank_error(command.log_dir, 0, 1, OOM)
    rank_error(command.log_dir, 1, 0, PEER)
    log = root_cause_block(0, 0, 5150, PEER) + root_cause_block(3, 1, 4243, OOM)
    assert failure_of(command, log)[1] == 3


def test_records_match_though_the_nodes_mounted_the_results_elsewhere(tmp_path: Path) -> None:
    command = two_nodes(tmp_path / "cell")
    write_identities(command, root="/gpfs/project/results")
    rank_error(command.log_dir, 0, 1, OOM)
    ranks_dir = command.log_dir / "ranks"
    assert rank_errors(command.log_dir, RankMap.read(command)) == [(3, OOM)]
    path = rank_dir(command.log_dir, 1, 1) / "error.json"
    assert RankMap.read(command).of_error_file(path, ranks_dir) == 1


def test_the_agents_line_is_mapped_through_the_pid(tmp_path: Path) -> None:
    """Without a Root Cause block the agent's line gives a local rank and a pid only."""
    command = two_nodes(tmp_path / "cell")
    write_identities(command)
    line = "E1122 failed (exitcode: -9) local_rank: 1 (pid: 4243) of binary: python\n"
    status, rank, reason = failure_of(command, line)
    assert (status, rank) == (Status.FAILED, 3)
    assert reason.startswith("rank 3 was killed by SIGKILL")


def test_a_pid_seen_on_two_nodes_names_no_rank(tmp_path: Path) -> None:
    command = two_nodes(tmp_path / "cell")
    write_identities(command)
    reused = RankIdentity(0, 0, 0, 1, "gpu10", 4243, None)  # gpu10 had gpu9's pid too
    identity_file(command.diagnostics_dir, 0).write_text(reused.to_json())
    pid_file(command.diagnostics_dir, 0).write_text("4243\n")
    line = "E1122 failed (exitcode: -9) local_rank: 1 (pid: 4243) of binary: python\n"
    assert failure_of(command, line)[1] is None


def test_a_multi_node_layout_without_records_guesses_no_rank(tmp_path: Path) -> None:
    """Results from before the records: node 0's local rank 1 is not assumed to be rank 1."""
    command = two_nodes(tmp_path / "cell")
    node_error(command, 0, PEER)
    rank_error(command.log_dir, 0, 1, OOM)
    line = "E1122 failed (exitcode: 1) local_rank: 1 (pid: 4243) of binary: python\n"
    assert failure_of(command, line) == (Status.OOM, None, f"out of memory: {OOM}")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--standalone", "--nnodes=1"], True),
        (["--nnodes=1"], True),
        (["--nnodes", "1"], True),
        (["--nnodes=2", "--rdzv-backend=c10d"], False),
        (["--nnodes", "4"], False),
        ([], False),
    ],
)
def test_one_node(argv: list[str], expected: bool) -> None:
    assert one_node(["python", "-m", "torch.distributed.run", *argv, "-m", "w"]) is expected


# ============================================================================ a real rendezvous


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.slow  # real torchruns meeting at one rendezvous
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="127.0.0.0/8 on loopback")
def test_ranks_numbered_by_a_real_rendezvous_are_named_by_their_records(tmp_path: Path) -> None:
    """Two torchrun agents on this host as Slurm nodes 0 and 1
    (torchscale.orchestration.schedulers.slurm.node gives each its ranks/node<k>/ and error file),
    at addresses that sort like gpu9 and gpu10: the rendezvous makes Slurm node 1 group rank 0.
    Every rank raises an OOM naming its RANK."""
    log_dir = tmp_path / "cell"
    port = free_port()
    commands = [
        torchrun_command(
            "tests.rank_fault_worker",
            ["--raise-on", "all", "--marker", str(tmp_path)],
            nproc=1,
            device="cpu",
            log_dir=log_dir,
            base_env=dict(os.environ),
            omp_num_threads=1,
            extra_env={"PYTHONPATH": str(REPO_ROOT)},
            rendezvous=(
                "--nnodes=2",
                "--rdzv-backend=c10d",
                f"--rdzv-endpoint=127.0.0.1:{port}",
                "--rdzv-id=rank-identity",
                f"--local-addr={address}",
            ),
        )
        for address in ("127.0.0.9", "127.0.0.10")  # Slurm nodes 0 and 1
    ]
    log_dir.mkdir(parents=True)
    try:
        with commands[0].log_path.open("wb") as log:
            agents = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "torchscale.orchestration.schedulers.slurm.node",
                        "--",
                        *command.argv,
                    ],
                    env={**command.env, "SLURM_NODEID": str(node)},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
                for node, command in enumerate(commands)
            ]
            codes = [agent.wait(timeout=120) for agent in agents]
    finally:
        kill_mentioning(str(tmp_path))
    text = commands[0].log_path.read_text()
    identities = read_identities(commands[0].diagnostics_dir)
    by_node = {who.slurm_node_id: who for who in identities.values()}
    assert (by_node[0].rank, by_node[1].rank) == (1, 0), text  # the sort, not Slurm's order
    assert by_node[0].group_rank == 1
    errors = rank_errors(log_dir, RankMap.read(commands[0]))
    assert [(rank, error.rpartition("injected on ")[2]) for rank, error in errors] == [
        (0, "rank 0)"),
        (1, "rank 1)"),
    ]
    outcome = ProcessOutcome(codes[0], False, 9.0, commands[0].log_path)
    failure = classify_failure(outcome, commands[0], 120)
    assert failure.status == Status.OOM
    assert f"injected on rank {failure.root_cause_rank})" in failure.reason  # rank 1: node 0's
