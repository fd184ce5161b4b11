"""A compute straggler: a slower device or more work (analysis/diagnosis/device.py), read from
the fixed calibration every rank timed after its windows. Tables in, the reading out."""

from __future__ import annotations

import numpy as np
import pytest

from tests.offline.test_attribution import step_table
from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.schema.cell_result import RankCalibration
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import spell
from torchscale.interfaces.report.diagnosis_text import straggler_test_text
from torchscale.offline.analysis.diagnosis.device import (
    Calibrated,
    calibration_table,
    work_equal,
)
from torchscale.offline.analysis.diagnosis.diagnose import marked_injected
from torchscale.offline.analysis.diagnosis.timers import timers_step_split

CAL_S = 0.8e-3  # one calibration repetition on an unslowed device


def calibration(
    slower: float,
    *,
    ranks: int = 2,
    windows: int = 3,
    reps: int = 8,
    noise: float = 0.03,
    equal_work: bool | None = None,
    ranks_per_gpu: int = 1,
) -> Calibrated | None:
    """Every rank's calibration as the worker stores it, rank 1's `slower` times the others'
    (relative normal noise `noise` on every repetition)."""
    rng = np.random.default_rng(1)
    per_rank = {
        rank: RankCalibration(
            timer="thread_time",
            device_s=[
                [
                    CAL_S * (slower if rank == 1 else 1.0) * (1 + rng.normal(0, noise))
                    for _ in range(reps)
                ]
                for _ in range(windows)
            ],
            wall_s=[[CAL_S] * reps for _ in range(windows)],
            cost_s=[CAL_S * reps] * windows,
        )
        for rank in range(ranks)
    }
    return calibration_table(per_rank, equal_work, ranks_per_gpu)


def verdict_of(  # type: ignore[no-untyped-def]
    slower: float | None,
    delay_ms: float = 3.0,
    noise: float = 0.03,
    equal_work: bool | None = None,
):
    """The verdict of rank 1 given `delay_ms` more backward per step, its calibration
    `slower` times the others' (None: no calibration); `equal_work`: what the run knows of
    its ranks' work (work_equal)."""
    cal = calibration(slower, noise=noise, equal_work=equal_work) if slower is not None else None
    split = timers_step_split(step_table(delay=(1, "backward", delay_ms)), None, calibration=cal)
    assert split is not None and split.straggler is not None
    return split.straggler


@pytest.mark.parametrize(
    ("slower", "code"),
    [
        (1.8, "straggler.device_slower"),  # its work is ~1.8x: the device explains it
        (1.0, "straggler.more_work"),  # same fixed work on par: it was given more
        (1.15, "straggler.device_partly"),  # slower, by far less than its work
        (None, "straggler.device_unmeasured"),  # no calibration (an older result)
    ],
)
def test_a_compute_straggler_is_told_a_slower_device_or_more_work(
    slower: float | None, code: str
) -> None:
    verdict = verdict_of(slower)
    assert verdict.named and verdict.rank == 1 and verdict.kind == "compute"
    assert verdict.device is not None and verdict.device.code == code
    if slower is not None:
        ratio = verdict.device_ratio
        assert ratio is not None and ratio.low is not None and ratio.high is not None
        assert ratio.low <= slower * 1.03 and ratio.high >= slower * 0.97


@pytest.mark.parametrize(
    ("slower", "code"), [(1.8, "straggler.device_slower"), (1.0, "straggler.more_work")]
)
def test_a_users_jobs_one_calibration_after_its_steps_tells_them_apart(
    slower: float, code: str
) -> None:
    """A user's job's probe times the calibration once, after its measured steps (one window
    of CALIBRATION_REPS), and nothing says its ranks' work is equal (work_equal: None): that
    one round is enough to tell a slower core from more work."""
    from torchscale.rank.own_job.probe import CALIBRATION_REPS

    cal = calibration(slower, windows=1, reps=CALIBRATION_REPS)
    split = timers_step_split(step_table(delay=(1, "backward", 3.0)), None, calibration=cal)
    assert split is not None and split.straggler is not None
    assert split.straggler.device is not None and split.straggler.device.code == code


@pytest.mark.parametrize(("in_model", "phase"), [(False, "loop"), (True, "forward")])
def test_a_users_jobs_extra_forward_is_told_its_models_or_its_loops(
    in_model: bool, phase: str
) -> None:
    """Rank 1's 3 ms more forward phase, where the probe marked the model's forward on every
    step: inside that forward it is `forward`, outside it (a checkpoint, an evaluation) the
    loop's own work, said as outside its forward and backward."""
    steps = step_table(delay=(1, "forward", 3.0))
    late = (steps["rank"] == 1).astype(float) * (0.0 if in_model else 3e-3)
    steps = steps.assign(model_forward=steps["forward"] * 0.8 - late)
    from torchscale.rank.own_job.probe import CALIBRATION_REPS

    cal = calibration(1.0, windows=1, reps=CALIBRATION_REPS)  # its core on par: more work
    split = timers_step_split(steps, None, calibration=cal)
    assert split is not None and split.straggler is not None
    verdict = split.straggler
    assert (verdict.rank, verdict.kind, verdict.phase) == (1, "compute", phase)
    assert verdict.device is not None and verdict.device.code == "straggler.more_work"
    line = verdict_words.straggler_text(verdict, 2)
    said = "outside its forward and backward" if phase == "loop" else "compute in forward"
    assert said in line
    # the loop's extra work is the rank's own: no data to rebalance there
    advice = "its loop's own" if phase == "loop" else "rebalance its data"
    assert advice in line and ("rebalance" in line) == (phase == "forward")


def test_ranks_sharing_a_gpu_get_no_device_reading() -> None:
    """Two ranks on one GPU (launcher.ranks_per_gpu: 2), rank 1's CUDA-timed calibration 1.8x
    the other's: each times a GPU its neighbour drives too, so no "slower GPU: replace or
    cool it" (what it read before), and the line says why there is no reading."""
    cal = calibration(1.8, ranks_per_gpu=2)
    assert cal is not None
    cuda = Calibrated(table=cal.table, timer="cuda_events", ranks_per_gpu=2)
    split = timers_step_split(step_table(delay=(1, "backward", 3.0)), None, calibration=cuda)
    assert split is not None and split.straggler is not None
    verdict = split.straggler
    assert verdict.device is not None and verdict.device.code == "straggler.device_shared_gpu"
    assert verdict.device_ratio is None
    line = verdict_words.straggler_text(verdict, 2)
    assert "replace or cool" not in line
    assert line.endswith(
        ": 2 ranks share each GPU: no device reading (a rank's calibration "
        "times a GPU the others drive too)"
    ), line
    owned = Calibrated(table=cal.table, timer="cuda_events")  # a GPU each: read as before
    split = timers_step_split(step_table(delay=(1, "backward", 3.0)), None, calibration=owned)
    assert split is not None and split.straggler is not None
    assert "replace or cool the GPU" in verdict_words.straggler_text(split.straggler, 2)


def test_a_noisy_calibration_tells_neither() -> None:
    """Repetitions spread 40 % around a 10 % slowdown: neither slower nor shown on par."""
    verdict = verdict_of(1.3, noise=0.6)
    assert verdict.device is not None
    assert verdict.device.code == "straggler.device_undecided"


def test_only_a_compute_straggler_is_read() -> None:
    """An input straggler (its data phase) keeps no device reading; nobody named, none."""
    cal = calibration(1.8)
    data = timers_step_split(step_table(delay=(1, "data", 3.0)), None, calibration=cal)
    balanced = timers_step_split(step_table(), None, calibration=cal)
    assert data is not None and data.straggler is not None and balanced is not None
    assert data.straggler.kind == "input" and data.straggler.device is None
    assert balanced.straggler is not None and not balanced.straggler.named
    assert balanced.straggler.device is None and balanced.straggler.device_ratio is None


def test_the_reading_is_said_in_the_verdicts_line() -> None:
    slower, more = verdict_of(1.8), verdict_of(1.0)
    assert slower.device_ratio is not None and slower.device_ratio.value is not None
    ratio = spell.times(slower.device_ratio.value, 2)
    line = verdict_words.straggler_text(slower, 2)
    assert line.endswith(f": a slower core ({ratio}): the same work takes longer"), line
    assert f"; device: a slower core ({ratio})" in straggler_test_text(slower)  # -v
    # its interval stored beside the reading
    low, high = slower.device.figures["ratio"][1:]  # type: ignore[union-attr]
    assert low is not None and high is not None and low < slower.device_ratio.value < high
    assert verdict_words.straggler_text(more, 2).endswith(": more work (rebalance its data)")
    assert "; device: more work (rebalance its data)" in straggler_test_text(more)  # -v
    unmeasured = verdict_of(None)
    # the line of a result without: no device reading in it
    assert verdict_words.line(unmeasured, 2).figures["device"] is None
    assert "calibration" not in verdict_words.straggler_text(unmeasured, 2)
    assert "device: no calibration timed" in straggler_test_text(unmeasured)


def test_ranks_without_calibration_or_timed_differently_give_no_table() -> None:
    cal = RankCalibration(timer="thread_time", device_s=[[1.0]], wall_s=[[1.0]], cost_s=[1.0])
    gpu = cal.model_copy(update={"timer": "cuda_events"})
    assert calibration_table({0: cal, 1: None}) is None
    assert calibration_table({0: cal, 1: gpu}) is None
    table = calibration(1.0)
    assert table is not None and table.table.shape == (24, 2)


@pytest.mark.parametrize(
    ("slower", "equal_work", "code"),
    [
        (1.0, True, "straggler.device_in_window"),  # same work, calibration on par: in window
        (1.15, True, "straggler.device_slower"),  # same work: any significant slowdown is it
        (1.0, False, "straggler.more_work"),  # counted more work: as without the rule
        (1.15, None, "straggler.device_partly"),  # not known: the calibration's rule alone
    ],
)
def test_the_same_work_on_every_rank_is_never_more_work(
    slower: float, equal_work: bool | None, code: str
) -> None:
    verdict = verdict_of(slower, equal_work=equal_work)
    assert verdict.device is not None and verdict.device.code == code
    if code == "straggler.device_in_window":
        line = verdict_words.straggler_text(verdict, 2)
        # the device only where the calibration shows it: on par, the line never blames it
        assert line.endswith(
            ": slower only while it worked, with the same work as the others: its core timed on "
            "par after, so not shown to be the device (a process on its core, its host thread, "
            "a clock drop)"
        ), line


def test_work_is_equal_by_the_plan_of_a_zoo_model_alone() -> None:
    """Only the zoo's fixed shapes say so: a plug-in's or a user's job's work per rank is its
    own (a job's label shows a placeholder strategy)."""

    def cell(model: str, strategy: str) -> CellIdentity:
        return CellIdentity.model_construct(model=model, strategy=strategy)

    plans = [work_equal(cell("tiny-cnn", s)) for s in ("ddp", "fsdp", "tp", "pp", "fsdp_tp")]
    assert plans == [True, True, True, False, False]
    assert work_equal(cell("own:train.py", "ddp")) is None
    assert work_equal(cell("mypkg.models:build", "ddp")) is None


def test_an_injected_delay_gets_no_device_reading() -> None:
    """--inject-delay makes the straggler: neither its device nor its work, so nothing said."""
    verdict = verdict_of(1.0, equal_work=True)
    assert verdict.device is not None
    assert verdict_words.line(verdict, 2).figures["device"] == verdict.device.model_dump()
    marked = marked_injected(verdict, frozenset({1}))
    assert marked is not None and marked.injected
    assert marked.device is None and marked.device_ratio is None
    assert verdict_words.line(marked, 2).figures["device"] is None
    assert "while it worked" not in verdict_words.straggler_text(marked, 2)
    kept = marked_injected(verdict, frozenset({0}))
    assert kept is not None and not kept.injected and kept.device == verdict.device
