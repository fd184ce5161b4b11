"""Version 19 -> 20, why a GPU's power limit is unknown (`telemetry.ranks[].power_limit`):
versions 16-19 stored a sentence; 20 stores its code and figures
(contracts/wording/power_limit_reasons.py). A sentence becomes its finding only where today's
words for that finding are the stored sentence exactly; anything else stays as stored words.
"""

from __future__ import annotations

import re
from typing import Any

from torchscale.offline.results.upgrades.cell_reasons import Table, _recognised


def error_of(m: re.Match[str]) -> dict[str, Any]:
    """The figures of a sentence that quotes an error whole (telemetry_words too)."""
    return {"error": m[1]}


def _uuid(m: re.Match[str]) -> dict[str, Any]:
    return {"uuid": m[1]}


_QUERY = r"(nvmlDevice\w+): ([^;]+)"
# (code, a sentence as cell schemas 16-19 stored it, its figures)
_STORED: Table = (
    (
        "power_limit.no_torch_uuid",
        re.compile(r"this torch reports no UUID for the GPU"),
        lambda m: {},
    ),
    ("power_limit.nvml_unavailable", re.compile(r"NVML unavailable: (.+)"), error_of),
    ("power_limit.nvml_init_failed", re.compile(r"nvmlInit failed: (.+)"), error_of),
    ("power_limit.no_gpu_with_uuid", re.compile(r"NVML has no GPU with UUID (\S+)"), _uuid),
    (
        "power_limit.device_undescribed",
        re.compile(r"torch cannot describe (\S+): (.*)"),
        lambda m: {"device": m[1], "error": m[2]},
    ),
    (
        "power_limit.no_pynvml",
        re.compile(r"pynvml is not importable \((.*)\); pip install nvidia-ml-py"),
        error_of,
    ),
    (
        "power_limit.uuid_not_found",
        re.compile(r"no NVML device with torch's UUID \((.*)\)"),
        lambda m: {"tried": m[1].split("; ")},
    ),
    (
        "power_limit.queries_failed",
        re.compile(rf"{_QUERY}(?:; {_QUERY})?"),
        lambda m: {"errors": {m[i]: m[i + 1] for i in (1, 3) if m[i] is not None}},
    ),
)


def coded_limit_reason(stored: Any) -> Any:
    """A stored reason as its finding (a dump) where its words are exactly a sentence of
    schemas 16-19; anything else (older words, a finding) as it is."""
    if not isinstance(stored, str):
        return stored
    return _recognised(stored, _STORED) or stored


def coded_power_limits(data: dict[str, Any]) -> dict[str, Any]:
    """The result with each rank's stored power-limit reason as its code, where recognised."""
    telemetry = data.get("telemetry")
    if not isinstance(telemetry, dict) or not isinstance(telemetry.get("ranks"), list):
        return data
    ranks = [
        {
            **rank,
            "power_limit": {**limit, "unavailable": coded_limit_reason(limit.get("unavailable"))},
        }
        if isinstance(rank, dict) and isinstance(limit := rank.get("power_limit"), dict)
        else rank
        for rank in telemetry["ranks"]
    ]
    return {**data, "telemetry": {**telemetry, "ranks": ranks}}
