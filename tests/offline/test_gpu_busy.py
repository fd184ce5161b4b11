"""The GPU's busy share of a step and the host-bound verdict on it (docs/methodology.md,
"Host-bound"): the reduction on the kept H100 trace (read in place) and on a synthetic trace
with gaps, the threshold, and the rule that the measured share decides where MFU arithmetic
said the opposite; on a host-bound step the console and the report call compute launch time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.h100_replay import DEFAULT_SWEEP, WORKLOAD, h100_cell, read_cell
from torchscale.contracts import wording
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.thresholds import HOST_BOUND_SHARE
from torchscale.interfaces.console.cells import cell_lines
from torchscale.offline.analysis.trace.gpu_busy import (
    GPU_BUSY,
    LAUNCH_TIME,
    BusyShare,
    busy_in_steps,
    busy_over_wall,
    host_bound_verdict,
)
from torchscale.offline.results.host_bound import judged_host_bound, with_host_bound
from torchscale.offline.traces.kineto import read_kineto

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEPT_TRACES = {
    name: FIXTURES / name / "gpt2__b16__w1__bf16__ddp__5d8845e2" / "rank0.trace.json.gz"
    for name in ("h100_gpt2_profile", "h200_gpt2_profile")
}


@pytest.mark.parametrize("name", sorted(KEPT_TRACES))
def test_a_kept_gpu_trace_reduces_to_the_gpus_busy_share(name: str) -> None:
    """GPT-2 b16 bf16 on one H100: its kernels fill 96 % of its 10 profiled steps (MFU 40 %),
    not host-bound. The H200 run kept no trace: skipped, said."""
    path = KEPT_TRACES[name]
    if not path.is_file():
        pytest.skip(f"{name} kept no trace ({path.name} absent)")
    busy = busy_in_steps(read_kineto(path).events)
    assert busy is not None and busy.steps == 10
    assert 0.9 < busy.share < 1.0, busy
    # the steps' own wall time, as the profiled run measured it (its step is about 33 ms)
    assert 0.03 < busy.wall_s / busy.steps < 0.037
    assert host_bound_verdict(busy).code == GPU_BUSY


def _events(
    device: list[tuple[float, float, int]],
    steps: list[tuple[int, float, float]],
    collectives: tuple[tuple[float, float, int], ...] = (),
):
    """A trace's event table: device rows (ts, dur, stream), ProfilerStep rows and NCCL
    kernels (ts, dur, stream)."""
    rows = [
        {"name": "k", "kind": "kernel", "ts": ts, "dur": dur, "tid": tid, "device_side": True}
        for ts, dur, tid in device
    ]
    rows += [
        {"name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kind": "collective", "ts": ts}
        | {"dur": dur, "tid": tid, "device_side": True}
        for ts, dur, tid in collectives
    ]
    rows += [
        {"name": f"ProfilerStep#{n}", "kind": "step", "ts": lo, "dur": hi - lo, "tid": 1}
        | {"device_side": False, "step": n}
        for n, lo, hi in steps
    ]
    frame = pd.DataFrame(rows)
    frame["step"] = frame["step"].astype("Int64")
    frame["kind"] = frame["kind"].astype("category")
    return frame


def test_a_synthetic_trace_with_gaps_is_host_bound_under_the_threshold() -> None:
    # two steps of 1000 us; step 1: two streams overlapping (0-200 and 100-300: busy 300),
    # step 2: 100 us; a kernel outside every step does not count
    events = _events(
        [(0, 200, 7), (100, 200, 8), (1000, 100, 7), (5000, 900, 7)],
        [(1, 0.0, 1000.0), (2, 1000.0, 2000.0)],
    )
    busy = busy_in_steps(events)
    assert busy is not None and busy.steps == 2
    assert busy.busy_s == pytest.approx(400e-6) and busy.wall_s == pytest.approx(2000e-6)
    verdict = host_bound_verdict(busy)
    assert verdict.code == LAUNCH_TIME
    assert verdict.figures == {
        "busy_share": pytest.approx(0.2),
        "steps": 2,
        "threshold": HOST_BOUND_SHARE,
        "gpu_busy_s": pytest.approx(200e-6),
        "step_s": pytest.approx(1000e-6),
    }
    # the worker's capture: the whole trace is its steps, against their host wall time
    whole = busy_over_wall(events[events["device_side"]], wall_s=0.002, steps=2)
    assert whole.busy_s == pytest.approx(1300e-6) and whole.share == pytest.approx(0.65)
    assert host_bound_verdict(whole).code == GPU_BUSY
    # the threshold decides at its edge: just under is host-bound, at it is not
    at = HOST_BOUND_SHARE
    assert host_bound_verdict(BusyShare(at * 0.999, 1.0, 3)).code == LAUNCH_TIME
    assert host_bound_verdict(BusyShare(at, 1.0, 3)).code == GPU_BUSY


def test_a_collective_waiting_for_its_peers_is_no_busy_time() -> None:
    """A step of 1000 us: 100 us of compute, then an all-reduce kernel 600 us long, most of it
    waiting for a late peer. Counted as busy it read 'not host-bound' (busy 70 %); it is
    neither this GPU's work nor a wait for this host, so it leaves the step: busy 100 of the
    remaining 400 us, host-bound. Compute overlapping a collective still counts once."""
    events = _events([(0, 100, 7), (650, 100, 8)], [(1, 0.0, 1000.0)], ((100, 600, 9),))
    busy = busy_in_steps(events)
    assert busy is not None
    assert busy.busy_s == pytest.approx(200e-6) and busy.collective_s == pytest.approx(550e-6)
    assert busy.share == pytest.approx(200 / 450)
    verdict = host_bound_verdict(busy)
    assert verdict.code == LAUNCH_TIME
    assert wording.say(verdict) == (
        "host-bound: the GPU is busy 44.4 % of the step (1 traced steps, threshold 50.0 %, less "
        "0.55 ms a step of collectives alone): its compute is launch time, the GPU waits for "
        "Python/launches"
    )
    capture = busy_over_wall(events[events["device_side"]], wall_s=0.001, steps=1)
    assert capture is not None and capture.share == pytest.approx(200 / 450)


def test_a_capture_with_no_gpu_row_is_not_measured_never_busy_0_percent() -> None:
    """A busy trace that recorded no device row (CUPTI held by another profiler, e.g. Nsight
    Systems) read 'busy 0 %', hence host-bound: it measured nothing, and says so."""
    from torchscale.rank.worker import busy_trace

    events = _events([], [(1, 0.0, 1000.0), (2, 1000.0, 2000.0)])
    assert busy_over_wall(events, wall_s=0.002, steps=2) is None

    class CpuOnlyProfiler:
        def export_chrome_trace(self, path: str) -> None:
            step = {"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 1, "tid": 1}
            Path(path).write_text(json.dumps({"traceEvents": [step]}), encoding="utf-8")

    reading = busy_trace.exported_reading(CpuOnlyProfiler(), rank=0, wall_s=0.002, steps=2)
    assert reading.reason is not None and reading.reason.code == busy_trace.NO_DEVICE_ROWS
    record = busy_trace.host_bound_record([reading])
    assert record.host_bound is None and record.gpu_busy_share is None
    assert record.reason is not None and "not measured" in wording.say(record.reason)


def test_the_verdict_is_worded_at_render_time_from_its_figures() -> None:
    launch = host_bound_verdict(BusyShare(0.3, 1.0, 3))
    assert wording.say(launch) == (
        "host-bound: the GPU is busy 30.0 % of the step (3 traced steps, threshold 50.0 %): "
        "its compute is launch time, the GPU waits for Python/launches"
    )
    busy = host_bound_verdict(BusyShare(0.95, 1.0, 3))
    assert wording.say(busy) == (
        "not host-bound: the GPU is busy 95.0 % of the step (3 traced steps, threshold 50.0 %)"
    )


def _traced(result: CellResult, share: float) -> CellResult:
    """`result` as today's worker writes it: its host-bound record from a 3-step CUDA trace
    (no host-bound finding yet: reading adds it)."""
    from torchscale.rank.worker.busy_trace import BusyReading, host_bound_record

    record = host_bound_record([BusyReading(0, 3, busy_s=share * 0.03, wall_s=0.03)])
    assert result.diagnosis is not None
    findings = [f for f in result.diagnosis.findings if f.category != "host_bound"]
    diagnosis = result.diagnosis.model_copy(update={"findings": findings})
    return result.model_copy(update={"host_bound": record, "diagnosis": diagnosis})


def _host_titles(result: CellResult) -> list[str]:
    assert result.diagnosis is not None
    return [f.title for f in result.diagnosis.findings if f.category == "host_bound"]


def test_the_measured_share_decides_where_mfu_arithmetic_said_the_opposite() -> None:
    """tiny-mlp on the H100 (MFU under 1 %) is host-bound by arithmetic; GPT-2 compiled (MFU
    35 %) is never judged. Traced: tiny-mlp busy 95 % is not host-bound, GPT-2 busy 30 % is,
    and its step's compute reads as launch time."""
    tiny = read_cell(h100_cell(DEFAULT_SWEEP, "tiny-mlp__b16__w1"))
    gpt2 = read_cell(h100_cell(WORKLOAD / "runs" / "compiled", "gpt2__b8__w1__bf16__ddp"))
    # the old rule, on the same cells: the opposite verdicts
    bare = [r.model_copy(update={"host_bound": None}) for r in (tiny, gpt2)]
    assert [judged_host_bound(r).host_bound for r in bare] == [True, None]  # type: ignore[union-attr]

    busy_tiny = with_host_bound(_traced(tiny, 0.95))
    assert busy_tiny.host_bound is not None and busy_tiny.host_bound.host_bound is False
    assert _host_titles(busy_tiny) == []
    assert busy_tiny.host_bound.verdict is not None
    assert busy_tiny.host_bound.verdict.code == GPU_BUSY

    launch = with_host_bound(_traced(gpt2, 0.3))
    record = launch.host_bound
    assert record is not None and record.host_bound is True and record.steps == 3
    assert record.gpu_busy_share == pytest.approx(0.3)
    assert record.verdict is not None and record.verdict.figures["threshold"] == HOST_BOUND_SHARE
    (title,) = _host_titles(launch)
    assert title == wording.say(record.verdict)
    lines = [line.text for line in cell_lines(launch)]
    assert any(t == f"> [ANALYSIS] {title}" for t in lines)
    split = next(t for t in lines if t.startswith("> [ANALYSIS] Step "))
    assert "launch time " in split and ": compute " not in split, split
    # a cell the trace found busy keeps the plain word
    assert any(": compute " in t for t in [line.text for line in cell_lines(busy_tiny)])


def test_the_reports_step_split_calls_a_host_bound_steps_compute_launch_time(
    tmp_path: Path,
) -> None:
    from torchscale.interfaces.report.build import ReportOptions, build_report
    from torchscale.interfaces.report.model import Table
    from torchscale.interfaces.report.sources import read_sources

    source = tmp_path / "compiled"
    shutil.copytree(WORKLOAD / "runs" / "compiled", source)
    path = h100_cell(source, "gpt2__b8__w1__bf16__ddp")
    traced = _traced(read_cell(path), 0.3)
    path.write_text(traced.model_dump_json(), encoding="utf-8")
    report = build_report(read_sources(source), ReportOptions())
    tables = [b for s in report.sections for b in s.blocks if isinstance(b, Table)]
    split = next(t for t in tables if t.id == "efficiency-step-model")
    texts = {row["cell"]: row["compute_text"] for row in split.rows}
    launch = [t for t in texts.values() if "launch time" in t]
    assert len(launch) == 1 and launch[0].endswith(" launch time (GPU busy 30.0 %)"), texts
