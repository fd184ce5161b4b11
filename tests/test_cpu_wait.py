"""The training thread's wait for a CPU (torchscale/rank/telemetry/cpu_wait.py) and what the
straggler rule does with it (attribution.cpu_wait_check): a rank the host held back is late
exactly like a rank with more work, and only the scheduler's run_delay tells them apart."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from test_attribution import step_table

from torchscale.contracts.step_phases import CPU_WAIT
from torchscale.offline.analysis.attribution import (
    CPU_WAIT_CHECK,
    CPU_WAIT_UNMEASURED,
    cell_attribution,
)
from torchscale.rank.telemetry import cpu_wait as cpu_wait_module
from torchscale.rank.telemetry.cpu_wait import CpuWaitClock

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
    return next(c for c in attribution.cross_checks if c.name == CPU_WAIT_CHECK)


def test_a_rank_the_host_held_back_is_named_with_kind_host() -> None:
    # rank 1's forward is 1 ms longer on every step, and all of it was spent waiting for a CPU
    table = with_cpu_wait(step_table(delay=(1, "forward", 1.0)), rank=1, ms=1.0)
    without = cell_attribution(table.drop(columns=[CPU_WAIT]), None)
    assert without is not None and without.straggler is not None
    assert without.straggler.named and without.straggler.rank == 1  # the timers alone name it
    assert without.straggler.kind == "compute"  # without the scheduler's word: its work
    model = cell_attribution(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "host"
    assert verdict.host_bound is True and verdict.significant
    assert verdict.kind_basis is not None and "held it off the CPU" in verdict.kind_basis
    assert verdict.host_wait_s is not None and verdict.host_wait_s.value is not None
    assert verdict.host_wait_s.value == pytest.approx(1e-3, rel=0.1)
    assert verdict.summary.startswith("rank 1 is a straggler (host: it was held off the CPU")
    assert verdict.summary.endswith("check the host")
    check = host_check(model)
    assert check.agrees is True and "the host took its time" in check.detail


def test_a_rank_with_more_work_that_waits_longer_for_a_cpu_is_compute() -> None:
    """The user's case: a rank doing more real work on a shared host is runnable longer, so
    it also waits longer for a CPU; its extra work (3 ms) is more than its extra wait (1.5
    ms), so it is a compute straggler, never "check the host"."""
    table = with_cpu_wait(step_table(delay=(1, "forward", 3.0)), rank=1, ms=1.5)
    model = cell_attribution(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.kind == "compute"
    assert verdict.host_bound is False
    assert verdict.kind_basis is not None and "less than its work's" in verdict.kind_basis


def test_a_slow_rank_that_also_waited_for_a_cpu_is_still_named() -> None:
    # 2 ms more forward work, of which only 0.5 ms was a wait for a CPU: the work is slow
    table = with_cpu_wait(step_table(delay=(1, "forward", 2.0)), rank=1, ms=0.5)
    model = cell_attribution(table, None)
    assert model is not None and model.straggler is not None
    verdict = model.straggler
    assert verdict.named and verdict.rank == 1 and verdict.phase == "forward"
    assert verdict.host_bound is False
    assert verdict.host_wait_s is not None and verdict.host_wait_s.value is not None
    assert verdict.host_wait_s.value == pytest.approx(0.5e-3, rel=0.2)
    assert "the work itself is slow" in host_check(model).detail


def test_a_wait_measured_on_no_step_says_so_and_changes_nothing() -> None:
    table = step_table(delay=(1, "forward", 2.0)).assign(**{CPU_WAIT: np.nan})
    model = cell_attribution(table, None)
    assert model is not None and model.straggler is not None
    assert model.straggler.named and model.straggler.host_bound is None
    check = host_check(model)
    assert check.agrees is None and check.detail == CPU_WAIT_UNMEASURED


def test_the_clock_is_unavailable_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_wait_module, "SCHEDSTAT", "/nonexistent/schedstat")
    clock = CpuWaitClock()
    assert clock.read() is None
    assert clock.unavailable is not None and "Linux only" in clock.unavailable


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux /proc/thread-self/schedstat")
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


def test_every_surface_says_a_host_bound_gap_is_the_hosts() -> None:
    """The one straggler line (every terminal and report surface renders it) names the rank
    the host held back, its gap and the wait, and says to check the host."""
    from torchscale.interfaces.report.diagnosis_text import straggler_text

    table = with_cpu_wait(step_table(delay=(1, "forward", 1.0)), rank=1, ms=1.0)
    model = cell_attribution(table, None)
    assert model is not None and model.straggler is not None
    text = straggler_text(model.straggler, model.ranks)
    assert text.startswith("Straggler: rank 1, host (held off the CPU), +")
    assert "of it waiting for a CPU" in text and text.endswith("check the host")
    assert "p =" not in text


def test_the_finding_sends_the_reader_to_the_host_not_the_code() -> None:
    from torchscale.offline.analysis.diagnosis import RunEvidence, TimerEvidence, diagnose

    table = with_cpu_wait(step_table(delay=(1, "forward", 1.0)), rank=1, ms=1.0)
    diagnosis = diagnose(RunEvidence(timers=TimerEvidence(steps=table)))
    assert diagnosis is not None and diagnosis.straggler is not None
    assert diagnosis.straggler.host_bound and diagnosis.straggler.named
    found = [f for f in diagnosis.findings if f.category == "straggler"]
    assert [f.title for f in found] == ["rank 1 held off the CPU by other work on its cores"]
    assert "the code is not slower" in found[0].recommendation
    assert not any("take turns" in f.title or "disputed" in f.title for f in diagnosis.findings)
