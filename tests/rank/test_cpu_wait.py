"""The training thread's wait for a CPU and time on one (torchscale/rank/telemetry/cpu_wait.py)
and what the straggler rule does with them (attribution.cpu_wait_check): a rank the host held
back is late exactly like a rank with more work, and only the scheduler tells them apart."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import torch

from tests.offline.test_attribution import step_table
from torchscale.contracts.step_phases import CPU_WAIT
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say
from torchscale.contracts.wording.diagnosis_checks import detail as said
from torchscale.offline.analysis.diagnosis.host import CPU_WAIT_UNMEASURED
from torchscale.offline.analysis.diagnosis.timers import timers_step_split
from torchscale.rank.telemetry import cpu_wait as cpu_wait_module
from torchscale.rank.telemetry.cpu_wait import CpuWaitClock
from torchscale.rank.worker import phases as phases_module
from torchscale.rank.worker.phases import PhaseRecorder

LINUX_SCHEDSTAT = os.path.exists(cpu_wait_module.SCHEDSTAT)


def with_cpu_wait(table: pd.DataFrame, rank: int, ms: float, seed: int = 1) -> pd.DataFrame:
    """`table` with every rank's wait for a CPU: a little noise everywhere, `ms` more on
    `rank`, inside its forward (the host held it back there: the phase took that much
    longer)."""
    rng = np.random.default_rng(seed)
    out = table.copy()
    noise = np.abs(rng.normal(0.0, 0.05e-3, len(out)))
    out[CPU_WAIT] = noise
    held = out["rank"] == rank
    out.loc[held, CPU_WAIT] += ms / 1e3
    return out


def host_check(attribution):  # type: ignore[no-untyped-def]
    return next(c for c in attribution.cross_checks if c.check == "cpu_wait")


def line(verdict) -> str:  # type: ignore[no-untyped-def]
    """The verdict's one line, as every surface shows it (two ranks)."""
    return verdict_words.straggler_text(verdict, 2)


def rule(verdict) -> str:  # type: ignore[no-untyped-def]
    """The rule that decided the verdict's kind, in words."""
    assert verdict.kind_rule is not None
    return say(verdict.kind_rule)


def test_a_rank_the_host_held_back_is_named_with_kind_host() -> None:
    # rank 1's forward is 1 ms longer on every step, and all of it was spent waiting for a CPU
    table = with_cpu_wait(step_table(delay=(1, "forward", 1.0)), rank=1, ms=1.0)
    without = timers_step_split(table.drop(columns=[CPU_WAIT]), None)
    assert without is not None and without.straggler is not None
    assert without.straggler.named and without.straggler.rank == 1  # the timers alone name it
    assert without.straggler.kind == "compute"  # without the scheduler's word: its work
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "host"
    assert verdict.host_bound is True and verdict.significant
    assert verdict.kind_rule is not None and verdict.kind_rule.code == "straggler.rule.host_held"
    assert "held it off the CPU" in rule(verdict)
    assert verdict.host_wait_s is not None and verdict.host_wait_s.value is not None
    assert verdict.host_wait_s.value == pytest.approx(1e-3, rel=0.1)
    assert line(verdict).startswith("Straggler: rank 1, host (held off the CPU)")
    assert line(verdict).endswith("check the host")
    check = host_check(model)
    assert check.agrees is True and "the host took its time" in said(check.detail)


def test_a_rank_with_more_work_that_waits_longer_for_a_cpu_is_compute() -> None:
    """The user's case: a rank doing more real work on a shared host is runnable longer, so
    it also waits longer for a CPU; its extra work (3 ms) is more than its extra wait (1.5
    ms), so it is a compute straggler, never "check the host"."""
    table = with_cpu_wait(step_table(delay=(1, "forward", 3.0)), rank=1, ms=1.5)
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "compute"
    assert verdict.host_bound is False
    assert verdict.kind_rule is not None and verdict.kind_rule.figures["held_less"] is True
    assert "less than its work" in rule(verdict)


def test_a_slow_rank_that_also_waited_for_a_cpu_is_still_named() -> None:
    # 2 ms more forward work, of which only 0.5 ms was a wait for a CPU: the work is slow
    table = with_cpu_wait(step_table(delay=(1, "forward", 2.0)), rank=1, ms=0.5)
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.phase == "forward"
    assert verdict.host_bound is False
    assert verdict.host_wait_s is not None and verdict.host_wait_s.value is not None
    assert verdict.host_wait_s.value == pytest.approx(0.5e-3, rel=0.2)
    assert "the work itself is slow" in said(host_check(model).detail)


def on_a_loaded_host(table: pd.DataFrame, rate: float, held: dict[int, float]) -> pd.DataFrame:
    """`table` as a host loaded alike for every rank would show it: each rank's own work
    (wall time) is its time on a CPU plus `rate` times that waiting for one, and a rank in
    `held` (rank -> ms) was also held off the CPU that long more per step (inside forward)."""
    out = table.copy()
    wall = out[["data", "forward", "backward", "optimizer"]].sum(axis=1)
    out["cpu_time"] = wall / (1 + rate)
    out[CPU_WAIT] = wall - out["cpu_time"]
    for rank, ms in held.items():
        mine = out["rank"] == rank
        out.loc[mine, "forward"] += ms / 1e3
        out.loc[mine, "step_s"] += ms / 1e3
        out.loc[mine, CPU_WAIT] += ms / 1e3
    return out


def test_more_work_on_a_heavily_loaded_host_is_compute_not_host() -> None:
    """At load ~16 on 2 cores a runnable thread waits ~7 times as long as it runs: a rank with
    3 ms more work per step is 24 ms behind, 21 ms of it waiting for a CPU. Its wait at the
    others' rate is exactly what its extra work costs, so nothing is held: compute. (Without
    the time on a CPU the wait alone would make it host: the rule the user hit.)"""
    base = step_table(delay=(1, "forward", 3.0 * 8))
    table = on_a_loaded_host(base, rate=7.0, held={})
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "compute", line(verdict)
    assert verdict.host_wait_s is not None and verdict.host_wait_s.value is not None
    assert abs(verdict.host_wait_s.value) < 1e-3  # nothing held beyond its fair wait
    blind = timers_step_split(table.drop(columns=["cpu_time"]), None)
    assert blind is not None and blind.straggler is not None
    assert blind.straggler.kind == "host"  # the fallback cannot tell: why the time is read


def test_a_rank_that_did_more_work_is_compute_however_long_the_host_held_it() -> None:
    """The rule: the kind is read from the work done. Rank 1 runs 2 ms more on a CPU
    per step and was also held off it 6 ms beyond its fair wait (more than the rest of its
    gap): it did more work, so it is compute (the held time said beside it), never "check
    the host"."""
    base = step_table(delay=(1, "forward", 4.0))
    table = on_a_loaded_host(base, rate=1.0, held={1: 6.0})
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "compute", line(verdict)
    assert "held it off the CPU" in rule(verdict)
    assert "check the host" not in line(verdict) and verdict.host_bound is False


def test_a_rank_held_off_the_cpu_on_a_loaded_host_is_host() -> None:
    """Same load, same work on every rank, and rank 1 held off the CPU 6 ms more per step
    (a hog on its core): host, with the held time read beyond its fair wait."""
    table = on_a_loaded_host(step_table(), rate=7.0, held={1: 6.0})
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "host", line(verdict)
    assert verdict.host_wait_s is not None and verdict.host_wait_s.value is not None
    assert verdict.host_wait_s.value == pytest.approx(6e-3, rel=0.1)


def test_a_rank_blocked_on_its_input_is_input_however_long_it_waited_after() -> None:
    """Seen in the straggler grid: a loader that sleeps 2.3 ms a step on rank 1 of 2, and the
    rank waited longer for a CPU than the rest of its gap (its own threads took the core it
    left idle). Its data phase is the slow one: input, the hold said beside it, never host."""
    table = with_cpu_wait(step_table(delay=(1, "data", 3.0)), rank=1, ms=3.5)
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.phase == "data", line(verdict)
    assert verdict.kind == "input" and verdict.host_bound is False, line(verdict)
    assert "check the host" not in line(verdict)
    assert verdict.kind_rule is not None and verdict.kind_rule.code == "straggler.rule.data_phase"
    basis = rule(verdict)
    assert "data phase" in basis and "held it off the CPU" in basis, basis
    assert "less than" not in basis, basis  # it was held longer than the rest of its gap
    detail = said(host_check(model).detail) or ""
    assert detail.endswith("its input is slow"), detail


def test_a_rank_held_inside_the_collective_is_named_host() -> None:
    """Seen on a real run: busy processes on rank 1's core held it 21 ms per step, all of it
    while it waited in the gradient all-reduce, so the phase timers saw the collective slow
    for everyone (grad-sync wait ~25 ms on both ranks) and its own work on par. The time held
    off the CPU names it: host, its cost the held time."""
    table = step_table(noise=0.02)
    table[CPU_WAIT] = 0.3e-3
    held = table["rank"] == 1
    table.loc[held, CPU_WAIT] += 20e-3
    table["grad_sync_wait"] += 20e-3
    table["step_s"] += 20e-3
    table["cpu_time"] = table[["data", "forward", "backward", "optimizer"]].sum(axis=1)
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "host", line(verdict)
    gap = verdict.headline_gap()
    assert gap is not None and gap.value == pytest.approx(20e-3, rel=0.05)
    assert verdict.gap_s is not None and verdict.gap_s.value is not None
    assert abs(verdict.gap_s.value) < 1e-3  # its own work is on par


def test_a_wait_measured_on_no_step_says_so_and_changes_nothing() -> None:
    table = step_table(delay=(1, "forward", 2.0)).assign(**{CPU_WAIT: np.nan})
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    assert model.straggler.named and model.straggler.host_bound is None
    check = host_check(model)
    assert check.agrees is None and check.detail == CPU_WAIT_UNMEASURED


def test_the_clock_is_unavailable_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_wait_module, "SCHEDSTAT", "/nonexistent/schedstat")
    clock = CpuWaitClock()
    assert clock.read() is None
    assert clock.unavailable is not None and "Linux only" in say(clock.unavailable)


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux /proc/thread-self/schedstat")
@pytest.mark.slow  # starts a child process
def test_the_clock_counts_time_another_process_held_the_cpu() -> None:
    """This thread and a busy child share one CPU: the scheduler splits it, so the thread
    waits for it (run_delay grows) while it spins; alone on it, hardly at all."""
    cpu = min(os.sched_getaffinity(0))
    child = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"]
    )
    before_affinity = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.2)  # the child is pinned and spinning
        clock = CpuWaitClock()
        start = clock.read()
        deadline = time.perf_counter() + 0.5
        while time.perf_counter() < deadline:
            pass
        waited = clock.read()
        assert start is not None and waited is not None
        # sharing one CPU with a spinning process, a 0.5 s spin waits a large part of it
        assert waited - start > 0.05
    finally:
        os.sched_setaffinity(0, before_affinity)
        child.kill()
        child.wait()


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux /proc/thread-self/schedstat")
def test_the_clock_counts_time_another_thread_held_the_cpu() -> None:
    """The same with a busy thread of this process for the busy child (Linux binds a thread
    with sched_setaffinity(0)): both on one CPU, this thread waits for it while it spins."""
    cpu = min(os.sched_getaffinity(0))
    data = bytes(1 << 22)
    started, done = threading.Event(), threading.Event()

    def busy() -> None:  # hashing releases the GIL: the two threads run side by side
        os.sched_setaffinity(0, {cpu})
        started.set()
        while not done.is_set():
            hashlib.sha256(data).digest()

    before_affinity = os.sched_getaffinity(0)
    thread = threading.Thread(target=busy, daemon=True)
    try:
        os.sched_setaffinity(0, {cpu})
        thread.start()
        assert started.wait(5)
        clock = CpuWaitClock()
        start = clock.read()
        spin_s = 0.2
        deadline = time.perf_counter() + spin_s
        while time.perf_counter() < deadline:
            pass
        waited = clock.read()
        clock.close()
        assert start is not None and waited is not None
        # the scheduler splits the CPU between the two: about half the spin is a wait
        assert waited - start > 0.3 * spin_s
    finally:
        done.set()
        thread.join(5)
        os.sched_setaffinity(0, before_affinity)


def test_every_surface_says_a_host_bound_gap_is_the_hosts() -> None:
    """The one straggler line (every terminal and report surface renders it) names the rank
    the host held back, its gap and the wait, and says to check the host."""
    from torchscale.interfaces.report.diagnosis_text import straggler_text

    table = with_cpu_wait(step_table(delay=(1, "forward", 1.0)), rank=1, ms=1.0)
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    text = straggler_text(model.straggler, model.ranks)
    assert text.startswith("Straggler: rank 1, host (held off the CPU) +1")
    # how its cost falls over the steps comes before the advice: a hog on its core all along
    assert text.endswith(": check the host") and "/step, every step" in text
    assert "p =" not in text


def test_the_finding_sends_the_reader_to_the_host_not_the_code() -> None:
    from torchscale.offline.analysis.diagnosis import RunEvidence, TimerEvidence, diagnose

    table = with_cpu_wait(step_table(delay=(1, "forward", 1.0)), rank=1, ms=1.0)
    diagnosis = diagnose(RunEvidence(timers=TimerEvidence(steps=table)))
    assert diagnosis is not None and diagnosis.straggler is not None
    assert diagnosis.straggler.host_bound and diagnosis.straggler.named
    found = [f for f in diagnosis.findings if f.category == "straggler"]
    assert [f.title for f in found] == ["rank 1 is the straggler: host (held off the CPU)"]
    assert "the code is not slower" in found[0].recommendation
    assert not any("take turns" in f.title or "disputed" in f.title for f in diagnosis.findings)


# ----------------------------------------------------- the other half: the time on a CPU


def test_the_clock_reads_the_wait_from_schedstats_second_field() -> None:
    # schedstat: on-CPU ns, run_delay ns, timeslices
    assert CpuWaitClock._parse(b"3000000000 250000000 17\n") == 0.25


def test_an_unavailable_clock_reads_neither(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_wait_module, "SCHEDSTAT", "/nonexistent/schedstat")
    clock = CpuWaitClock()
    assert clock.read_both() is None and clock.read() is None
    assert clock.unavailable is not None and "CPU time" in say(clock.unavailable)


def _spin(wall_s: float) -> None:
    deadline = time.perf_counter() + wall_s
    while time.perf_counter() < deadline:
        pass


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux /proc/thread-self/schedstat")
def test_the_time_on_a_cpu_grows_while_the_thread_spins_not_while_it_sleeps() -> None:
    """Asleep, the thread is on no CPU; spinning for 0.1 CPU seconds, it runs them, and its
    time on a CPU and its wait never add up to more than the spin's wall time. (No lower
    bound on their sum: a VM's stolen time and a throttled cgroup's are in neither, and a
    loaded CI host was seen to lose 60 % of a spin's wall time that way.) read() is
    read_both()'s wait."""
    clock = CpuWaitClock()
    try:
        before = clock.read_both()
        time.sleep(0.2)
        slept = clock.read_both()
        started = time.perf_counter()
        _spin_cpu(0.1)
        spun = clock.read_both()
        wall = time.perf_counter() - started
        wait = clock.read()
    finally:
        clock.close()
    assert before is not None and slept is not None and spun is not None and wait is not None
    assert slept[1] - before[1] < 0.01  # 0.2 s asleep: hardly on a CPU
    on_cpu, waited = spun[1] - slept[1], spun[0] - slept[0]
    assert 0.1 <= on_cpu <= wall + 1e-3  # its reads bracket the spin a little wider than wall
    assert waited >= 0 and on_cpu + waited <= wall + 1e-3
    assert spun[0] <= wait  # the same run_delay, read later
    assert clock.read_both() is None  # closed


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux /proc/thread-self/schedstat")
def test_the_time_on_a_cpu_of_a_short_step_is_never_stale() -> None:
    """Read back to back by a thread that never leaves the CPU, every sub-millisecond span
    has its own time on a CPU, more than zero and at most its wall time. (schedstat's own
    first field fails this: the kernel settles a running thread's figure at ticks and
    switches only, so such spans read 0 and then several milliseconds at once.)"""
    clock = CpuWaitClock()
    spans = []
    try:
        for _ in range(50):
            started = time.perf_counter()
            first = clock.read_both()
            _spin(0.0005)
            last = clock.read_both()
            assert first is not None and last is not None
            spans.append((last[1] - first[1], time.perf_counter() - started))
    finally:
        clock.close()
    assert all(0 < on_cpu <= wall for on_cpu, wall in spans), spans


def _one_step(recorder: PhaseRecorder, work: Callable[[], None]) -> None:
    recorder.step_start()
    recorder.data_end()
    recorder.backward_start()
    work()
    recorder.backward_end()
    recorder.step_end()


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux /proc/thread-self/schedstat")
def test_the_phase_recorder_gives_each_step_its_cpu_time_beside_its_wait() -> None:
    """The recorder's two edge reads give every step both figures: a step that computes runs
    on the CPU for its work, a step that sleeps hardly at all."""
    recorder = PhaseRecorder(steps=2, accum=1, device=torch.device("cpu"), cuda_events=False)
    _one_step(recorder, lambda: _spin_cpu(0.05))
    _one_step(recorder, lambda: time.sleep(0.05))
    times, waits = recorder.cpu_time(), recorder.cpu_wait()
    assert times is not None and waits is not None and recorder.cpu_wait_note is None
    assert len(times) == len(waits) == 2
    assert all(t is not None and t >= 0 for t in times)
    assert all(w is not None and w >= 0 for w in waits)
    assert times[0] is not None and times[0] >= 0.045  # its 0.05 CPU seconds of work
    assert times[1] is not None and times[1] < 0.02  # asleep
    assert recorder.cpu_time(steps=1) == times[:1]


def test_without_the_clock_the_recorder_has_no_cpu_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_wait_module, "SCHEDSTAT", "/nonexistent/schedstat")
    broken = CpuWaitClock()
    monkeypatch.setattr(phases_module, "thread_clock", lambda: broken)
    recorder = PhaseRecorder(steps=1, accum=1, device=torch.device("cpu"), cuda_events=False)
    _one_step(recorder, lambda: None)
    assert recorder.cpu_time() is None and recorder.cpu_wait() is None
    assert recorder.cpu_wait_note == broken.unavailable


def _spin_cpu(cpu_s: float) -> None:
    started = time.thread_time()
    while time.thread_time() - started < cpu_s:
        pass
