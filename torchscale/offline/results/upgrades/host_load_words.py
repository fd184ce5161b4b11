"""Version 19 -> 20, a host's own reason for a null load figure (`telemetry.hosts[]
.unavailable`): versions 16-19 stored the busy verdict's windows-too-short reason as a
sentence; 20 stores its code and figures (contracts/wording/host_load_reasons.py). The
sentence becomes its finding only where today's words for it are the stored words exactly;
anything else (a rank's reason copied in) stays as stored.
"""

from __future__ import annotations

import re
from typing import Any

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding

TOO_SHORT = re.compile(
    r"not measurable: the measured windows last (\S+) ms, where one (\S+) ms tick of the "
    r"kernel's CPU accounting reads as \S+ core, more than lies between the other processes' "
    r"(\S+) and the busy threshold (\S+); run more steps to measure it"
)


def coded_host_reason(stored: Any) -> Any:
    """A stored reason as its finding (a dump) where it is exactly the sentence 16-19 wrote."""
    match = TOO_SHORT.fullmatch(stored) if isinstance(stored, str) else None
    if match is None:
        return stored
    window_ms, tick_ms, other, threshold = (float(group) for group in match.groups())
    figures = {
        "window_s": window_ms / 1e3,
        "tick_s": tick_ms / 1e3,
        "other_cores": other,
        "threshold": threshold,
    }
    found = Finding(code="unavailable.busy_windows_too_short", figures=figures)
    return found.model_dump() if wording.say(found) == stored else stored


def coded_host_loads(data: dict[str, Any]) -> dict[str, Any]:
    """The result with each host's own stored reasons as codes, where recognised."""
    telemetry = data.get("telemetry")
    if not isinstance(telemetry, dict) or not isinstance(telemetry.get("hosts"), list):
        return data
    hosts = [
        {**host, "unavailable": {k: coded_host_reason(v) for k, v in reasons.items()}}
        if isinstance(host, dict) and isinstance(reasons := host.get("unavailable"), dict)
        else host
        for host in telemetry["hosts"]
    ]
    return {**data, "telemetry": {**telemetry, "hosts": hosts}}
