"""While rank 0 of `validate --level perf` measures every GPU pair, the other ranks wait on the
CPU: a rank waiting in an NCCL barrier has a kernel spinning on its GPU, which shares that GPU
with the copies rank 0 times into it, so every pair of a healthy board could read low.

No GPU here: each rank's run (the harness around the perf program) is driven with stand-ins for
the process group, the barrier and the measurements, and the tests check which backend the
others wait on while one rank times copies: rank 0's GPU-to-GPU matrix, and each GPU's lone host
copies."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from torchscale.contracts.finding import Finding
from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.schema.perf import BandwidthResult, P2PMatrix, PerfRun, PerfSpec, RankPerf
from torchscale.rank.programs import perf as perf_program
from torchscale.rank.worker import harness

WORLD = 4


class Board:
    """What every simulated rank did, in order: ('join', rank, backend), ('wait', rank,
    backend), ('p2p', 0, backends rank 0's peers were waiting on when it began)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, Any]] = []
        self.backend: dict[int, str] = {}

    def waiting_backends(self) -> set[str]:
        """The backends of the barriers ranks 1.. are in when rank 0 starts the matrix: each
        of them is in its last barrier, the one after the gather."""
        return {self.backend[r] for r in range(1, WORLD)}


def _run_rank(
    rank: int, board: Board, monkeypatch: pytest.MonkeyPatch, tmp: Path, host_link: bool = False
) -> None:
    """One rank's `run`; `host_link`: its real phases of host copies (each GPU alone in turn,
    then all at once) with the copies and GPU synchronizes recorded, else no phase at all."""

    @contextmanager
    def process_group(backend: str, device: Any, timeout: Any) -> Iterator[None]:
        board.backend[rank] = backend
        board.events.append(("join", rank, backend))
        yield

    def barrier(group: Any = None) -> None:
        board.events.append(("wait", rank, board.backend[rank] if group is None else group))

    def all_gather_object(out: list[Any], mine: Any) -> None:
        for i in range(len(out)):
            out[i] = {**mine, "rank": i}

    def measure_p2p_matrix(gpus: list[int]) -> P2PMatrix:
        board.events.append(("p2p", rank, board.waiting_backends()))
        return P2PMatrix(gpus=list(gpus), unavailable=Finding(code="test.simulated"))

    fake_dist = SimpleNamespace(
        get_rank=lambda: rank,
        get_world_size=lambda: WORLD,
        barrier=barrier,
        all_gather_object=all_gather_object,
    )
    device = SimpleNamespace(type="cuda", index=rank)
    for module in (perf_program, harness):  # the program's phases, the harness's gather
        monkeypatch.setattr(module, "dist", fake_dist)
    monkeypatch.setattr(harness, "process_group", process_group)
    monkeypatch.setattr(harness, "rank_device", lambda kind: device)

    def copy(gpu: int, direction: str, read_link: Any = None) -> BandwidthResult:
        board.events.append(("copy alone" if read_link else "copy together", rank, None))
        return BandwidthResult(check=direction, device=f"cuda:{gpu}", gbps=1.0)

    if host_link:
        monkeypatch.setattr(perf_program, "measure_host_device", copy)
        monkeypatch.setattr(perf_program, "device_name", lambda dev: "GPU")
        monkeypatch.setattr(perf_program, "gpu_power_limit", lambda dev: PowerLimit())
        monkeypatch.setattr(
            torch.cuda, "synchronize", lambda dev: board.events.append(("sync", rank, None))
        )
    else:
        monkeypatch.setattr(
            perf_program,
            "measure_rank",
            lambda spec, dev, done=None: RankPerf(
                rank=rank, device=f"cuda:{rank}", device_name="GPU"
            ),
        )
    monkeypatch.setattr(perf_program, "measure_p2p_matrix", measure_p2p_matrix)
    monkeypatch.setattr(perf_program, "read_host_topology", lambda torch, count: None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: WORLD)
    spec = PerfSpec(
        device="cuda",
        dtypes=[],
        matmul_budget_s=1.0,
        memory=False,
        host_link=host_link,
        result_path=str(tmp / "perf.json"),
    )
    harness.run(perf_program.PROGRAM, spec)


def test_the_other_ranks_wait_on_the_cpu_while_rank_zero_measures_the_pairs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    board = Board()
    for rank in reversed(range(WORLD)):  # the peers reach their last barrier first
        _run_rank(rank, board, monkeypatch, tmp_path)
    p2p = [e for e in board.events if e[0] == "p2p"]
    assert [e[1] for e in p2p] == [0]  # rank 0 alone measures the matrix
    assert p2p[0][2] == {"gloo"}  # ... while every peer waits on a CPU backend
    waits = {(rank, backend) for kind, rank, backend in board.events if kind == "wait"}
    assert {backend for _, backend in waits} == {"gloo"}  # and so does every other wait
    assert {rank for rank, _ in waits} == set(range(WORLD))
    written = PerfRun.model_validate_json((tmp_path / "perf.json").read_text())
    assert written.p2p is not None and written.world_size == WORLD


def test_the_other_ranks_wait_on_the_cpu_while_one_gpu_copies_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The host-link turns, through the real `measure_rank`: while one GPU times its lone
    copy, every other rank has synchronized its GPU and waits in the same barrier, on gloo (an
    NCCL barrier would spin a kernel on those GPUs during the copy being timed). Every rank
    runs the same phases, so a rank's k-th wait is the others' k-th wait."""
    board = Board()
    for rank in reversed(range(WORLD)):  # rank 0 last: the pairs' check needs its peers
        _run_rank(rank, board, monkeypatch, tmp_path, host_link=True)
    per_rank = {r: [(kind, b) for kind, rank, b in board.events if rank == r] for r in range(WORLD)}
    lone = 0
    for rank, mine in per_rank.items():
        for i, (kind, _) in enumerate(mine):
            if kind != "copy alone":
                continue
            lone += 1
            # the peers passed the barrier this copy follows and wait in the next one
            barrier = sum(1 for k, _ in mine[:i] if k == "wait")
            for peer in set(per_rank) - {rank}:
                waits = [j for j, (k, _) in enumerate(per_rank[peer]) if k == "wait"]
                at = waits[barrier]
                assert per_rank[peer][at] == ("wait", "gloo")
                assert per_rank[peer][at - 1][0] == "sync"  # its GPU idle while it waits
    assert lone == 2 * WORLD  # each GPU alone, both directions
