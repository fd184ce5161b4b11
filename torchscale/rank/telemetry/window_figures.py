"""Samples -> the result's telemetry figures. Pure functions: no threads, no NVML, no torch.

docs/telemetry.md defines every figure: which samples count (only those between a window's
edges; NVML's ~1 s averages need >= 1 s of windows), energy (the total-energy counter, else the
trapezoid rule over power samples), power, and what else ran on each host.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Literal

from torchscale.contracts.busy_machine import BUSY, UNRESOLVED, busy_finding
from torchscale.contracts.clock_reasons import (
    IGNORED_REASONS,
    SLOWDOWN_REASONS,
    decode_clock_reasons,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import (
    COUNTER_STEP_S,
    NVML_AVERAGING_S,
    POWER_CAP,
    ClockJudgement,
    RankVerdict,
    averaged_too_short,
    cell_verdict,
    counter_too_coarse,
    judge_clocks,
    throttle_warning,
)
from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.rank_reasons import NO_RANK_SAMPLED, by_rank, several
from torchscale.contracts.schema.cell_telemetry import (
    EnergyMethod,
    FieldStats,
    HostLoad,
    PowerMethod,
    RankLoad,
    RankTelemetry,
    Telemetry,
)
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.rank.telemetry.samples import (
    GPU_PROCESSES,
    SM_CLOCK_MAX,
    SamplerReport,
    WindowSamples,
)

# psutil reads CPU time in 10 ms kernel ticks: utilisation over shorter spans is mostly
# rounding, so the maximum is taken over spans of at least this long
MIN_CPU_SPAN_S = 0.1
SPAN_SLACK = 0.95  # a sample a hair early (timer jitter) still closes a span
NO_SAMPLE = said("telemetry.no_sample")
# the kernel's CPU accounting (/proc/stat, a process' utime and stime) counts in these
CLOCK_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
GPU_STATS = ("gpu_util_pct", "gpu_memory_used_bytes", "power_w", "temperature_c", "sm_clock_mhz")
# counted from the samples inside the windows only: what the GPU did during the steps
IN_WINDOW = ("gpu_util_pct", "power_w", "sm_clock_mhz")
# NVML's ~1 s averages: not measurable over windows shorter than that in all
AVERAGED = ("gpu_util_pct", "power_w")
NO_HOST = said("telemetry.no_host")
# windows too short for what did answer: said beside the sources' reasons for energy
NOT_MEASURABLE = ("unavailable.nvml_windows", "unavailable.energy_counter_coarse")


def field_stats(values: Iterable[float | None]) -> FieldStats | None:
    """Mean and max of the values read (None: not read), or None when none was."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return FieldStats(mean=statistics.fmean(present), max=max(present))


def trapezoid_j(t: Sequence[float], power_w: Sequence[float | None]) -> float | None:
    """Joules under the power samples of one window (trapezoid rule over the samples read);
    None with fewer than two."""
    points = [(ti, p) for ti, p in zip(t, power_w, strict=True) if p is not None]
    if len(points) < 2:
        return None
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in pairwise(points))


def counter_j(window: WindowSamples) -> float | None:
    """Joules between the window's two total-energy counter reads, or None without both (or
    with a counter that went backwards: the driver was reloaded)."""
    start, stop = window.energy_start_mj, window.energy_stop_mj
    if start is None or stop is None or stop < start:
        return None
    return (stop - start) / 1000.0


def counter_s(windows: Sequence[WindowSamples]) -> float:
    """Seconds between each window's two energy-counter reads, all windows (the sample span
    where the read times were not kept)."""
    total = 0.0
    for w in windows:
        if w.energy_t is not None:
            total += w.energy_t[1] - w.energy_t[0]
        elif len(w.t) >= 2:
            total += w.t[-1] - w.t[0]
    return total


def window_energy(
    windows: Sequence[WindowSamples],
    floor_s: float = NVML_AVERAGING_S,
    counter_step_s: float = COUNTER_STEP_S,
) -> tuple[float | None, EnergyMethod | None, Reason | None]:
    """(joules over all windows, method, None) or (None, None, why): the counter where it
    answered in every window and its steps allow (`counter_too_coarse`), else the power
    samples' integral over at least NVML's averaging floor of windows."""
    if not windows:
        return None, None, said("telemetry.no_window")
    broken = [w.failure for w in windows if not w.complete]
    if broken:
        return None, None, _broken(broken[0])
    counted = [counter_j(w) for w in windows]
    coarse = None
    if all(j is not None for j in counted):
        coarse = counter_too_coarse(counter_s(windows), len(windows), counter_step_s)
        if coarse is None:
            return sum(j for j in counted if j is not None), "counter", None
    integrated = [trapezoid_j(w.t, w.column("power_w")) for w in windows]
    if all(j is not None for j in integrated):
        short = averaged_too_short(sum(w.length_s for w in windows), floor_s)
        if short is None:
            return sum(j for j in integrated if j is not None), "power_integral", None
        return None, None, coarse or short
    return None, None, coarse or said("telemetry.no_energy_source")


def _broken(failure: Reason | None) -> Finding:
    """Why a figure of windows not all fully sampled is null."""
    failure = failure or said("telemetry.no_edge_reading")
    stored = failure.model_dump() if isinstance(failure, Finding) else failure
    return said("telemetry.window_broken", failure=stored)


def cpu_spans(t: Sequence[float], cpu_s: Sequence[float | None], min_span_s: float) -> list[float]:
    """CPU utilisation (%, 100 = one core) over consecutive spans of at least `min_span_s`
    (less 5 % for timer jitter; the last, shorter remainder joins the span before it); the
    whole window if shorter."""
    points = [(ti, c) for ti, c in zip(t, cpu_s, strict=True) if c is not None]
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return []
    spans: list[tuple[float, float]] = []  # (seconds, cpu seconds)
    start_t, start_c = points[0]
    for ti, ci in points[1:]:
        if ti - start_t >= min_span_s * SPAN_SLACK:
            spans.append((ti - start_t, ci - start_c))
            start_t, start_c = ti, ci
    end_t, end_c = points[-1]
    if end_t > start_t:  # the remainder, joined to the span before it
        dt, dc = spans.pop() if spans else (0.0, 0.0)
        spans.append((dt + end_t - start_t, dc + end_c - start_c))
    return [dc / dt * 100 for dt, dc in spans if dt > 0]


def cpu_stats(
    windows: Sequence[WindowSamples], min_span_s: float = MIN_CPU_SPAN_S
) -> FieldStats | None:
    """Process CPU utilisation: mean = CPU seconds / wall seconds over every window, max over
    spans of at least `min_span_s`."""
    cpu = wall = 0.0
    spans: list[float] = []
    for w in windows:
        points = [(ti, c) for ti, c in zip(w.t, w.column("cpu_s"), strict=True) if c is not None]
        if len(points) >= 2:
            wall += points[-1][0] - points[0][0]
            cpu += points[-1][1] - points[0][1]
        spans += cpu_spans(w.t, w.column("cpu_s"), min_span_s)
    if wall <= 0 or not spans:
        return None
    return FieldStats(mean=cpu / wall * 100, max=max(spans))


def clock_reasons(windows: Sequence[WindowSamples]) -> tuple[list[str], float | None]:
    """(every reason seen, share of samples with one that may slow the GPU), from the
    clocks-event masks of the samples inside the windows; GpuIdle and
    ApplicationsClocksSetting are left out."""
    masks = [int(m) for w in windows for m in w.inside_column("clock_reasons") if m is not None]
    if not masks:
        return [], None
    union = 0
    for mask in masks:
        union |= mask
    seen = [n for n in decode_clock_reasons(union) if n not in IGNORED_REASONS]
    throttled = sum(1 for m in masks if set(decode_clock_reasons(m)) & SLOWDOWN_REASONS)
    return seen, throttled / len(masks)


def clock_judgement(
    windows: Sequence[WindowSamples],
    max_sm_mhz: float | None,
    max_why: Reason | None,
    limit: PowerLimit | None,
    power_w: float | None,
) -> ClockJudgement | None:
    """The clock verdict from the in-window samples' masks and SM clocks, or None without a
    mask read inside a window."""
    rows: list[tuple[set[str], float | None]] = []
    for w in windows:
        clocks = w.column("sm_clock_mhz")
        masks = w.column("clock_reasons")
        for i in w.inside():
            if masks[i] is not None:
                rows.append((set(decode_clock_reasons(int(masks[i] or 0))), clocks[i]))
    if not rows:
        return None
    flagged = Counter(name for names, _ in rows for name in names)
    capped = [clock for names, clock in rows if POWER_CAP in names and clock is not None]
    # the typical clock while capped, not one dip: a 1,560 MHz sample among 42 at ~1,830 is
    # the power manager's step, not clocks lost over the window
    typical = statistics.median(capped) if capped else None
    lowest = min(capped) if capped else None
    return judge_clocks(
        flagged, len(rows), typical, max_sm_mhz, max_why, limit, power_w, lowest_mhz=lowest
    )


def rank_power(
    windows: Sequence[WindowSamples],
    energy: float | None,
    method: EnergyMethod | None,
    sampled: FieldStats | None,
) -> tuple[FieldStats | None, PowerMethod | None]:
    """The rank's power: the counter's joules over its seconds when the counter measured the
    energy, else the in-window samples' mean (`sampled`, already null when too short); its
    max is the highest NVML reading, at least the mean."""
    seconds = counter_s(windows)
    if energy is not None and method == "counter" and seconds > 0:
        watts = energy / seconds
        return FieldStats(mean=watts, max=max(watts, sampled.max if sampled else watts)), "counter"
    if sampled is not None:
        return sampled, "samples"
    return None, None


def _why(report: SamplerReport, name: str, otherwise: Reason = NO_SAMPLE) -> Reason:
    """Why the sampler has no `name`: the source's reason, its last error, else `otherwise`."""
    return report.unavailable.get(name) or report.errors.get(name) or otherwise


def rank_load(report: SamplerReport) -> RankLoad:
    """The rank's host readings over its windows: CPU-second deltas between each window's two
    edges, summed; the load average at every edge; the GPU's processes seen at any edge."""
    windows = report.windows
    unavailable: dict[str, Reason] = {}
    broken = [w.failure for w in windows if not w.complete or len(w.edges) < 2]
    whole = [w for w in windows if w.complete and len(w.edges) >= 2]
    window_s = sum(w.edges[-1].t - w.edges[0].t for w in whole)

    def delta(name: str) -> float | None:
        if broken or not whole:
            unavailable[name] = _broken(broken[0]) if broken else _why(report, name)
            return None
        pairs = [(w.edges[0].values.get(name), w.edges[-1].values.get(name)) for w in whole]
        if any(a is None or b is None for a, b in pairs):
            unavailable[name] = _why(report, name)
            return None
        return sum(b - a for a, b in pairs if a is not None and b is not None)

    busy, own = delta("busy_cpu_s"), delta("own_cpu_s")
    loads = [v for w in windows for e in w.edges if (v := e.values.get("load_avg_1m")) is not None]
    if not loads:
        unavailable["load_avg_1m"] = _why(report, "load_avg_1m")
    lists = [e.gpu_pids for w in windows for e in w.edges if e.gpu_pids is not None]
    if not lists:
        unavailable[GPU_PROCESSES] = _why(report, GPU_PROCESSES)
    return RankLoad(
        pid=report.pid,
        cores=report.cores,
        usable_cores=report.usable_cores,
        window_s=window_s,
        busy_cpu_s=busy,
        own_cpu_s=own,
        load_avg_1m=loads,
        gpu_pids=sorted({pid for pids in lists for pid in pids}) if lists else None,
        gpu_processes_max=max(len(pids) for pids in lists) if lists else None,
        unavailable=unavailable,
    )


def summarise_rank(
    rank: int,
    host: str,
    report: SamplerReport,
    floor_s: float = NVML_AVERAGING_S,
    counter_step_s: float = COUNTER_STEP_S,
) -> RankTelemetry:
    """One rank's telemetry from its sampler's windows; a null field says why. `floor_s` and
    `counter_step_s` are NVML's averaging period and the energy counter's step."""
    windows = report.windows

    def column(name: str) -> list[float | None]:
        if name in AVERAGED:  # trailing averages: only those that lie inside one window
            return [v for w in windows for v in w.settled_column(name, floor_s)]
        if name in IN_WINDOW:
            return [v for w in windows for v in w.inside_column(name)]
        return [v for w in windows for v in w.column(name)]

    longest_s = max((w.length_s for w in windows), default=0.0)
    short = averaged_too_short(longest_s, floor_s, longest=True)
    unavailable: dict[str, Reason] = {}
    stats: dict[str, FieldStats | None] = {}
    for name in (*GPU_STATS, "rss_bytes"):
        stats[name] = field_stats(column(name))
        sampled = stats[name] is not None or any(
            v is not None for w in windows for v in w.inside_column(name)
        )
        if sampled and name in AVERAGED and short is not None:
            stats[name] = None
            unavailable[name] = short
        elif stats[name] is None:
            unavailable[name] = _why(report, name)
    cpu = cpu_stats(windows)
    if cpu is None:
        unavailable["cpu_util_pct"] = _why(report, "cpu_s")
    energy, method, energy_why = window_energy(windows, floor_s, counter_step_s)
    if energy is None:
        # a window not fully sampled says it all; else why the counter, then the power failed
        reasons = [report.unavailable.get("energy_j")]
        if report.device != "cpu":  # on CPU the energy reason says it all
            reasons.append(report.unavailable.get("power_w"))
        named = [r for r in reasons if r]
        broken = any(not w.complete for w in windows)
        if isinstance(energy_why, Finding) and energy_why.code in NOT_MEASURABLE:
            named.append(energy_why)  # what did answer could not measure windows this short
        unavailable["energy_j"] = (
            several(named) if named and not broken else energy_why or NO_SAMPLE
        )
    power, power_method = rank_power(windows, energy, method, stats["power_w"])
    if power is not None:
        unavailable.pop("power_w", None)
    seen, fraction = clock_reasons(windows)
    if fraction is None:
        unavailable["throttled_fraction"] = _why(report, "clock_reasons")
    max_why = None
    if report.sm_clock_max_mhz is None and report.device != "cpu":
        why = _why(report, SM_CLOCK_MAX, said("telemetry.max_clock_unread"))
        max_why = unavailable[SM_CLOCK_MAX] = why
    mean_w = power.mean if power is not None else None
    judged = clock_judgement(windows, report.sm_clock_max_mhz, max_why, report.power_limit, mean_w)
    if judged is None:
        unavailable["clock_verdict"] = unavailable.get("throttled_fraction") or NO_SAMPLE
    failures = [w.failure for w in windows if w.failure]
    if failures:
        unavailable["windows"] = several(failures)
    return RankTelemetry(
        rank=rank,
        host=host,
        device=report.device,
        gpu_name=report.gpu_name,
        gpu_uuid=report.gpu_uuid,
        samples=sum(len(w.t) for w in windows),
        sampled_s=sum(w.t[-1] - w.t[0] for w in windows if len(w.t) >= 2),
        window_s=sum(w.length_s for w in windows),
        window_samples=sum(len(w.inside()) for w in windows),
        gpu_util_pct=stats["gpu_util_pct"],
        gpu_memory_used_bytes=stats["gpu_memory_used_bytes"],
        power_w=power,
        power_method=power_method,
        temperature_c=stats["temperature_c"],
        sm_clock_mhz=stats["sm_clock_mhz"],
        sm_clock_max_mhz=report.sm_clock_max_mhz,
        power_limit=report.power_limit,
        cpu_util_pct=cpu,
        rss_bytes=stats["rss_bytes"],
        energy_j=energy,
        energy_method=method,
        clock_event_reasons=seen,
        throttle_reasons=list(judged.reasons) if judged and judged.verdict == "throttled" else [],
        throttled_fraction=fraction,
        clock_verdict=judged.verdict if judged else None,
        clock_finding=judged.finding if judged else None,
        unavailable=unavailable,
        load=rank_load(report),
    )


def _reason(ranks: Sequence[RankTelemetry], key: str) -> Reason:
    """Why a total is null: the ranks' reason, once when they share it."""
    if not ranks:
        return NO_RANK_SAMPLED
    measured = said("telemetry.not_measured")
    return by_rank({r.rank: r.unavailable.get(key, measured) for r in ranks}, len(ranks))


def _every(ranks: Sequence[RankTelemetry], values: list[float | None]) -> list[float] | None:
    """The values when every rank has one (a total over some GPUs would be a different
    figure), else None."""
    if not ranks or any(v is None for v in values):
        return None
    return [v for v in values if v is not None]


def rank_verdicts(ranks: Sequence[RankTelemetry]) -> list[RankVerdict]:
    """Each rank's clock verdict as the cell's totals read it."""
    return [
        RankVerdict(
            rank=r.rank,
            gpu=r.gpu_name or r.device,
            verdict=r.clock_verdict,
            reasons=tuple(r.throttle_reasons),
            why=r.clock_finding or r.unavailable.get("clock_verdict", NO_SAMPLE),
        )
        for r in ranks
    ]


def _load_reason(ranks: Sequence[RankTelemetry], key: str) -> Reason:
    """Why the ranks' host readings lack `key`, once when they share it."""
    return by_rank(
        {r.rank: r.load.unavailable.get(key, NO_SAMPLE) if r.load else NO_HOST for r in ranks},
        len(ranks),
    )


def _rates(ranks: Sequence[RankTelemetry], name: str) -> tuple[list[float] | None, Reason | None]:
    """Each rank's `name` (CPU seconds) per second of its windows: (rates, None) when every
    rank has it, else (None, why)."""
    rates: list[float] = []
    reasons: dict[int, Reason] = {}
    for r in ranks:
        load = r.load
        seconds = getattr(load, name) if load is not None else None
        if load is None:
            reasons[r.rank] = NO_HOST
        elif seconds is None:
            reasons[r.rank] = load.unavailable.get(name, NO_SAMPLE)
        elif load.window_s <= 0:
            reasons[r.rank] = said("telemetry.no_window_length")
        else:
            rates.append(seconds / load.window_s)
    return (None, by_rank(reasons, len(ranks))) if reasons else (rates, None)


def per_gpu_total(ranks: Sequence[RankTelemetry], energies: Sequence[float]) -> float:
    """The cell's energy: each GPU's once. Ranks sharing a GPU (launcher.ranks_per_gpu) each
    read its one counter over the same windows, so their readings are averaged, not added;
    a rank whose GPU is unnamed counts on its own."""
    by_gpu: dict[tuple[str, str], list[float]] = {}
    for r, joules in zip(ranks, energies, strict=True):
        key = (r.host, r.gpu_uuid or f"rank {r.rank}")
        by_gpu.setdefault(key, []).append(joules)
    return sum(statistics.fmean(readings) for readings in by_gpu.values())


def other_gpu_processes(
    ranks: Sequence[RankTelemetry],
) -> tuple[int | None, list[int], dict[str, Reason]]:
    """(count, PIDs, unavailable) of compute processes on the ranks' GPUs that are not the
    ranks (all on one host: PIDs are per host). A rank's own PID missing from its GPU's list
    means NVML's PIDs are of another PID namespace: then each GPU counts its processes beyond
    the cell's ranks on it, without names."""
    loads = [(r, r.load) for r in ranks if r.load is not None and r.load.gpu_pids is not None]
    if len(loads) < len(ranks):  # a count over some GPUs would be another figure
        return None, [], {"other_gpu_processes": _load_reason(ranks, GPU_PROCESSES)}
    if all(load.pid in (load.gpu_pids or []) for _, load in loads):
        ours = {load.pid for _, load in loads}
        others = sorted({pid for _, load in loads for pid in load.gpu_pids or []} - ours)
        return len(others), others, {}
    per_gpu: dict[str, list[int]] = {}  # GPU -> the most processes each of its ranks saw
    for r, load in loads:
        per_gpu.setdefault(r.gpu_uuid or r.device, []).append(load.gpu_processes_max or 0)
    count = sum(max(0, max(most) - len(most)) for most in per_gpu.values())
    return count, [], {"other_gpu_pids": said("telemetry.namespace_pids")}


def tick_cores(loads: Sequence[RankLoad], tick_s: float = CLOCK_TICK_S) -> float:
    """What one tick of the kernel's CPU accounting reads as, in cores, over the shortest
    windows of the ranks here: the kernel counts CPU time in ticks, so over windows of w
    seconds a stray tick reads as tick / w cores. A tiny model's 60 steps of 0.4 ms (24 ms of
    windows) read one as 0.4 core: a busy host, measured."""
    window_s = min((load.window_s for load in loads if load.window_s > 0), default=0.0)
    return tick_s / window_s if window_s > 0 else float("inf")


def unresolved(
    loads: Sequence[RankLoad], finding: Finding, tick_s: float = CLOCK_TICK_S
) -> Finding:
    """Why the busy verdict cannot be told from these windows (an unresolved `finding`): the
    shortest window, the tick and the figures it lies between (contracts/wording/
    host_load_reasons.py words it)."""
    window_s = min((load.window_s for load in loads if load.window_s > 0), default=0.0)
    figures = {
        "window_s": window_s,
        "tick_s": tick_s,
        "other_cores": finding.figures["other_cores"],
        "threshold": finding.figures["threshold"],
    }
    return Finding(code="unavailable.busy_windows_too_short", figures=figures)


def host_load(host: str, ranks: Sequence[RankTelemetry]) -> HostLoad:
    """What else ran on `host` during the windows, from the cell's ranks on it: other cores =
    mean over the ranks of (host busy CPU s / window s) - sum over them of (own CPU s / window
    s), at least 0 (the kernel's 10 ms ticks can take it a hair below)."""
    unavailable: dict[str, Reason] = {}
    loads = [r.load for r in ranks if r.load is not None]
    cores = max((load.cores for load in loads if load.cores), default=None)
    busy_rates, why_busy = _rates(ranks, "busy_cpu_s")
    own_rates, why_own = _rates(ranks, "own_cpu_s")
    busy_cores = statistics.fmean(busy_rates) if busy_rates else None
    cell_cores = sum(own_rates) if own_rates is not None else None
    other = busy = finding = too_short = None
    if busy_cores is not None and cell_cores is not None:
        other = max(0.0, busy_cores - cell_cores)
        finding = busy_finding(other, cell_cores, cores, len(ranks), tick_cores(loads))
        if finding.code == UNRESOLVED:
            other, too_short = None, unresolved(loads, finding)
        else:
            busy = finding.code == BUSY
    for key, rank_why in (("busy_cores", why_busy), ("cell_cores", why_own)):
        if rank_why is not None:
            unavailable[key] = rank_why
    if other is None:
        why: Reason = why_busy or why_own or too_short or NO_SAMPLE
        unavailable["other_cores"] = unavailable["busy"] = why
    load_avg = field_stats([v for load in loads for v in load.load_avg_1m])
    if load_avg is None:
        unavailable["load_avg_1m"] = _load_reason(ranks, "load_avg_1m")
    gpu_count, gpu_pids, why_gpu = other_gpu_processes(ranks)
    return HostLoad(
        host=host,
        ranks=[r.rank for r in ranks],
        cores=cores,
        busy_cores=busy_cores,
        cell_cores=cell_cores,
        other_cores=other,
        load_avg_1m=load_avg,
        other_gpu_processes=gpu_count,
        other_gpu_pids=gpu_pids,
        busy=busy,
        finding=finding,
        unavailable={**unavailable, **why_gpu},
    )


def host_loads(ranks: Sequence[RankTelemetry]) -> list[HostLoad] | None:
    """One HostLoad per host the cell's ranks ran on (in rank order), or None when no rank
    read its host."""
    if not any(r.load is not None for r in ranks):
        return None
    by_host: dict[str, list[RankTelemetry]] = {}
    for r in sorted(ranks, key=lambda r: r.rank):
        by_host.setdefault(r.host, []).append(r)
    return [host_load(host, members) for host, members in by_host.items()]


def busy_warnings(hosts: Sequence[HostLoad]) -> list[CellWarning]:
    """The result's warnings when other processes competed with the cell: for CPU by the
    busy rule, for a GPU whenever another compute process was on one of the cell's."""
    warnings = []
    busy = [
        {
            "host": h.host,
            **h.finding.model_dump(),
            "load_avg_max": h.load_avg_1m.max if h.load_avg_1m else None,
        }
        for h in hosts
        if h.busy and h.finding is not None
    ]
    if busy:
        warnings.append(CellWarning.of("busy machine", "warning.busy_machine", {"hosts": busy}))
    shared = [
        {"host": h.host, "processes": h.other_gpu_processes, "pids": list(h.other_gpu_pids)}
        for h in hosts
        if h.other_gpu_processes
    ]
    if shared:
        warnings.append(CellWarning.of("other", "warning.gpu_shared", {"hosts": shared}))
    return warnings


def combine(
    ranks: Sequence[RankTelemetry],
    interval_ms: int,
    windows: int,
    samples_processed: int,
    tokens_per_sample: float | None,
) -> tuple[Telemetry, dict[str, Reason], list[CellWarning]]:
    """The cell's telemetry from every rank's: (telemetry, unavailable, warnings).

    `samples_processed` is what all ranks processed in the sampled windows (global batch x
    steps x windows). A total needs every rank's figure; otherwise it is null with the ranks'
    reasons under `telemetry.<field>` in `unavailable`."""
    ranks = sorted(ranks, key=lambda r: r.rank)
    unavailable: dict[str, Reason] = {}

    def mean_of(values: list[float | None]) -> float | None:
        every = _every(ranks, values)
        return statistics.fmean(every) if every is not None else None

    util = mean_of([r.gpu_util_pct.mean if r.gpu_util_pct else None for r in ranks])
    power = mean_of([r.power_w.mean if r.power_w else None for r in ranks])
    clock = mean_of([r.sm_clock_mhz.mean if r.sm_clock_mhz else None for r in ranks])
    cpu = mean_of([r.cpu_util_pct.mean if r.cpu_util_pct else None for r in ranks])
    temps = _every(ranks, [r.temperature_c.max if r.temperature_c else None for r in ranks])
    energies = _every(ranks, [r.energy_j for r in ranks])
    energy = per_gpu_total(ranks, energies) if energies is not None else None
    methods = {r.energy_method for r in ranks}
    method: EnergyMethod | Literal["mixed"] | None = None
    if energy is not None:
        method = (methods.pop() if len(methods) == 1 else None) or "mixed"
    per_joule = samples_processed / energy if energy else None
    tokens = (
        samples_processed * tokens_per_sample / energy if energy and tokens_per_sample else None
    )
    powers = {r.power_method for r in ranks}
    power_method: PowerMethod | Literal["mixed"] | None = None
    if power is not None:
        power_method = (powers.pop() if len(powers) == 1 else None) or "mixed"
    verdicts = rank_verdicts(ranks)
    verdict, throttled, throttle_reasons, why_not = cell_verdict(verdicts)

    for key, value, source in (
        ("gpu_util_pct_mean", util, "gpu_util_pct"),
        ("power_w_mean", power, "power_w"),
        ("temperature_c_max", temps, "temperature_c"),
        ("sm_clock_mhz_mean", clock, "sm_clock_mhz"),
        ("cpu_util_pct_mean", cpu, "cpu_util_pct"),
        ("energy_j", energy, "energy_j"),
    ):
        if value is None:
            unavailable[f"telemetry.{key}"] = _reason(ranks, source)
    if throttled is None:
        unavailable["telemetry.throttled"] = why_not if ranks and why_not else NO_RANK_SAMPLED
    if per_joule is None:
        unavailable["telemetry.samples_per_joule"] = unavailable.get("telemetry.energy_j") or coded(
            "unavailable.no_energy_used"
        )
    hosts = host_loads(ranks)
    if hosts is None:
        unavailable["telemetry.hosts"] = coded("unavailable.no_host_readings")
    if tokens is None:
        unavailable["telemetry.tokens_per_joule"] = (
            coded("unavailable.not_language_model")
            if not tokens_per_sample
            else unavailable["telemetry.samples_per_joule"]
        )
    telemetry = Telemetry(
        source="nvml+psutil" if any(r.device.startswith("cuda") for r in ranks) else "psutil",
        interval_ms=interval_ms,
        windows=windows,
        ranks=list(ranks),
        gpu_util_pct_mean=util,
        power_w_mean=power,
        power_method=power_method,
        temperature_c_max=max(temps) if temps is not None else None,
        sm_clock_mhz_mean=clock,
        cpu_util_pct_mean=cpu,
        energy_j=energy,
        energy_method=method,
        samples_per_joule=per_joule,
        tokens_per_joule=tokens,
        throttled=throttled,
        throttle_reasons=throttle_reasons,
        clock_verdict=verdict,
        hosts=hosts,
    )
    hot = throttle_warning(verdicts)
    clocks = [CellWarning.of("throttling", "warning.throttled", hot)] if hot else []
    return telemetry, unavailable, clocks + busy_warnings(hosts or [])
