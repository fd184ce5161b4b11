"""Words for the findings of GPU clocks over the measured windows (contracts/gpu_clocks.py
judges; each code's figures are named there, in `judge_clocks`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.gpu_clocks import (
    EDGES_INCLUDED,
    IN_WINDOW,
    MIN_FLAGGED_SAMPLES,
    POWER_CAP,
)
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.power_limit_reasons import limit_why
from torchscale.contracts.wording.unavailable import reason_of
from torchscale.contracts.wording.unavailable import why as unavailable_why

WHERE = {IN_WINDOW: "in-window samples", EDGES_INCLUDED: "samples, window edges included"}


def _of(f: Mapping[str, Any]) -> str:
    return f"of {f['samples']} {WHERE.get(f.get('where', ''), 'samples')}"


def _transients(f: Mapping[str, Any]) -> str:
    once = f.get("transients") or []
    return f"; {', '.join(once)} in 1 sample only (a transient)" if once else ""


def _limit(f: Mapping[str, Any]) -> str:
    enforced, default = f.get("enforced_w"), f.get("default_w")
    if enforced is None or default is None:
        return f"power limit unknown ({limit_why(f.get('limit_unknown'))})"
    if enforced < default:
        return f"power limit {enforced:g} W, below its {default:g} W default"
    return f"power limit {enforced:g} W, its default"


def _clock(f: Mapping[str, Any]) -> str:
    clock, top = f.get("clock_mhz"), f.get("max_mhz")
    if clock is None or not top:
        return ""
    lowest = f.get("lowest_mhz")
    held = f"SM clock median {clock:g} MHz in them" + (
        f" (lowest {lowest:g})" if lowest is not None else ""
    )
    if lowest is None:  # an old result: the mean of its samples
        held = f"SM clock mean {clock:.0f} MHz"
    sku = " (the SKU table's)" if f.get("max_from_sku") else ""
    return f", {held}, {clock / top * 100:.0f} % of its {top:g} MHz max{sku}"


def _draw(f: Mapping[str, Any]) -> str:
    power, enforced = f.get("power_w"), f.get("enforced_w")
    if power is None:
        return "; power draw not read"
    if not enforced:
        return f"; drawing {power:.0f} W"
    return f"; drawing {power:.0f} W, {power / enforced * 100:.0f} % of its limit"


def _seen(f: Mapping[str, Any]) -> str:
    return f"{POWER_CAP} in {f['capped']} {_of(f)}"


def hardware_slowdown(f: Mapping[str, Any]) -> str:
    counts = ", ".join(f"{reason} in {n}" for reason, n in f["counts"].items())
    return f"{counts} {_of(f)}"


def full(f: Mapping[str, Any]) -> str:
    capped = f.get("capped", 0)
    many = f"{MIN_FLAGGED_SAMPLES} or more" if capped or f.get("transients") else "any"
    once = f"; {POWER_CAP} in 1 sample only" if capped else ""
    return f"no slowdown reason in {many} {_of(f)}{once}{_transients(f)}"


def site_cap(f: Mapping[str, Any]) -> str:
    return f"{_seen(f)} under a site cap: {_limit(f)}"


def power_managed(f: Mapping[str, Any]) -> str:
    return (
        f"at its power limit (normal under dense load): {_seen(f)}{_clock(f)}; {_limit(f)}"
        f"{_draw(f) if f.get('enforced_w') else ''}{_transients(f)}"
    )


def low_under_limit(f: Mapping[str, Any]) -> str:
    return (
        f"clocks low while the GPU draws well under its limit: {_seen(f)}{_clock(f)}; "
        f"{_limit(f)}{_draw(f)}{_transients(f)}"
    )


def draw_unknown(f: Mapping[str, Any]) -> str:
    return (
        f"{_seen(f)}{_clock(f)}; {_limit(f)}, power draw not read: whether the limit or "
        f"something else held the clocks is not known{_transients(f)}"
    )


def low_limit_unknown(f: Mapping[str, Any]) -> str:
    return f"{_seen(f)}{_clock(f)}; {_limit(f)}: a site cap cannot be ruled out{_transients(f)}"


def not_judged(f: Mapping[str, Any]) -> str:
    unknown = f.get("max_unknown")
    why = unavailable_why(reason_of(unknown)) if unknown else "no SM clock read in those samples"
    return (
        f"{_seen(f)}: whether it cost clocks is not known: {_limit(f)}; maximum SM clock "
        f"unknown ({why}){_transients(f)}"
    )


PHRASES: Phrases = {
    "clocks.hardware_slowdown": hardware_slowdown,
    "clocks.full": full,
    "clocks.site_cap": site_cap,
    "clocks.power_managed": power_managed,
    "clocks.low_under_limit": low_under_limit,
    "clocks.draw_unknown": draw_unknown,
    "clocks.low_limit_unknown": low_limit_unknown,
    "clocks.not_judged": not_judged,
}
