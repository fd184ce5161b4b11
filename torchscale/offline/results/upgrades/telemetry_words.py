"""Version 19 -> 20, why a telemetry figure is null (`telemetry.ranks[].unavailable`, their
`load.unavailable`, `telemetry.hosts[].unavailable`): versions 16-19 stored sentences; 20
stores codes with their figures (contracts/wording/sampler_reasons.py, nvml_windows.py,
power_limit_reasons.py). A sentence becomes its finding only where today's words for that
finding are the stored sentence exactly; anything else (a rank's reasons joined, an error's
bare text, an AMD GPU's reasons) stays as stored words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.sampler_reasons import SAID
from torchscale.offline.results.upgrades.power_limit_words import coded_limit_reason, error_of

_BY_WORDS = {words: code for code, words in SAID.items()}
_QUERY = re.compile(r"(nvmlDevice\w+): (.+)")


def _broken(m: re.Match[str]) -> dict[str, Any]:
    return {"failure": coded_reason(m[1])}


def _longest(m: re.Match[str]) -> dict[str, Any]:
    return {"window_s": float(m[1]), "floor_s": float(m[2])}


def _coarse(m: re.Match[str]) -> dict[str, Any]:
    step, windows, window_s, error, most = m.groups()
    figures = {"step_s": float(step), "windows": int(windows), "window_s": float(window_s)}
    return figures | {"error": int(error) / 100, "max": int(most) / 100}


_AVERAGES = r"NVML averages over ~1 s \(power\) and 1/6-1 s \(utilisation\)"
# (code, a sentence as cell schemas 16-19 stored it, its figures)
_STORED: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], dict[str, Any]]], ...] = (
    ("telemetry.psutil_unusable", re.compile(r"psutil unusable: (.+)"), error_of),
    ("telemetry.psutil_failed", re.compile(r"psutil: (.+)"), error_of),
    ("telemetry.sampler_failed", re.compile(r"sampler thread failed: (.+)"), error_of),
    (
        "unavailable.sampler_hung",
        re.compile(
            r"the sampler thread did not stop within (\S+) s; later windows not "
            "sampled"
        ),
        lambda m: {"stop_s": float(m[1])},
    ),
    ("telemetry.window_broken", re.compile(r"a window was not fully sampled: (.+)"), _broken),
    (
        "unavailable.nvml_longest_window",
        re.compile(
            r"not measurable: the longest window is (\S+) s, where " + _AVERAGES + r"; a "
            r"reading counts only (\S+) s or more into a window"
        ),
        _longest,
    ),
    (
        "unavailable.nvml_windows",
        re.compile(
            r"not measurable: windows of (\S+) s in all, where " + _AVERAGES + r"; at least "
            r"(\S+) s of windows is needed"
        ),
        _longest,
    ),
    (
        "unavailable.energy_counter_coarse",
        re.compile(
            r"not measurable: the energy counter moves in steps of up to ~(\S+) s, "
            r"so over (\d+) window\(s\) of (\S+) s in all it is uncertain by ~(\d+) % \(kept "
            r"at (\d+) % or less\)"
        ),
        _coarse,
    ),
)


def _queries(stored: str) -> Finding | None:
    """NVML's failed queries, `query: error` joined by '; '."""
    parts = [_QUERY.fullmatch(part) for part in stored.split("; ")]
    if not all(parts):
        return None
    errors = {m[1]: m[2] for m in parts if m is not None}
    return Finding(code="telemetry.queries_failed", figures={"errors": errors})


def _found(stored: str) -> Finding | None:
    if stored in _BY_WORDS:
        return Finding(code=_BY_WORDS[stored])
    for code, sentence, figures_of in _STORED:
        match = sentence.fullmatch(stored)
        if match is not None:
            return Finding(code=code, figures=figures_of(match))
    limit = coded_limit_reason(stored)  # an NVML source that failed to open
    if isinstance(limit, dict) and limit["code"] != "power_limit.queries_failed":
        return Finding.model_validate(limit)
    return _queries(stored)


def coded_reason(stored: Any) -> Any:
    """A stored reason as its finding (a dump) where its words are exactly a sentence of
    schemas 16-19; anything else (other words, a finding) as it is."""
    found = _found(stored) if isinstance(stored, str) else None
    if found is not None and wording.say(found) == stored:
        return found.model_dump()
    return stored


def _coded_map(holder: Any) -> Any:
    reasons = holder.get("unavailable") if isinstance(holder, dict) else None
    if not isinstance(reasons, dict):
        return holder
    return {**holder, "unavailable": {k: coded_reason(v) for k, v in reasons.items()}}


def _coded_rank(rank: Any) -> Any:
    if isinstance(rank, dict) and isinstance(rank.get("load"), dict):
        rank = {**rank, "load": _coded_map(rank["load"])}
    return _coded_map(rank)


def coded_telemetry(data: dict[str, Any]) -> dict[str, Any]:
    """The result with each rank's, its load's and each host's stored reasons as codes, where
    recognised."""
    telemetry = data.get("telemetry")
    if not isinstance(telemetry, dict):
        return data
    update: dict[str, Any] = {}
    if isinstance(telemetry.get("ranks"), list):
        update["ranks"] = [_coded_rank(rank) for rank in telemetry["ranks"]]
    if isinstance(telemetry.get("hosts"), list):
        update["hosts"] = [_coded_map(host) for host in telemetry["hosts"]]
    return {**data, "telemetry": {**telemetry, **update}}
