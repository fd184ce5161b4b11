"""Words for the findings of a cell's noise: too few repeats to judge, or a figure that varies.
Figures (offline/analysis/reliability.py): `repeats` and their `unit` ('repeat', or 'run' for a
pooled cell), `half` (the throughput's 95 % interval, half its width over the median), `spread`
(the farthest unit from the units' median, relative), `step_cv`, and the `bound` they are held
to; a figure not known is None."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.figures import pct


def _units(figures: Mapping[str, Any]) -> str:
    count, unit = int(figures["repeats"]), str(figures.get("unit") or "repeat")
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _cv(figures: Mapping[str, Any]) -> str:
    cv = figures.get("step_cv")
    return f"step-time CV {pct(cv)}" if cv is not None else "step-time CV not recorded"


def _bound(figures: Mapping[str, Any]) -> str:
    return f"±{float(figures['bound']) * 100:g} %"


def varies(figures: Mapping[str, Any]) -> str:
    """'varies more than ±10 %: 4 repeats up to ±14.7 % from their median, step-time CV 28.1 %'
    (only what passes the bound)."""
    bound = float(figures["bound"])
    parts = []
    spread, cv = figures.get("spread"), figures.get("step_cv")
    if spread is not None and spread > bound:
        parts.append(f"{_units(figures)} up to ±{pct(spread)} from their median")
    if cv is not None and cv > bound:
        parts.append(f"step-time CV {pct(cv)}")
    return f"varies more than {_bound(figures)}: {', '.join(parts)}"


def too_few(figures: Mapping[str, Any]) -> str:
    """'too few repeats to judge: 2 repeats within ±2.2 % of their median give a 95 % interval
    of ±29.5 %, above ±10 %; step-time CV 5.5 %'."""
    spread = figures.get("spread")
    within = f" within ±{pct(spread)} of their median" if spread is not None else ""
    unit = str(figures.get("unit") or "repeat")
    return (
        f"too few {unit}s to judge: {_units(figures)}{within} give a 95 % interval of "
        f"±{pct(figures['half'])}, above {_bound(figures)}; {_cv(figures)}"
    )


def spread_unknown(figures: Mapping[str, Any]) -> str:
    """'one repeat: no run-to-run spread to judge throughput by; step-time CV 3.0 %'."""
    why = "one repeat" if int(figures["repeats"]) < 2 else "no throughput interval"
    return f"{why}: no run-to-run spread to judge throughput by; {_cv(figures)}"


def reliable(figures: Mapping[str, Any]) -> str:
    """'throughput's 95 % interval ±2.0 % of the median over 3 repeats and step-time CV 5.0 %,
    both within ±10 %'."""
    return (
        f"throughput's 95 % interval ±{pct(figures['half'])} of the median over "
        f"{_units(figures)} and {_cv(figures)}, both within {_bound(figures)}"
    )


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "noise.reliable": reliable,
    "noise.varies": varies,
    "noise.too_few_repeats": too_few,
    "noise.spread_unknown": spread_unknown,
}
