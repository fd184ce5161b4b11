"""The tensor-parallel communication figures from reduced profiled steps (pure parts); the
end-to-end run is in tests/e2e/test_strategies.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.offline.test_trace_analysis import START, ev, row
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.offline.analysis.trace.reduce import RankReduction, reduce_rank
from torchscale.offline.traces.rank_trace import RankTrace
from torchscale.rank.worker.comm_probe import profiled_comm


def tp_rank(rank: int, late_us: float) -> RankReduction:
    """Two steps of a CPU TP rank: 600 us of compute, then an all-reduce it waits for; rank
    `late_us` late arrives later and so waits less (its peer waits for it)."""
    rows = []
    for step in range(2):
        t0 = START + step * 3000.0
        arrive = t0 + 600.0 + late_us
        end = t0 + 600.0 + 400.0 + 200.0  # the transfer ends 400 us after the later arrival
        rows += [
            row("step", t0, 2000.0, f"ProfilerStep#{step}", step=step),
            row("cpu_op", t0, 600.0 + late_us, "aten::mm"),
            row("comm_wait", arrive, end - arrive, "_c10d_functional::wait_tensor"),
            row(
                "collective",
                arrive,
                end - arrive,
                "gloo:all_reduce",
                tid=9,
                coll_op="all_reduce",
                pg="0",
                seq=step,
            ),
        ]
    trace = RankTrace(
        rank=rank,
        events=ev(*rows),
        path=Path("memory"),
        rank_source="given",
        source_format="kineto",
        device_type="cpu",
        backend="gloo",
        world_size=2,
    )
    return reduce_rank(trace)


def test_exposed_communication_splits_into_waiting_and_transfer() -> None:
    comm, why = profiled_comm({0: tp_rank(0, 0.0), 1: tp_rank(1, 200.0)})
    assert why is None and comm is not None
    assert comm.steps == 2 and comm.matched_collectives == 2
    # rank 0: 600 us compute, 600 us in the collective (200 waiting for rank 1, 400 transfer);
    # rank 1: 800 us compute, 400 us transfer; step 2000 us each
    assert comm.exposed == pytest.approx((600 + 400) / 4000)
    assert comm.waiting_for_peers == pytest.approx(200 / 4000)
    assert comm.exposed_transfer == pytest.approx(800 / 4000)
    assert comm.comm == comm.exposed  # nothing hidden behind compute on a blocked CPU thread


def test_a_rank_without_a_probe_gives_its_reason() -> None:
    failed = Finding(code="unavailable.probe_failed", figures={"rank": 1, "error": "disk"})
    comm, why = profiled_comm({0: tp_rank(0, 0.0), 1: failed})
    assert comm is None and why == failed
    assert say(failed) == "rank 1: profiled steps failed: disk"
    comm, why = profiled_comm({0: tp_rank(0, 0.0), 1: None})
    assert comm is None and why == coded("unavailable.probe_one_rank")
    assert "two ranks" in say(why)
