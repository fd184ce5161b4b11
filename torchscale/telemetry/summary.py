"""Samples -> the result's telemetry figures. Pure functions: no threads, no NVML, no torch.

Energy (docs/telemetry.md): by the GPU's total-energy counter when it answered at both edges of
every window, `E = sum over windows (E_stop - E_start) / 1000` joules; else by the trapezoid
rule over the power samples, `E = sum over windows sum_i (t_i+1 - t_i) (P_i + P_i+1) / 2`. The
first and last samples sit at the window's edges, so both cover the whole window.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Literal

from torchscale.results.schema import EnergyMethod, FieldStats, RankTelemetry, Telemetry
from torchscale.telemetry.reasons import IGNORED_REASONS, SLOWDOWN_REASONS, decode_clock_reasons
from torchscale.telemetry.samples import SamplerReport, WindowSamples

# psutil reads CPU time in 10 ms kernel ticks: utilisation over shorter spans is mostly
# rounding, so the maximum is taken over spans of at least this long
MIN_CPU_SPAN_S = 0.1
SPAN_SLACK = 0.95  # a sample a hair early (timer jitter) still closes a span
NO_SAMPLE = "no sample of it in the measured windows"
GPU_STATS = ("gpu_util_pct", "gpu_memory_used_bytes", "power_w", "temperature_c", "sm_clock_mhz")


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


def window_energy(
    windows: Sequence[WindowSamples],
) -> tuple[float | None, EnergyMethod | None, str | None]:
    """(joules over all windows, method, None) or (None, None, why)."""
    if not windows:
        return None, None, "no window was sampled"
    broken = [w.failure for w in windows if not w.complete]
    if broken:
        return None, None, f"a window was not fully sampled: {broken[0]}"
    counted = [counter_j(w) for w in windows]
    if all(j is not None for j in counted):
        return sum(j for j in counted if j is not None), "counter", None
    integrated = [trapezoid_j(w.t, w.column("power_w")) for w in windows]
    if all(j is not None for j in integrated):
        return sum(j for j in integrated if j is not None), "power_integral", None
    return None, None, "neither the energy counter nor two power samples in every window"


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
    if end_t > start_t:  # the remainder
        if spans:
            dt, dc = spans.pop()
            spans.append((dt + end_t - start_t, dc + end_c - start_c))
        else:
            spans.append((end_t - start_t, end_c - start_c))
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


def clock_reasons(
    windows: Sequence[WindowSamples],
) -> tuple[list[str], list[str], float | None]:
    """(every reason seen, those that slow the GPU, share of samples with a slowdown), from
    the clocks-event masks; GpuIdle and ApplicationsClocksSetting are left out."""
    masks = [int(m) for w in windows for m in w.column("clock_reasons") if m is not None]
    if not masks:
        return [], [], None
    union = 0
    for mask in masks:
        union |= mask
    seen = [n for n in decode_clock_reasons(union) if n not in IGNORED_REASONS]
    slowing = [n for n in seen if n in SLOWDOWN_REASONS]
    throttled = sum(1 for m in masks if set(decode_clock_reasons(m)) & SLOWDOWN_REASONS)
    return seen, slowing, throttled / len(masks)


def summarise_rank(rank: int, host: str, report: SamplerReport) -> RankTelemetry:
    """One rank's telemetry from its sampler's windows; a null field says why."""
    windows = report.windows

    def why(name: str) -> str:
        return report.unavailable.get(name) or report.errors.get(name) or NO_SAMPLE

    def column(name: str) -> list[float | None]:
        return [v for w in windows for v in w.column(name)]

    unavailable: dict[str, str] = {}
    stats: dict[str, FieldStats | None] = {}
    for name in (*GPU_STATS, "rss_bytes"):
        stats[name] = field_stats(column(name))
        if stats[name] is None:
            unavailable[name] = why(name)
    cpu = cpu_stats(windows)
    if cpu is None:
        unavailable["cpu_util_pct"] = why("cpu_s")
    energy, method, energy_why = window_energy(windows)
    if energy is None:
        # a window not fully sampled says it all; else why the counter, then the power failed
        reasons = [report.unavailable.get("energy_j")]
        if report.device != "cpu":  # on CPU the energy reason says it all
            reasons.append(report.unavailable.get("power_w"))
        named = [r for r in reasons if r]
        broken = any(not w.complete for w in windows)
        unavailable["energy_j"] = (
            "; ".join(dict.fromkeys(named)) if named and not broken else energy_why or NO_SAMPLE
        )
    seen, slowing, fraction = clock_reasons(windows)
    if fraction is None:
        unavailable["throttled_fraction"] = why("clock_reasons")
    failures = [w.failure for w in windows if w.failure]
    if failures:
        unavailable["windows"] = "; ".join(dict.fromkeys(failures))
    return RankTelemetry(
        rank=rank,
        host=host,
        device=report.device,
        gpu_name=report.gpu_name,
        gpu_uuid=report.gpu_uuid,
        samples=sum(len(w.t) for w in windows),
        sampled_s=sum(w.t[-1] - w.t[0] for w in windows if len(w.t) >= 2),
        gpu_util_pct=stats["gpu_util_pct"],
        gpu_memory_used_bytes=stats["gpu_memory_used_bytes"],
        power_w=stats["power_w"],
        temperature_c=stats["temperature_c"],
        sm_clock_mhz=stats["sm_clock_mhz"],
        cpu_util_pct=cpu,
        rss_bytes=stats["rss_bytes"],
        energy_j=energy,
        energy_method=method,
        clock_event_reasons=seen,
        throttle_reasons=slowing,
        throttled_fraction=fraction,
        unavailable=unavailable,
    )


def _reason(ranks: Sequence[RankTelemetry], key: str) -> str:
    """Why a total is null: the ranks' reason, once when they share it."""
    reasons = {r.rank: r.unavailable.get(key, "not measured") for r in ranks}
    if not reasons:
        return "no rank was sampled"
    if len(set(reasons.values())) == 1:
        return next(iter(reasons.values()))
    return "; ".join(f"rank {rank}: {why}" for rank, why in reasons.items())


def _every(ranks: Sequence[RankTelemetry], values: list[float | None]) -> list[float] | None:
    """The values when every rank has one (a total over some GPUs would be a different
    figure), else None."""
    if not ranks or any(v is None for v in values):
        return None
    return [v for v in values if v is not None]


def throttle_warning(ranks: Sequence[RankTelemetry]) -> str | None:
    """The result's warning when any GPU's clocks were held down during the windows."""
    parts = [
        f"rank {r.rank} ({r.gpu_name or r.device}): {', '.join(r.throttle_reasons)} in "
        f"{(r.throttled_fraction or 0) * 100:.0f}% of samples"
        for r in ranks
        if r.throttle_reasons
    ]
    if not parts:
        return None
    return (
        "GPU clocks throttled during the measured windows: "
        + "; ".join(parts)
        + " (the figures were measured below full clocks)"
    )


def combine(
    ranks: Sequence[RankTelemetry],
    interval_ms: int,
    windows: int,
    samples_processed: int,
    tokens_per_sample: int | None,
) -> tuple[Telemetry, dict[str, str], list[str]]:
    """The cell's telemetry from every rank's: (telemetry, unavailable, warnings).

    `samples_processed` is what all ranks processed in the sampled windows (global batch x
    steps x windows). A total needs every rank's figure; otherwise it is null with the ranks'
    reasons under `telemetry.<field>` in `unavailable`."""
    ranks = sorted(ranks, key=lambda r: r.rank)
    unavailable: dict[str, str] = {}

    def mean_of(values: list[float | None]) -> float | None:
        every = _every(ranks, values)
        return statistics.fmean(every) if every is not None else None

    util = mean_of([r.gpu_util_pct.mean if r.gpu_util_pct else None for r in ranks])
    power = mean_of([r.power_w.mean if r.power_w else None for r in ranks])
    clock = mean_of([r.sm_clock_mhz.mean if r.sm_clock_mhz else None for r in ranks])
    cpu = mean_of([r.cpu_util_pct.mean if r.cpu_util_pct else None for r in ranks])
    temps = _every(ranks, [r.temperature_c.max if r.temperature_c else None for r in ranks])
    energies = _every(ranks, [r.energy_j for r in ranks])
    energy = sum(energies) if energies is not None else None
    methods = {r.energy_method for r in ranks}
    method: EnergyMethod | Literal["mixed"] | None = None
    if energy is not None:
        only = methods.pop() if len(methods) == 1 else None
        method = only if only is not None else "mixed"
    per_joule = samples_processed / energy if energy else None
    tokens = (
        samples_processed * tokens_per_sample / energy if energy and tokens_per_sample else None
    )
    throttle_reasons = list(dict.fromkeys(n for r in ranks for n in r.throttle_reasons))
    throttled: bool | None = None
    if throttle_reasons:
        throttled = True
    elif ranks and all(r.throttled_fraction is not None for r in ranks):
        throttled = False

    for key, value, source in (
        ("gpu_util_pct_mean", util, "gpu_util_pct"),
        ("power_w_mean", power, "power_w"),
        ("temperature_c_max", temps, "temperature_c"),
        ("sm_clock_mhz_mean", clock, "sm_clock_mhz"),
        ("cpu_util_pct_mean", cpu, "cpu_util_pct"),
        ("energy_j", energy, "energy_j"),
        ("throttled", throttled, "throttled_fraction"),
    ):
        if value is None:
            unavailable[f"telemetry.{key}"] = _reason(ranks, source)
    if per_joule is None:
        unavailable["telemetry.samples_per_joule"] = (
            unavailable.get("telemetry.energy_j") or "the windows used 0 J"
        )
    if tokens is None:
        unavailable["telemetry.tokens_per_joule"] = (
            "not a language model"
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
        temperature_c_max=max(temps) if temps is not None else None,
        sm_clock_mhz_mean=clock,
        cpu_util_pct_mean=cpu,
        energy_j=energy,
        energy_method=method,
        samples_per_joule=per_joule,
        tokens_per_joule=tokens,
        throttled=throttled,
        throttle_reasons=throttle_reasons,
    )
    warning = throttle_warning(ranks)
    return telemetry, unavailable, [warning] if warning else []
