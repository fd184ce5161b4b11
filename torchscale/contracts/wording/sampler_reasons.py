"""Why a rank's telemetry sampler stopped sampling (rank/telemetry/sampler.py): its reasons as
codes with their figures. The rank's record still stores their words
(`RankTelemetry.unavailable`), made here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "unavailable.sampler_hung": lambda f: (
        f"the sampler thread did not stop within {f['stop_s']:g} s; later windows not sampled"
    ),
}
