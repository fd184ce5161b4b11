"""The time a DDP communication hook holds a rank's launches (rank/worker/comm_hold.py), timed
through a real DDP reducer in one process: the plug-in's hook still registers (DDP checks its
signature), its own time lands in the running tally, and the phase recorder splits each step's
hold into the part before the last gradient (inside backward) and the part after it.

No `from __future__ import annotations` here: DDP compares a hook's annotations with the real
GradBucket and Future classes, as it does for a user's module."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel

from torchscale.rank.worker.comm_hold import HoldTally, timed_hook, timed_hooks
from torchscale.rank.worker.phases import PhaseRecorder, trainable

HOLD_S = 0.02
CALLS: list[int] = []  # one entry per hook call (the buckets of the steps run)


@pytest.fixture(scope="module")
def process_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A 1-rank gloo group: DDP's reducer still buckets and calls the hook at world size 1."""
    store = f"file://{tmp_path_factory.mktemp('pg') / 'store'}"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()
        torch.set_num_threads(threads)


def late_hook(
    state: object, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:  # annotated as users write it: DDP checks these
    """Sleeps before torch's own all-reduce hook at every bucket (a user's slow hook)."""
    CALLS.append(1)
    time.sleep(HOLD_S)
    return allreduce_hook(state, bucket)  # type: ignore[arg-type]


def ddp_model(bucket_cap_mb: float) -> DistributedDataParallel:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(3)))
    return DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)


def run_steps(ddp: DistributedDataParallel, recorder: PhaseRecorder, steps: int) -> None:
    inputs = torch.randn(8, 256)
    with recorder.hooks(trainable(ddp)):
        for _ in range(steps):
            recorder.step_start()
            recorder.data_end()
            loss = ddp(inputs).sum()
            recorder.backward_start()
            loss.backward()
            recorder.backward_end()
            ddp.zero_grad()
            recorder.step_end()


def test_timed_hook_keeps_the_signature_and_adds_its_time() -> None:
    tally = HoldTally()
    timed = timed_hook(late_hook, tally)
    assert timed.__name__ == "late_hook"
    import inspect

    assert inspect.signature(timed) == inspect.signature(late_hook)
    assert tally.held_s == 0.0


@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize(
    ("bucket_cap_mb", "several"),
    # one bucket: the hook runs once the last gradient is in, all of its hold after it;
    # 0.26 MB buckets (about a layer each): every bucket but the last is launched while
    # backward still runs
    [(25.0, False), (0.26, True)],
)
def test_the_recorder_splits_each_step_hold_at_the_last_gradient(
    bucket_cap_mb: float, several: bool
) -> None:
    ddp = ddp_model(bucket_cap_mb)
    tally = HoldTally()
    timed_hooks(ddp, tally)
    ddp.register_comm_hook(None, late_hook)  # as a plug-in calls it
    recorder = PhaseRecorder(4, 1, torch.device("cpu"), cuda_events=False, hold=tally)
    run_steps(ddp, recorder, 1)  # DDP rebuilds its buckets after the first iteration
    recorder = PhaseRecorder(4, 1, torch.device("cpu"), cuda_events=False, hold=tally)
    CALLS.clear()
    run_steps(ddp, recorder, 4)
    buckets = len(CALLS) // 4
    assert (buckets > 1) == several
    held = recorder.comm_hold()
    assert held is not None
    total, in_backward = held
    for step_total, before in zip(total, in_backward, strict=True):
        assert step_total is not None and before is not None
        # sleep() sleeps at least its time; the upper bound is only sleep's, never a timing
        assert step_total >= buckets * HOLD_S
        assert before >= (buckets - 1) * HOLD_S
        assert step_total - before >= HOLD_S  # the last bucket waits for the last gradient
    phases = recorder.seconds()
    for before, backward in zip(in_backward, phases["backward"], strict=True):
        assert backward is not None and before is not None and backward >= before


@pytest.mark.usefixtures("process_group")
def test_no_tally_no_hold() -> None:
    ddp = ddp_model(25.0)
    recorder = PhaseRecorder(2, 1, torch.device("cpu"), cuda_events=False)
    run_steps(ddp, recorder, 2)
    assert recorder.comm_hold() is None


def test_a_hook_that_raises_still_counts_its_time(tmp_path: Path) -> None:
    tally = HoldTally()

    def broken(state: object, bucket: object) -> object:
        time.sleep(0.005)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        timed_hook(broken, tally)(None, None)
    assert tally.held_s >= 0.005
