"""Words for a cell's two kinds of interval: the rate's (samples/s, and MFU, its same share),
where a rerun lands; the step times', how closely this run's steps pin each percentile."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def _two_scopes(figures: Mapping[str, Any]) -> str:
    """figures (each optional): repeats, steps: what each interval is taken over."""
    repeats = f"{figures['repeats']} repeats" if figures.get("repeats") else "its repeats"
    steps = f"{figures['steps']} steps" if figures.get("steps") else "steps"
    return (
        f"samples/s and MFU (the same share of it): where a rerun of the cell lands ({repeats} "
        f"and the drift between runs); step times: how closely this run's {steps} pin each "
        "percentile, blind to what moves a rerun, so theirs is the narrower interval"
    )


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {"intervals.two_scopes": _two_scopes}
