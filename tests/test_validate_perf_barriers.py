"""While rank 0 of `validate --level perf` measures every GPU pair, the other ranks wait on the
CPU: a rank waiting in an NCCL barrier has a kernel spinning on its GPU, which shares that GPU
with the copies rank 0 times into it, so every pair of a healthy board could read low.

No GPU here: each rank's `run` is driven with stand-ins for the process group, the barrier
and the measurements, and the test checks which backend every wait is on, the wait during
the GPU-to-GPU matrix above all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from torchscale.orchestration.validate import perf_worker
from torchscale.orchestration.validate.bandwidth import P2PMatrix
from torchscale.orchestration.validate.perf_worker import PerfRun, PerfSpec, RankPerf

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


def _run_rank(rank: int, board: Board, monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
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
        return P2PMatrix(gpus=list(gpus), unavailable="simulated")

    fake_dist = SimpleNamespace(
        get_rank=lambda: rank,
        get_world_size=lambda: WORLD,
        barrier=barrier,
        all_gather_object=all_gather_object,
    )
    device = SimpleNamespace(type="cuda", index=rank)
    monkeypatch.setattr(perf_worker, "dist", fake_dist)
    monkeypatch.setattr(perf_worker, "process_group", process_group)
    monkeypatch.setattr(perf_worker, "rank_device", lambda kind: device)
    monkeypatch.setattr(
        perf_worker,
        "measure_rank",
        lambda spec, dev: RankPerf(rank=rank, device=f"cuda:{rank}", device_name="GPU"),
    )
    monkeypatch.setattr(perf_worker, "measure_p2p_matrix", measure_p2p_matrix)
    monkeypatch.setattr(perf_worker, "read_host_topology", lambda torch, count: None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: WORLD)
    spec = PerfSpec(
        device="cuda",
        dtypes=[],
        matmul_budget_s=1.0,
        memory=False,
        host_link=False,
        result_path=str(tmp / "perf.json"),
    )
    perf_worker.run(spec)


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


def test_a_phase_waits_for_the_gpu_then_on_the_cpu_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A phase's barrier follows a synchronize of this rank's GPU: its queued work is done
    before it waits, so nothing of it runs while a peer measures."""
    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device: calls.append("sync"))
    monkeypatch.setattr(perf_worker, "dist", SimpleNamespace(barrier=lambda: calls.append("bar")))
    perf_worker._phase(SimpleNamespace(type="cuda", index=0))  # type: ignore[arg-type]
    assert calls == ["sync", "bar"]
