"""Words for a cell's two kinds of interval: the rate's (samples/s, and MFU, its same share),
where a rerun lands; the step times', how closely this run's steps pin each percentile."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases


def _two_scopes(figures: Mapping[str, Any]) -> str:
    """figures (each optional): repeats, steps: what each interval is taken over; mfu: an MFU
    is shown, whose interval is the rate's."""
    repeats = f"{figures['repeats']} repeats" if figures.get("repeats") else "its repeats"
    steps = f"{figures['steps']} steps" if figures.get("steps") else "steps"
    rate = "samples/s and MFU (the same share of it)" if figures.get("mfu") else "samples/s"
    return (
        f"{rate}: where a rerun of the cell lands ({repeats} and the drift between runs); step "
        f"times: how closely this run's {steps} pin each percentile, blind to what moves a "
        "rerun, so theirs is the narrower interval"
    )


PHRASES: Phrases = {"intervals.two_scopes": _two_scopes}
