"""A compute straggler: a slower device or more work (analysis/diagnosis/device.py), read from
the fixed calibration every rank timed after its windows. Tables in, the reading out."""

from __future__ import annotations

import numpy as np
import pytest

from tests.offline.test_attribution import step_table
from torchscale.contracts.schema.cell_result import RankCalibration
from torchscale.contracts.wording import spelled
from torchscale.contracts.wording import verdicts as verdict_words
from torchscale.interfaces.report.diagnosis_text import straggler_test_text
from torchscale.offline.analysis.diagnosis.device import Calibrated, calibration_table
from torchscale.offline.analysis.diagnosis.timers import timers_step_split

CAL_S = 0.8e-3  # one calibration repetition on an unslowed device


def calibration(
    slower: float, *, ranks: int = 2, windows: int = 3, reps: int = 8, noise: float = 0.03
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
    return calibration_table(per_rank)


def verdict_of(slower: float | None, delay_ms: float = 3.0, noise: float = 0.03):  # type: ignore[no-untyped-def]
    """The verdict of rank 1 given `delay_ms` more backward per step, its calibration
    `slower` times the others' (None: no calibration)."""
    cal = calibration(slower, noise=noise) if slower is not None else None
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
    ratio = spelled.times(slower.device_ratio.value, 2)
    assert f"a slower core (its calibration {ratio} [" in verdict_words.summary(slower)
    assert f": a slower core ({ratio})" in verdict_words.straggler_text(slower, 2)
    assert "more work, its core on par" in verdict_words.summary(more)
    assert ": more work (rebalance its data)" in verdict_words.straggler_text(more, 2)
    assert "; device: more work, its core on par (" in straggler_test_text(more)  # -v
    unmeasured = verdict_of(None)
    assert "calibration" not in verdict_words.summary(unmeasured)  # the line of a result without
    assert "device: no calibration timed" in straggler_test_text(unmeasured)


def test_ranks_without_calibration_or_timed_differently_give_no_table() -> None:
    cal = RankCalibration(timer="thread_time", device_s=[[1.0]], wall_s=[[1.0]], cost_s=[1.0])
    gpu = cal.model_copy(update={"timer": "cuda_events"})
    assert calibration_table({0: cal, 1: None}) is None
    assert calibration_table({0: cal, 1: gpu}) is None
    table = calibration(1.0)
    assert table is not None and table.table.shape == (24, 2)
