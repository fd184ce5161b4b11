"""The fixed calibration every rank times after its windows (rank/worker/calibration.py), in
one process: a window's steps unchanged, the calibration timed beside them. In real 2-rank
torchrun cells (tests/e2e/test_straggler_kinds.py, on the cells of its sweep): a rank given more
work reads "more work", a rank whose core busy processes share never does.
`benchmarks/device_calibration.py` measures how often a balanced run reads "a slower device".
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.rank.test_phases import (  # noqa: F401 (process_group: a fixture)
    process_group,
    worker_spec,
)
from torchscale.rank.worker.calibration import REPS, Calibration
from torchscale.rank.worker.measure import run_window
from torchscale.rank.worker.trainer import Trainer


@pytest.mark.usefixtures("process_group")
def test_a_window_times_the_calibration_beside_its_steps(tmp_path: Path) -> None:
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    trainer.step()
    window = run_window(trainer, 4, "perf_counter", calibration=Calibration(torch.device("cpu")))
    assert len(window.step_s) == 4 and window.phases is not None
    assert window.calibration_s is not None and window.calibration_wall_s is not None
    assert len(window.calibration_s) == len(window.calibration_wall_s) == REPS
    assert all(s > 0 for s in window.calibration_s)
    # the thread's CPU time lies inside the wall time of the same repetition
    for cpu, wall in zip(window.calibration_s, window.calibration_wall_s, strict=True):
        assert cpu <= wall + 1e-3
    assert window.calibration_cost_s is not None
    assert window.calibration_cost_s >= sum(window.calibration_wall_s)
    bare = run_window(trainer, 4, "perf_counter")
    assert bare.calibration_s is None and bare.calibration_cost_s is None
