"""Phase timing, the straggler and the three-way split of the synchronised step, injected
delays, markers and trace capture.

Pure aggregate tests on synthetic RankMeasurements; the phase recorder and the delays on a
1-rank gloo group in this process (no torchrun); one real 2-rank CPU torchrun cell with
`--inject-delay 1:backward:50` and a torch.profiler capture, whose result must name rank 1,
its backward phase and a gap within 25 % of 50 ms, and whose two compressed traces must hold
`torchscale:backward` ranges and ProfilerStep events.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from tests.project.test_torch_free import import_chain, import_graph
from tests.rank.test_aggregate import make_rank, make_spec, run
from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TelemetryConfig,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import StragglerVerdict
from torchscale.contracts.step_phases import INJECTED_DELAY_RANGE
from torchscale.contracts.step_phases import STEP_PHASES as PHASES
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import why
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.wording.diagnosis_checks import detail as said
from torchscale.contracts.worker_spec import DelaySpec, ProfileSpec, WorkerSpec, parse_delay
from torchscale.offline.results.frame import cells_table, ranks_table
from torchscale.offline.results.split_figures import split_figures
from torchscale.rank.telemetry.cpu_wait import SCHEDSTAT
from torchscale.rank.worker import markers
from torchscale.rank.worker import measure as measure_module
from torchscale.rank.worker.delay import RankDelays
from torchscale.rank.worker.measure import run_window
from torchscale.rank.worker.phases import FSDP_REASON, PhaseRecorder
from torchscale.rank.worker.trainer import Trainer


def named(result: CellResult) -> StragglerVerdict:
    """The straggler the result's diagnosis names (the test fails where it names none)."""
    verdict = result.diagnosis.straggler if result.diagnosis else None
    assert verdict is not None and verdict.named, verdict
    return verdict


REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEDSTAT_READABLE = os.path.exists(SCHEDSTAT)  # Linux: the CPU wait and CPU time are read
SYNC = (0.075, 0.075, 0.075, 0.075)


def phases(
    forward: float = 0.004,
    backward: float = 0.006,
    wait: float | None = 0.001,
    optimizer: float = 0.002,
    data: float = 0.0001,
) -> dict[str, float | None]:
    return {
        "data": data,
        "forward": forward,
        "backward": backward,
        "grad_sync_wait": wait,
        "optimizer": optimizer,
    }


# ================================================================ straggler and split (pure)


@pytest.mark.slow
def test_rank_slow_in_backward_is_the_straggler() -> None:
    """Rank 1 is 60 ms slower in backward. Synchronised steps are equal (and
    rank 0's median is even a hair higher): the straggler comes from each rank's own work per
    step (phase timers, paired by step), named because the paired test is significant."""
    ranks = [
        make_rank(
            0,
            [1, 1, 1],
            (0.0751,) * 4,
            no_sync=(0.012,) * 4,
            phases=phases(backward=0.006, wait=0.063),
        ),
        make_rank(
            1, [1, 1, 1], SYNC, no_sync=(0.072,) * 4, phases=phases(backward=0.066, wait=0.003)
        ),
    ]
    result = run(ranks)
    straggler = named(result)
    assert straggler.rank == 1
    # grad_sync_wait is where the OTHER rank shows the straggler: never the straggler's phase
    assert straggler.phase == "backward"
    assert straggler.phase_gap_s is not None
    assert straggler.phase_gap_s.value == pytest.approx(0.060)
    # its own work (data + forward + backward + optimizer) over the other's: 72.1 - 12.1 ms
    assert straggler.gap_s is not None and straggler.gap_s.value == pytest.approx(0.060)
    assert not straggler.injected
    assert [r.compute_time.p50 for r in result.ranks if r.compute_time] == [0.012, 0.072]
    assert result.ranks[1].phases is not None
    assert result.ranks[1].phases.backward == pytest.approx(0.066)
    verdict = result.diagnosis.straggler if result.diagnosis else None
    assert verdict is not None and verdict.named and verdict.p_value is not None
    assert verdict.p_value < 0.01
    assert verdict_words.straggler_text(verdict, 2).startswith(
        "Straggler: rank 1, compute in backward, +60"
    )


@pytest.mark.slow
def test_summary_and_rank_tables_carry_the_straggler_and_the_split() -> None:
    ranks = [
        make_rank(
            0, [1, 1, 1], SYNC, no_sync=(0.012,) * 4, phases=phases(backward=0.006, wait=0.063)
        ),
        make_rank(
            1, [1, 1, 1], SYNC, no_sync=(0.072,) * 4, phases=phases(backward=0.066, wait=0.003)
        ),
    ]
    result = run(ranks)
    row = cells_table([result]).iloc[0]
    step = 0.0751  # the phases add up to 0.1 ms more than the step timer: the model's step
    assert row["straggler_rank"] == 1
    assert row["straggler_phase"] == "backward"
    assert row["straggler_gap_s"] == pytest.approx(0.060)
    assert bool(row["straggler_named"]) is True
    assert row["step_mean_s"] == pytest.approx(step)
    # the last rank to arrive waits only for the transfer (3 ms); rank 0 waits 60 ms more
    assert row["comm_overhead"] == pytest.approx(0.003 / step)
    assert row["exposed_transfer_share"] == pytest.approx(0.003 / step)
    assert row["load_imbalance"] == pytest.approx(0.030 / step)
    assert row["wait_for_peers_share"] == pytest.approx(0.030 / step)
    assert "sync_overhead" not in row.index  # a cross-check of the step model, not a column
    table = ranks_table([result]).set_index("rank")
    assert table.loc[1, "compute_p50_s"] == pytest.approx(0.072)
    assert table.loc[0, "grad_sync_wait_s"] == pytest.approx(0.063)
    assert table.loc[1, "backward_s"] == pytest.approx(0.066)


def test_parts_of_the_step_add_up_per_rank_and_on_average() -> None:
    """compute + data + waiting for peers + exposed transfer + rest = the step, and compute +
    waiting for peers (averaged over ranks) = the slowest rank's compute."""
    ranks = [
        make_rank(
            0, [1, 1, 1], SYNC, no_sync=(0.012,) * 4, phases=phases(backward=0.006, wait=0.063)
        ),
        make_rank(
            1, [1, 1, 1], SYNC, no_sync=(0.072,) * 4, phases=phases(backward=0.066, wait=0.003)
        ),
    ]
    attribution = run(ranks).diagnosis
    assert attribution is not None
    seconds = {p.name: p.seconds.value or 0.0 for p in attribution.parts}
    assert sum(seconds.values()) == pytest.approx(attribution.step_s.value)
    slowest_compute = 0.004 + 0.066 + 0.002
    assert seconds["compute"] + seconds["wait_for_peers"] == pytest.approx(slowest_compute)
    shares = [p.share.value or 0.0 for p in attribution.parts]
    assert sum(shares) == pytest.approx(1.0)


def test_without_phase_timing_nothing_is_named_or_split() -> None:
    """The no_sync windows alone give no step model: no straggler is named from them (a
    median without a test names noise), and the figures say why."""
    t = 0.0751
    ranks = [
        make_rank(0, [1, 1, 1], (t,) * 4, no_sync=(0.012,) * 4),
        make_rank(1, [1, 1, 1], (t,) * 4, no_sync=(0.072,) * 4),
    ]
    result = run(ranks)
    assert result.diagnosis is None and split_figures(result).comm_overhead is None
    assert result.unavailable["diagnosis"] == coded("unavailable.no_phase_split")
    assert result.unavailable["comm_overhead"] == coded("unavailable.no_phase_split")


@pytest.mark.slow
def test_straggler_among_four_ranks() -> None:
    ranks = [
        make_rank(0, [1, 1, 1], SYNC, phases=phases(wait=0.010)),
        make_rank(1, [1, 1, 1], SYNC, phases=phases(wait=0.010)),
        make_rank(2, [1, 1, 1], SYNC, phases=phases(forward=0.013, wait=0.001)),  # slower
        make_rank(3, [1, 1, 1], SYNC, phases=phases(wait=0.010)),
    ]
    result = run(ranks)
    straggler = named(result)
    assert straggler.rank == 2 and straggler.phase == "forward"
    assert straggler.phase_gap_s is not None
    assert straggler.phase_gap_s.value == pytest.approx(0.009)


def test_without_a_no_sync_window_the_phases_still_split_the_step() -> None:
    spec = make_spec(world=2)
    spec.measurement.comm_overhead = False
    ranks = [
        make_rank(0, [1, 1, 1], SYNC, phases=phases(forward=0.004, wait=0.031)),
        make_rank(1, [1, 1, 1], SYNC, phases=phases(forward=0.034, wait=0.001)),
    ]
    result = run(ranks, spec)
    straggler = named(result)
    assert straggler.rank == 1 and straggler.phase == "forward"
    assert straggler.phase_gap_s is not None
    assert straggler.phase_gap_s.value == pytest.approx(0.030)
    # the step model needs no no_sync window; it only loses that cross-check
    assert result.diagnosis is not None
    # (these synthetic windows carry no wait for a CPU: that check says it was not measured)
    checks = result.diagnosis.cross_checks
    assert [c.check for c in checks] == ["paired", "cpu_wait", "others_wait"]
    assert checks[2].detail.figures["source"] == "phase timers"
    host = result.diagnosis.cross_checks[1]
    assert host.agrees is None and "not measured" in said(host.detail)
    assert split_figures(result).comm_overhead == pytest.approx(0.001 / 0.075)
    assert result.diagnosis.no_sync is not None and result.diagnosis.no_sync.step_s is None


def test_the_straggler_phase_never_is_grad_sync_wait() -> None:
    ranks = [
        make_rank(0, [1, 1, 1], SYNC, no_sync=(0.010,) * 4, phases=phases(wait=0.011)),
        make_rank(
            1, [1, 1, 1], SYNC, no_sync=(0.020,) * 4, phases=phases(backward=0.016, wait=0.001)
        ),
    ]
    straggler = named(run(ranks))
    assert straggler.phase == "backward"
    assert straggler.phase_gap_s is not None
    assert straggler.phase_gap_s.value == pytest.approx(0.010)


def test_a_straggler_nobody_waits_for_is_not_named() -> None:
    """Rank 1's own work is 10 ms a step above rank 0's, significantly, but rank 0 does not
    wait for it (rank 1 waits longer itself): the timers contradict each other, so the name is
    withdrawn and the cross-check says why (the trace side's rule, on the phase timers)."""
    ranks = [
        make_rank(0, [1, 1, 1], SYNC, no_sync=(0.010,) * 4, phases=phases(wait=0.001)),
        make_rank(
            1, [1, 1, 1], SYNC, no_sync=(0.020,) * 4, phases=phases(backward=0.016, wait=0.020)
        ),
    ]
    result = run(ranks)
    assert cells_table([result]).iloc[0]["straggler_rank"] is None
    attribution = result.diagnosis
    assert attribution is not None and attribution.straggler is not None
    verdict = attribution.straggler
    assert not verdict.named and verdict.candidate_rank == 1
    assert verdict.why_not == Finding(code="straggler.withdrawn", figures={"by": ["others_wait"]})
    line = verdict_words.straggler_text(verdict, 2)
    assert line.endswith(": withdrawn by others' wait for it)"), line
    (check,) = [c for c in attribution.cross_checks if c.check == "others_wait"]
    assert check.detail.figures["source"] == "phase timers" and check.agrees is False
    assert "rank 1 waits for the others more than they wait for it" in said(check.detail)


def test_a_named_straggler_carries_the_others_wait_for_it() -> None:
    ranks = [
        make_rank(0, [1, 1, 1], SYNC, phases=phases(backward=0.006, wait=0.063)),
        make_rank(1, [1, 1, 1], SYNC, phases=phases(backward=0.066, wait=0.003)),
    ]
    attribution = run(ranks).diagnosis
    assert attribution is not None and attribution.straggler is not None
    assert attribution.straggler.named and attribution.straggler.rank == 1
    (check,) = [c for c in attribution.cross_checks if c.check == "others_wait"]
    assert check.agrees is True and check.estimate is not None
    assert check.estimate.value == pytest.approx(0.060 / 0.0751, rel=1e-3)


def test_a_gap_below_the_minimum_effect_is_not_named() -> None:
    """2 ms on a 75 ms step (under 5 %) is certain here (every step the same) and still not a
    straggler: the result says so, with the gap and its interval."""
    ranks = [
        make_rank(0, [1, 1, 1], SYNC, no_sync=(0.010,) * 4, phases=phases(wait=0.003)),
        make_rank(
            1, [1, 1, 1], SYNC, no_sync=(0.012,) * 4, phases=phases(backward=0.008, wait=0.001)
        ),
    ]
    result = run(ranks)
    assert cells_table([result]).iloc[0]["straggler_rank"] is None
    verdict = result.diagnosis.straggler if result.diagnosis is not None else None
    assert verdict is not None and verdict.why_not is not None
    assert verdict.why_not == Finding(code="straggler.below_minimum", figures={"share": 0.05})
    line = verdict_words.straggler_text(verdict, 2)
    assert line.startswith("Straggler: none (rank 1 +2") and "ms" in line, line
    assert line.endswith(": below the 5 % minimum effect)"), line
    assert "straggler" not in result.unavailable  # said once, by the verdict


def test_a_whole_backward_is_not_blamed() -> None:
    """Where backward could not be split (FSDP, missed hooks) it holds the waits for other
    ranks: no step model, so nothing is named."""
    ranks = [
        make_rank(
            0, [1, 1, 1], SYNC, no_sync=(0.010,) * 4, phases=phases(backward=0.001, wait=None)
        ),
        make_rank(
            1,
            [1, 1, 1],
            SYNC,
            no_sync=(0.012,) * 4,
            phases=phases(backward=0.050, wait=None, optimizer=0.004),
        ),
    ]
    result = run(ranks)
    assert result.diagnosis is None
    assert result.unavailable["straggler"] == coded("unavailable.no_phase_split")


def test_fsdp_names_no_straggler_and_says_why() -> None:
    spec = make_spec(world=2, strategy="fsdp")
    ranks = [make_rank(r, [1, 1, 1], SYNC, phases=phases(backward=0.02, wait=None)) for r in (0, 1)]
    for rank in ranks:
        rank.phase_notes = {"grad_sync_wait": FSDP_REASON}
    result = run(ranks, spec)
    assert result.diagnosis is None
    assert result.unavailable["straggler"] == coded("unavailable.fsdp_no_split")
    assert result.unavailable["phases.grad_sync_wait"] == FSDP_REASON
    assert result.ranks[0].phases is not None
    assert result.ranks[0].phases.grad_sync_wait is None
    assert result.ranks[0].phases.backward == pytest.approx(0.02)


def test_injected_delays_are_recorded_and_flagged() -> None:
    spec = make_spec(world=2).model_copy(
        update={"inject_delay": [DelaySpec(rank=1, phase="backward", ms=50)]}
    )
    ranks = [
        make_rank(0, [1, 1, 1], SYNC, no_sync=(0.010,) * 4, phases=phases(wait=0.051)),
        make_rank(
            1, [1, 1, 1], SYNC, no_sync=(0.060,) * 4, phases=phases(backward=0.056, wait=0.001)
        ),
    ]
    result = run(ranks, spec)
    assert [d.model_dump() for d in result.injected_delays] == [
        {"rank": 1, "phase": "backward", "ms": 50.0}
    ]
    assert named(result).injected
    (warning,) = [warning_words(w) for w in result.warnings if "Injected delay" in warning_words(w)]
    assert "1:backward:50" in warning and "artificial" in warning


def test_phase_timing_off_is_said() -> None:
    result = run([make_rank(0, [1, 1, 1]), make_rank(1, [1, 1, 1])])
    assert result.ranks[0].phases is None
    assert why(result.unavailable["phases"]) == "phase timing was off"


def test_rank_delays() -> None:
    delays = [
        DelaySpec(rank=1, phase="backward", ms=50),
        DelaySpec(rank=1, phase="backward", ms=10),
        DelaySpec(rank=0, phase="data", ms=5),
    ]
    one = RankDelays.for_rank(delays, 1, 2)
    assert one.backward == pytest.approx(0.060)
    assert (one.data, one.forward, one.optimizer) == (0.0, 0.0, 0.0)
    assert one.any
    assert RankDelays.for_rank(delays, 0, 2) == RankDelays(data=0.005)
    assert not RankDelays.for_rank([], 0, 2).any
    with pytest.raises(ValueError, match="rank 1 does not exist in a 1-rank cell"):
        RankDelays.for_rank(delays, 0, 1)


@pytest.mark.slow  # starts an nsys command
def test_delay_module_does_not_import_torch() -> None:
    """The CLI parses --inject-delay before launching anything: no torch import for that."""
    code = "import sys, torchscale.rank.worker.delay; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def test_the_delay_modules_top_reaches_no_torch_as_its_source_reads() -> None:
    """The same, read from the source (tests/project/test_torch_free.py): nothing the delay
    module runs when imported imports torch, directly or through another module."""
    module = "torchscale.rank.worker.delay"
    assert import_chain(import_graph([module]), module, "torch") is None


# ============================================================================== markers


def test_markers_off_cost_nothing_and_emit_nothing() -> None:
    off = markers.current()
    assert off is markers.OFF and not off.active
    assert off.range(markers.BACKWARD) is off.range(markers.FORWARD)  # one shared null context
    cpu = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=cpu) as prof, off.range(markers.BACKWARD):
        torch.ones(4).sum()
    assert not [e for e in prof.events() if e.name.startswith("torchscale:")]


def test_markers_on_under_the_torch_profiler() -> None:
    on = markers.Markers(torch_profiler=True)
    cpu = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=cpu) as prof, markers.use(on):  # noqa: SIM117
        with markers.current().phase("backward"), markers.current().range(INJECTED_DELAY_RANGE):
            torch.ones(4).sum()
    assert markers.current() is markers.OFF  # restored
    names = {e.name for e in prof.events()}
    assert {"torchscale:backward", "torchscale:injected_delay"} <= names


class FakeNvtx:
    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def push(self, message: str) -> None:
        self.calls.append(("push", message))

    def pop(self) -> None:
        self.calls.append(("pop", None))

    def start(self, message: str) -> Any:
        self.calls.append(("start", message))
        return 7

    def end(self, handle: Any) -> None:
        self.calls.append(("end", handle))

    def mark(self, message: str) -> None:
        self.calls.append(("mark", message))


def test_markers_nvtx_ranges_steps_and_rank_mark() -> None:
    fake = FakeNvtx()
    marks = markers.Markers(nvtx=fake)
    marks.mark(markers.rank_mark(3))
    with marks.step(5), marks.phase("forward"):
        pass
    assert fake.calls == [
        ("mark", "torchscale:rank=3"),
        ("start", "ProfilerStep#5"),
        ("push", "torchscale:forward"),
        ("pop", None),
        ("end", 7),
    ]


def test_nvtx_backend_choice() -> None:
    backend, note = markers.nvtx_backend(cuda_build=True)
    assert backend is not None and backend.name == "torch.cuda.nvtx"
    assert note == Finding(code="profile.nvtx_torch")
    try:
        import nvtx  # noqa: F401
    except ImportError:
        backend, note = markers.nvtx_backend(cuda_build=False)
        assert backend is None
        assert note == Finding(code="profile.nvtx_missing")
    else:
        backend, _ = markers.nvtx_backend(cuda_build=False)
        assert backend is not None and backend.name.startswith("nvtx ")


# ============================================================ phase recorder in one process


@pytest.fixture(scope="module")
def process_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A 1-rank gloo group, as torchrun would give a world-size-1 cell, with one intra-op
    thread as a rank gets (two OpenMP threads on a busy 2-core machine stall for 100s of ms)."""
    store = f"file://{tmp_path_factory.mktemp('pg') / 'store'}"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()
        torch.set_num_threads(threads)


def worker_spec(
    tmp: Path,
    world: int = 1,
    strategy: str = "ddp",
    accum: int = 1,
    delays: tuple[str, ...] = (),
    steps: int = 4,
    profile: ProfileSpec | None = None,
    comm_overhead: bool = True,
    telemetry: bool = True,
) -> WorkerSpec:
    return WorkerSpec(
        cell=CellIdentity(
            id="cell",
            definition_sha256="0" * 64,
            model="tiny-mlp",
            label="tiny-mlp",
            batch_size=8,
            world_size=world,
            precision="fp32",
            strategy=strategy,  # type: ignore[arg-type]
            device="cpu",
            backend="gloo",
        ),
        model=ModelSpec(name="tiny-mlp"),
        training=TrainingConfig(grad_accum_steps=accum),
        measurement=MeasurementConfig(
            steps=steps,
            repeats=1,
            warmup_steps=2,
            flops=False,
            comm_overhead=comm_overhead,
            telemetry=TelemetryConfig(enabled=telemetry),
        ),
        data=DataConfig(),
        result_path=str(tmp / "result.json"),
        steps_path=str(tmp / "steps.jsonl"),
        inject_delay=[parse_delay(text) for text in delays],
        profile=profile,
    )


@pytest.fixture()
def recorders(monkeypatch: pytest.MonkeyPatch) -> list[PhaseRecorder]:
    """Every phase recorder a window builds, kept for `check_sums`."""
    made: list[PhaseRecorder] = []
    build = measure_module.phase_recorder

    def keep(trainer: Trainer, steps: int) -> PhaseRecorder:
        made.append(build(trainer, steps))
        return made[-1]

    monkeypatch.setattr(measure_module, "phase_recorder", keep)
    return made


def check_sums(window: Any, recorder: PhaseRecorder) -> None:
    """The phases of every step partition the recorder's step (its own edges), and that lies
    inside the timed step (the timer's edges are just outside). Both compared in this process,
    as data, never against a tolerance that a busy machine's preemption between two edges
    (milliseconds at load 16) could exceed."""
    assert window.phases is not None
    spans = recorder.spans()
    assert len(spans) == len(window.step_s)
    for step, (span, total) in enumerate(zip(spans, window.step_s, strict=True)):
        parts = [window.phases[p][step] or 0.0 for p in PHASES]
        assert all(part >= 0 for part in parts)
        assert sum(parts) == pytest.approx(span, rel=1e-9, abs=1e-12)
        assert span <= total + 1e-12


@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize("accum", [1, 2])
def test_phases_of_a_ddp_window_add_up(
    tmp_path: Path, accum: int, recorders: list[PhaseRecorder]
) -> None:
    trainer = Trainer.build(worker_spec(tmp_path, accum=accum), torch.device("cpu"))
    trainer.step()
    window = run_window(trainer, 4, "perf_counter")
    check_sums(window, recorders[-1])
    assert window.phases is not None
    assert all(v is not None and v > 0 for v in window.phases["grad_sync_wait"])
    assert all(v is not None and v > 0 for v in window.phases["backward"])
    assert window.phase_notes == {}


@pytest.mark.usefixtures("process_group")
def test_delays_land_in_their_phases(tmp_path: Path, recorders: list[PhaseRecorder]) -> None:
    spec = worker_spec(tmp_path, accum=2, delays=("0:backward:36", "0:forward:12", "0:data:4"))
    trainer = Trainer.build(spec, torch.device("cpu"))
    window = run_window(trainer, 5, "perf_counter")
    check_sums(window, recorders[-1])
    assert window.phases is not None
    backward = statistics.median(v or 0.0 for v in window.phases["backward"])
    wait = statistics.median(v or 0.0 for v in window.phases["grad_sync_wait"])
    forward = statistics.median(v or 0.0 for v in window.phases["forward"])
    data = statistics.median(v or 0.0 for v in window.phases["data"])
    # once per step (in the last micro-batch), each in its own phase: at least its delay there
    # (a busy machine only adds), and the backward one before any gradient: backward compute,
    # not grad-sync wait, which stays below it (phases of one process, compared)
    assert backward >= 0.036
    assert forward >= 0.012
    assert data >= 0.004
    assert wait < backward


@pytest.mark.usefixtures("process_group")
def test_phase_timing_off_records_nothing(tmp_path: Path) -> None:
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    window = run_window(trainer, 2, "perf_counter", phases=False)
    assert window.phases is None
    assert all(not p._post_accumulate_grad_hooks for p in trainer.model.parameters())  # type: ignore[attr-defined]


@pytest.mark.usefixtures("process_group")
def test_fsdp_backward_is_whole_with_the_reason(
    tmp_path: Path, recorders: list[PhaseRecorder]
) -> None:
    trainer = Trainer.build(worker_spec(tmp_path, strategy="fsdp"), torch.device("cpu"))
    trainer.step()
    window = run_window(trainer, 2, "perf_counter")
    check_sums(window, recorders[-1])
    assert window.phases is not None
    assert window.phases["grad_sync_wait"] == [None, None]
    assert window.phase_notes == {"grad_sync_wait": FSDP_REASON}


@pytest.mark.usefixtures("process_group")
def test_hooks_are_removed_after_the_window(tmp_path: Path) -> None:
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    run_window(trainer, 1, "perf_counter")
    for param in trainer.model.parameters():
        assert not getattr(param, "_post_accumulate_grad_hooks", None)


# ============================================================= a real 2-rank torchrun cell


@pytest.fixture(scope="module")
def straggler_cell(tmp_path_factory: pytest.TempPathFactory) -> tuple[CellResult, Path]:
    """tiny-mlp on 2 gloo ranks, rank 1 sleeping 50 ms in backward every step, profiled with
    torch.profiler after the windows (one torchrun: about 8-10 s here). 8 steps: the paired
    test needs at least 7 to reach p < 0.01."""
    tmp = tmp_path_factory.mktemp("straggler")
    profile = ProfileSpec(tool="torch", wait=1, warmup=1, active=2, trace_dir=str(tmp / "trace"))
    # telemetry off: its sampler thread can take the GIL (about 1 ms of psutil calls) in the
    # few microseconds between the step timer's edge and the phase recorder's, time that is in
    # the step but in no phase; this cell checks that the phases account for the step
    spec = worker_spec(
        tmp, world=2, delays=("1:backward:50",), steps=8, profile=profile, telemetry=False
    )
    return run_worker_cell(tmp, spec), tmp


def run_worker_cell(tmp: Path, spec: WorkerSpec) -> CellResult:
    """`spec` run by the worker on 2 gloo ranks under torchrun in `tmp` (exit 0 asserted), and
    the result it wrote there."""
    spec_path = tmp / "spec.json"
    spec_path.write_text(spec.model_dump_json(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env |= {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"),
            "--max-restarts=0",
            *("-m", "torchscale.rank.worker.main", "--spec", str(spec_path)),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return CellResult.model_validate_json((tmp / "result.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # a real 2-rank torchrun cell
def test_real_cell_names_the_injected_straggler(straggler_cell: tuple[CellResult, Path]) -> None:
    result, _ = straggler_cell
    straggler = named(result)
    assert straggler.rank == 1 and straggler.phase == "backward"
    assert straggler.phase_gap_s is not None
    assert straggler.phase_gap_s.value == pytest.approx(0.050, rel=0.25)
    assert straggler.injected
    assert [d.model_dump() for d in result.injected_delays] == [
        {"rank": 1, "phase": "backward", "ms": 50.0}
    ]
    # rank 0 waits for rank 1 at the end of its backward, not in its backward compute
    r0, r1 = (r.phases for r in result.ranks)
    assert r0 is not None and r1 is not None
    assert r0.grad_sync_wait is not None and r0.grad_sync_wait > 0.050 * 0.75
    assert r1.backward is not None and r1.backward > 0.050
    # most of the synchronised step beyond rank 0's compute is imbalance, not communication
    comm = split_figures(result)
    assert comm.step_s is not None
    assert comm.load_imbalance is not None and comm.comm_overhead is not None
    assert comm.load_imbalance_s == pytest.approx(0.050 / 2, rel=0.25)
    assert comm.load_imbalance > comm.comm_overhead
    assert not hasattr(comm, "sync_overhead")  # a cross-check of the step model, not a figure
    attribution = result.diagnosis
    assert attribution is not None and attribution.straggler is not None
    assert attribution.straggler.named and attribution.straggler.rank == 1


@pytest.mark.slow  # a real 2-rank torchrun cell
def test_real_cell_steps_carry_phase_columns(straggler_cell: tuple[CellResult, Path]) -> None:
    """Every step of both windows of every rank carries the five phases, none negative, and
    together never more than the timed step they lie inside. How closely they fill it is a
    timing (a preemption between the timer's edge and the recorder's adds milliseconds under
    load): the exact partition is checked in one process (`check_sums`)."""
    _, tmp = straggler_cell
    records = [json.loads(line) for line in (tmp / "steps.jsonl").read_text().splitlines()]
    assert {r["window"] for r in records} == {"sync", "no_sync"}
    assert {r["rank"] for r in records} == {0, 1}
    for record in records:
        parts = [record[f"{phase}_s"] for phase in PHASES]
        assert all(part is not None and part >= 0 for part in parts), record
        assert sum(parts) <= record["time_s"] + 1e-9, record
    if not SCHEDSTAT_READABLE:
        return
    # beside the phases, the training thread's wait for a CPU and its time on one, read at
    # the step's edges (inside the timed step); rank 1's 50 ms sleep is in the step, on no CPU
    for record in records:
        wait, on_cpu = record["cpu_wait_s"], record["cpu_time_s"]
        assert wait is not None and on_cpu is not None and wait >= 0 and on_cpu > 0, record
        assert wait + on_cpu <= record["time_s"] + 1e-4, record
        if record["rank"] == 1:
            assert on_cpu <= record["time_s"] - 0.045, record


@pytest.mark.slow  # a real 2-rank torchrun cell
def test_real_capture_writes_one_trace_per_rank(straggler_cell: tuple[CellResult, Path]) -> None:
    result, tmp = straggler_cell
    trace_dir = tmp / "trace"
    profile = result.profile
    assert profile is not None
    assert profile.tool == "torch" and profile.active == 2
    assert profile.capture_s is not None and profile.capture_s > 0
    assert profile.files == [
        "rank0.phases.json",
        "rank0.trace.json.gz",
        "rank1.phases.json",
        "rank1.trace.json.gz",
    ]
    assert not [p for p in trace_dir.iterdir() if p.name.startswith(".")]  # no partial files
    for rank in (0, 1):
        with gzip.open(trace_dir / f"rank{rank}.trace.json.gz", "rt", encoding="utf-8") as f:
            trace = json.load(f)
        assert trace["distributedInfo"]["rank"] == rank
        names = [e.get("name", "") for e in trace["traceEvents"]]
        steps = sorted(n for n in names if n.startswith("ProfilerStep#"))
        assert steps == ["ProfilerStep#2", "ProfilerStep#3"]  # after wait 1 + warmup 1
        assert names.count("torchscale:backward") == 2
        for phase in ("data", "forward", "optimizer"):
            assert f"torchscale:{phase}" in names
        assert ("torchscale:injected_delay" in names) == (rank == 1)
        own = json.loads((trace_dir / f"rank{rank}.phases.json").read_text())
        assert own["steps"] == [2, 3]
        assert len(own["phases"]["backward"]) == 2
        if SCHEDSTAT_READABLE:  # each traced step's wait for a CPU and time on one
            assert len(own["cpu_wait_s"]) == len(own["cpu_time_s"]) == 2
            assert all(w >= 0 for w in own["cpu_wait_s"]) and all(t > 0 for t in own["cpu_time_s"])
            if rank == 1:  # its 50 ms sleep is in the step, on no CPU
                assert all(
                    t <= step - 0.045
                    for t, step in zip(own["cpu_time_s"], own["step_s"], strict=True)
                )


@pytest.mark.slow  # a real 2-rank torchrun cell
def test_real_cell_times_no_step_of_a_window_edge(straggler_cell: tuple[CellResult, Path]) -> None:
    """Each window ran one untimed step after its edge work (window_edge_steps), and every
    kept step is a measured one: 8 per window, per rank, numbered from 0. The fixed costs are
    itemised: a CPU cell has no CUDA context and no GPU busy probe, each with its reason."""
    result, tmp = straggler_cell
    assert result.window_edge_steps == 1
    records = [json.loads(line) for line in (tmp / "steps.jsonl").read_text().splitlines()]
    windows: dict[tuple[int, str, int], list[int]] = {}
    for record in records:
        windows.setdefault((record["rank"], record["window"], record["repeat"]), []).append(
            record["step"]
        )
    assert len(windows) == 4  # 2 ranks x (sync, no_sync)
    assert all(steps == list(range(8)) for steps in windows.values())
    assert result.host_bound is None
    assert (why(result.unavailable["host_bound"]) or "").startswith("CPU device")
    costs = result.fixed_costs
    assert costs is not None
    assert costs.process_start_s is not None and costs.process_start_s > 0  # under torchrun
    assert costs.device_init_s is None
    assert (why(result.unavailable["fixed_costs.device_init_s"]) or "").startswith("CPU device")
    for stage in (costs.process_group_init_s, costs.model_build_s, costs.warmup_s):
        assert stage is not None and stage > 0
