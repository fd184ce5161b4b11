"""A max-batch probe's peaks are its training steps', not torch.compile's.

A probe is the sweep's cell at one batch with the probe's measurement
(torchscale/orchestration/memory/probe.py). Its compile must happen in a discarded warm-up
step, and the rank must reset the CUDA peak counters after that step and before the measured
one, so that the compiler's scratch is not in the peak the search reports. Here the rank's
real `measure` runs with a probe's measurement, on a 1-rank gloo group; the CUDA peak
counters and the measured window are fakes that record the order of events (no GPU here),
and each training step is recorded instead of run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.orchestration.memory.probe import PROBE_WARMUP_STEPS, probe_measurement
from torchscale.rank.worker import measure as measure_module
from torchscale.rank.worker import steady_state
from torchscale.rank.worker.measure import Window, measure
from torchscale.rank.worker.trainer import Trainer


@pytest.fixture()
def process_group(tmp_path: Path) -> Iterator[None]:
    """A 1-rank gloo group, as torchrun would give a world-size-1 probe."""
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def probe_spec(compiled: bool) -> WorkerSpec:
    """A tiny-mlp cell's spec with a probe's measurement (the sweep's asked for no warm-up,
    so whatever warm-up runs is the probe's own)."""
    sweep = MeasurementConfig(steps=5, repeats=3, warmup_steps=0)
    return WorkerSpec(
        cell=CellIdentity(
            id="p01__cell",
            definition_sha256="0" * 64,
            model="tiny-mlp",
            label="tiny-mlp",
            batch_size=4,
            world_size=1,
            precision="fp32",
            strategy="ddp",
            device="cpu",
            backend="gloo",
        ),
        model=ModelSpec(name="tiny-mlp"),
        training=TrainingConfig(compile=compiled),
        measurement=probe_measurement(sweep, 2),
        data=DataConfig(),
        result_path="/nonexistent/result.json",
        steps_path="/nonexistent/steps.jsonl",
    )


@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize("compiled", [True, False])
def test_a_probe_steps_once_before_its_cuda_peaks_are_reset(
    monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    # built eager on CPU: the protocol is under test, not the compiler (minutes on CPU)
    trainer = Trainer.build(probe_spec(False), torch.device("cpu"))
    trainer.spec = probe_spec(compiled)
    trainer.device = torch.device("cuda", 0)  # only the protocol runs: steps are recorded
    events: list[str] = []

    def window(_trainer: Trainer, steps: int, _timing: str, **_options: Any) -> Window:
        events.append("window")
        return Window(1.0, [0.5] * steps)

    def peak(name: str) -> Any:
        def read(_device: Any = None) -> int:
            events.append(name)
            return 1

        return read

    monkeypatch.setattr(trainer, "step", lambda: events.append("step"))
    # the warm-up's device syncs and its all-reduces would need the GPU the device names
    monkeypatch.setattr(steady_state, "synchronize", lambda _device: None)
    monkeypatch.setattr(steady_state, "agree_any", lambda flag, _device: flag)
    monkeypatch.setattr(measure_module, "collective_timeout_s", lambda _warm, _device: None)
    monkeypatch.setattr(measure_module, "run_window", window)
    monkeypatch.setattr(measure_module, "trace_rank", lambda *_args: None)  # a real GPU's
    monkeypatch.setattr(
        torch.cuda, "reset_peak_memory_stats", lambda _device=None: events.append("reset")
    )
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", peak("allocated"))
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", peak("reserved"))
    monkeypatch.setattr(torch.cuda, "memory_stats", lambda _device=None: {})
    result = measure(trainer, "host")
    reset = events.index("reset")
    warm_steps = events[:reset].count("step")
    # the compile (compiled) or the first call (eager) lands in a step whose memory the
    # reset then leaves out; nothing but the measured window runs after the reset
    assert warm_steps >= PROBE_WARMUP_STEPS >= 1
    assert events[reset:] == ["reset", "window", "allocated", "reserved"]
    assert result.peak_allocated == 1 and len(result.windows) == 1
    # a compiled rank keeps warming up until two steps compile nothing (steady_state.py);
    # here nothing compiles, so one step beyond the probe's
    assert warm_steps == (2 if compiled else PROBE_WARMUP_STEPS)
