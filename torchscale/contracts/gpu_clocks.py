"""When a GPU counts as throttled, and when NVML's averaged figures can be measured at all: the
rules a rank's telemetry is judged by (rank/telemetry/window_figures.py); docs/telemetry.md
states them. Why: SwPowerCap is how a GPU holds its power limit under dense load, so it costs
clocks only under a site cap or with the SM clock well below its maximum; NVML's power and
utilisation are trailing ~1 s averages, and the energy counter moves in steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from torchscale.contracts.finding import Finding
from torchscale.contracts.power_limit import PowerLimit, stored_reason
from torchscale.contracts.rank_reasons import NO_RANK_SAMPLED, by_rank

# the clocks-event reasons that are real slowdowns: hardware, thermal, the power brake
HARDWARE_SLOWDOWNS = (
    "HwSlowdown",
    "SwThermalSlowdown",
    "HwThermalSlowdown",
    "HwPowerBrakeSlowdown",
)
POWER_CAP = "SwPowerCap"
# a slowdown set in fewer samples than this is a transient, not a throttled window
MIN_FLAGGED_SAMPLES = 2
# SwPowerCap costs clocks when the SM clock of a flagged sample is below this share of its max
FULL_CLOCK_SHARE = 0.9
# NVML averages power over ~1 s and utilisation over 1/6-1 s: windows shorter than this in all
# cannot carry either figure
NVML_AVERAGING_S = 1.0
# the total-energy counter moves in steps of up to this long: each window's two reads can each
# land up to a step late
COUNTER_STEP_S = 0.1
# counter energy is kept when the steps' standard error is at most this share of it
COUNTER_MAX_ERROR = 0.1

ClockVerdict = Literal["throttled", "at_power_limit", "full_clocks", "not_judged"]
# SwPowerCap at the default limit is an action only when the clocks are low while the GPU draws
# well under its limit: at the limit it is how the GPU keeps to it. The in-window draw is NVML's
# ~1 s trailing average over capped and uncapped moments alike, so a GPU the power manager holds
# reads a little under its limit (two H100 cells held by SwPowerCap at 700 W: 632 and 676 W,
# 90 % and 97 %); below this share of the enforced limit the draw is "well under" it
AT_LIMIT_DRAW = 0.85
EDGES_INCLUDED = "edges_included"  # an old result's samples: the window edges' too
IN_WINDOW = "in_window"


@dataclass(frozen=True)
class ClockJudgement:
    """A GPU's clocks over the measured windows: the verdict, the reasons a throttled verdict
    rests on, and what it was judged from (a finding: code and figures, worded when shown)."""

    verdict: ClockVerdict
    reasons: tuple[str, ...]
    finding: Finding


def _limit_figures(limit: PowerLimit | None) -> dict[str, object]:
    if limit is None or limit.capped is None:
        return {"enforced_w": None, "default_w": None, "limit_unknown": stored_reason(limit)}
    return {"enforced_w": limit.enforced_w, "default_w": limit.default_w}


def judge_clocks(
    flagged: Mapping[str, int],
    samples: int,
    low_clock_mhz: float | None,
    max_sm_mhz: float | None,
    max_why: Finding | None,
    limit: PowerLimit | None,
    power_w: float | None = None,
    lowest_mhz: float | None = None,
) -> ClockJudgement:
    """The verdict from how many of `samples` each reason was set in (`flagged`), the SM clock
    of the samples with SwPowerCap (`low_clock_mhz`: their median where the samples are at
    hand, `lowest_mhz` beside it), the GPU's top SM clock (None: `max_why` says why), its
    power limits and its mean draw
    over the windows (`power_w`, None: not read). Rule (docs/telemetry.md): a hardware or
    thermal bit, or SwPowerCap under a limit below the default or with the clocks low while the
    draw is well under the limit, is throttled; SwPowerCap at the default limit with the draw
    at it is the GPU keeping to its limit: context, never an action."""
    base: dict[str, object] = {"samples": samples, "where": IN_WINDOW}
    hardware = [r for r in HARDWARE_SLOWDOWNS if flagged.get(r, 0) >= MIN_FLAGGED_SAMPLES]
    if hardware:
        counts = {r: flagged[r] for r in hardware}
        return _judged(
            "throttled", tuple(hardware), "clocks.hardware_slowdown", base, counts=counts
        )
    base["transients"] = [r for r in HARDWARE_SLOWDOWNS if flagged.get(r, 0)]
    capped = flagged.get(POWER_CAP, 0)
    base["capped"] = capped
    if capped < MIN_FLAGGED_SAMPLES:
        return _judged("full_clocks", (), "clocks.full", base)
    base |= _limit_figures(limit)
    if limit is not None and limit.capped:
        return _judged("throttled", (POWER_CAP,), "clocks.site_cap", base)
    base |= {"clock_mhz": low_clock_mhz, "lowest_mhz": lowest_mhz}
    base |= {"max_mhz": max_sm_mhz, "max_from_sku": False, "power_w": power_w}
    share = low_clock_mhz / max_sm_mhz if max_sm_mhz and low_clock_mhz is not None else None
    low = share is not None and share < FULL_CLOCK_SHARE
    enforced = limit.enforced_w if limit is not None and limit.capped is False else None
    draw = power_w / enforced if power_w is not None and enforced else None
    if enforced is not None:  # at the default limit
        if draw is not None and draw < AT_LIMIT_DRAW and low:
            return _judged("throttled", (POWER_CAP,), "clocks.low_under_limit", base)
        if draw is None and low:
            return _judged("not_judged", (), "clocks.draw_unknown", base)
        return _judged("at_power_limit", (), "clocks.power_managed", base)
    if share is None:  # neither the limit nor the clock to judge by
        unknown = max_why.model_dump() if max_why is not None else None
        base["max_unknown"] = unknown if not max_sm_mhz else None
        return _judged("not_judged", (), "clocks.not_judged", base)
    if low:  # a limit nobody read may be a site cap
        return _judged("throttled", (POWER_CAP,), "clocks.low_limit_unknown", base)
    return _judged("at_power_limit", (), "clocks.power_managed", base)


def _judged(
    verdict: ClockVerdict,
    reasons: tuple[str, ...],
    code: str,
    figures: Mapping[str, object],
    **more: object,
) -> ClockJudgement:
    return ClockJudgement(verdict, reasons, Finding(code=code, figures={**figures, **more}))


def averaged_too_short(
    window_s: float, floor_s: float = NVML_AVERAGING_S, *, longest: bool = False
) -> Finding | None:
    """Why NVML's utilisation and power readings cannot describe windows of `window_s` seconds
    in all (`longest`: the longest window, each reading being a trailing average that must lie
    inside one window), or None when they can (worded by contracts/wording/cell_telemetry.py)."""
    if window_s >= floor_s:
        return None
    code = "unavailable.nvml_longest_window" if longest else "unavailable.nvml_windows"
    return Finding(code=code, figures={"window_s": window_s, "floor_s": floor_s})


def counter_error(window_s: float, windows: int, step_s: float = COUNTER_STEP_S) -> float:
    """The energy counter's standard error as a share of `window_s`: each of a window's two
    reads lands up to one step late (uniformly), a spread of step / sqrt(6) per window."""
    if window_s <= 0:
        return math.inf
    return step_s * math.sqrt(max(windows, 1) / 6) / window_s


def counter_too_coarse(
    window_s: float, windows: int, step_s: float = COUNTER_STEP_S
) -> Finding | None:
    """Why the energy counter's deltas over `windows` windows of `window_s` seconds in all are
    not a measurement, or None when they are."""
    error = counter_error(window_s, windows, step_s)
    if error <= COUNTER_MAX_ERROR:
        return None
    figures = {"step_s": step_s, "windows": windows, "window_s": window_s, "error": error}
    return Finding(
        code="unavailable.energy_counter_coarse", figures={**figures, "max": COUNTER_MAX_ERROR}
    )


# worst first: a cell's verdict is its worst GPU's
VERDICT_ORDER: tuple[ClockVerdict, ...] = (
    "throttled",
    "not_judged",
    "at_power_limit",
    "full_clocks",
)


@dataclass(frozen=True)
class RankVerdict:
    """One GPU's verdict as a cell's totals need it: which rank, on what, why it is what it is
    (the basis, or why there is no verdict)."""

    rank: int
    gpu: str
    verdict: ClockVerdict | None
    reasons: tuple[str, ...]
    why: Finding


def cell_verdict(
    ranks: Sequence[RankVerdict],
) -> tuple[ClockVerdict | None, bool | None, list[str], Finding | None]:
    """(the worst GPU's verdict, throttled, the throttled GPUs' reasons, why throttled is null):
    one throttled GPU makes the cell throttled; otherwise throttled is false only when every GPU
    was judged at its power limit or at full clocks."""
    if not ranks:
        return None, None, [], NO_RANK_SAMPLED
    hot = [r for r in ranks if r.verdict == "throttled"]
    if hot:
        return "throttled", True, list(dict.fromkeys(n for r in hot for n in r.reasons)), None
    unjudged = {r.rank: r.why for r in ranks if r.verdict in (None, "not_judged")}
    if any(r.verdict is None for r in ranks):
        return None, None, [], by_rank(unjudged, len(ranks))
    worst = min((r.verdict for r in ranks if r.verdict), key=VERDICT_ORDER.index)
    if unjudged:
        return worst, None, [], by_rank(unjudged, len(ranks))
    return worst, False, [], None


def throttle_warning(ranks: Sequence[RankVerdict]) -> dict[str, Any] | None:
    """The figures of the result's warning when a GPU's verdict is throttled (code
    `warning.throttled`): which ranks, on which GPU; what each verdict rests on is its own
    finding, stored once in the rank's telemetry."""
    hot = [{"rank": r.rank, "gpu": r.gpu} for r in ranks if r.verdict == "throttled"]
    return {"ranks": hot} if hot else None
