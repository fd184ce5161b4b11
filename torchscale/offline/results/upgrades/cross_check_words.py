"""Version 19 -> 20 (analysis 9 -> 10), what a diagnosis' cross-checks found: versions 16-19
stored it as a sentence (`CrossCheck.detail`); 20 stores a code and its figures
(contracts/wording/cross_checks.py). A sentence becomes its finding only where today's words
for the figures read off it are the stored sentence exactly; anything else (an older version's
words, the step splits and verdicts the checks quote) stays as stored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.cross_checks import RECKONED

Figures = dict[str, Any]
BY = {words: key for key, words in RECKONED.items()}
MS = r"(\S+) ms"  # a signed duration ('+12.3 ms'), read back in seconds
LAST = r"rank (\d+) arrives last at (\d+) of (\d+) matched collectives"
OTHER = r"rank (\d+) arrives last at (\d+) % of the matched collectives"
CHANCE = r"\(chance: (\d+) %, p = (\S+)\)"
WAITED = (
    r"rank (\d+) (?:held off the CPU " + MS + r" per step|not held off the CPU more than the "
    r"others) \((.+?)\)"
)
HOOK = r"rank (\d+)'s hook holds its launches " + MS + " per step longer"
SHARES = r"\((\S+) % to (\S+) %\)"


def _s(text: str | None) -> float:
    return float(text) / 1e3 if text is not None else 0.0


def _last(m: re.Match[str]) -> Figures:
    return {"rank": int(m[1]), "last": int(m[2]), "matched": int(m[3])}


def _waited(m: re.Match[str]) -> Figures:
    return {"rank": int(m[1]), "held_s": _s(m[2]), "by": BY[m[3]]}


UNITS = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _gap(text: str) -> list[float | None]:
    """'+13.4 ms ±4.3 ms' or '+14 µs [-14, 42]' as [mean, low, high] seconds."""
    figure = re.fullmatch(r"(\S+) (µs|ms|s)( ±(\S+) \2| \[(\S+), (\S+)\])?", text)
    if figure is None:
        raise ValueError(text)
    unit = UNITS[figure[2]]
    value = float(figure[1]) * unit
    if figure[4] is not None:
        return [value, value - float(figure[4]) * unit, value + float(figure[4]) * unit]
    if figure[5] is not None:
        return [value, float(figure[5]) * unit, float(figure[6]) * unit]
    return [value, None, None]


def _p(text: str) -> float | None:
    return None if text == "no p-value" else float(text.removeprefix("p = "))


def _pct(text: str) -> float:
    return float(text) / 100


def _shares(m: re.Match[str]) -> Figures:
    """'(1.0 % to 3.0 %)' once (the model's) or twice (the check's, then the model's)."""
    names = ("low", "high", "model_low", "model_high")[-m.re.groups :]
    return {name: _pct(m[i + 1]) for i, name in enumerate(names)}


def _rank(m: re.Match[str]) -> Figures:
    return {"rank": int(m[1])}


def _hold(m: re.Match[str]) -> Figures:
    return {"rank": int(m[1]), "held_s": _s(m[2])}


def _paired(m: re.Match[str]) -> Figures:
    return {"rank": int(m[1]), "p": _p(m[2])}


def _chance(m: re.Match[str]) -> Figures:
    return {**_last(m), "expected": _pct(m[4]), "p": float(m[5])}


Table = tuple[tuple[str, str, Callable[[re.Match[str]], Figures]], ...]
US = r"(\S+) µs"
# why arrival order named nobody (the trace analysis' reason the checks quote)
REASONS: Table = (
    ("arrival.none_matched", "no matched collectives: no straggler analysis", lambda m: {}),
    ("arrival.none_clear", r"no collective had a clear last arriver \(.*\)", lambda m: {}),
    (
        "arrival.none_stands_out",
        r"no rank stands out: .* rank (\d+), is last at (\d+) % .* \(threshold (\d+) %\)",
        lambda m: {"rank": int(m[1]), "share": _pct(m[2]), "threshold": _pct(m[3])},
    ),
    (
        "arrival.tie",
        r"ranks (\d+) and (\d+) are last equally often",
        lambda m: {"rank": int(m[1]), "other": int(m[2])},
    ),
    (
        "arrival.chance",
        r"rank (\d+) is last at (\d+) of (\d+) collectives: .* \(p = (\S+)\)",
        lambda m: {**_last(m), "p": float(m[4])},
    ),
    (
        "arrival.noise",
        r"rank (\d+) is last most often but only " + US + r" late .*under " + US + ": noise.",
        lambda m: {"rank": int(m[1]), "late_us": float(m[2]), "min_us": float(m[3])},
    ),
    (
        "arrival.last",
        r"rank (\d+) arrives last at (\d+) % .* \(chance: (\d+) %\), " + US + " late on average",
        lambda m: {
            "rank": int(m[1]),
            "share": _pct(m[2]),
            "expected": _pct(m[3]),
            "late_us": float(m[4]),
        },
    ),
)


def _why(text: str) -> Figures:
    """The reason a check quotes, as its finding; a ValueError where none reads as it."""
    found = _recognised(text, REASONS, ())
    if found is None:
        raise ValueError(text)
    return {"reason": found}


# (code, the words as versions 16-19 wrote them, the figures read off them)
SENTENCES: Table = (
    ("cross_check.paired_slower", r"rank (\d+) is slower at the median step \((.+)\)", _paired),
    (
        "cross_check.paired_not_slower",
        r"rank (\d+) is not slower at the median step \((.+)\): .*",
        _paired,
    ),
    (
        "cross_check.waits_reversed",
        r"at the (.+) rank (\d+) waits for the others more than they wait for it",
        lambda m: {"rank": int(m[2]), "source": m[1]},
    ),
    (
        "cross_check.waited_for",
        r"the other ranks wait for peers this share .* rank (\d+) does: .*",
        _rank,
    ),
    (
        "cross_check.not_waited_for",
        r"no measurable extra wait of the others for rank (\d+): .*",
        _rank,
    ),
    (
        "cross_check.waits_small",
        r"the other ranks' extra wait for peers over rank (\d+)'s .*",
        _rank,
    ),
    (
        "cross_check.waits_outside",
        r"the other ranks wait for peers longer than rank (\d+), above the minimum effect "
        r"\((\S+) %\), .* the work the (.+) measure",
        lambda m: {"rank": int(m[1]), "min_share": _pct(m[2]), "source": m[3]},
    ),
    ("cross_check.arrival_confirms", LAST + " " + CHANCE, _chance),
    ("cross_check.arrival_alone_names", LAST + " " + CHANCE + ": arrival order alone .*", _chance),
    (
        "cross_check.arrival_other",
        LAST + "; " + OTHER,
        lambda m: {**_last(m), "other": int(m[4]), "other_share": _pct(m[5])},
    ),
    ("cross_check.arrival_no_standout", LAST + "; (.*)", lambda m: {**_last(m), **_why(m[4])}),
    (
        "cross_check.arrival_chance",
        r"no rank arrives last more often than chance \((.*)\)",
        lambda m: _why(m[1]),
    ),
    (
        "cross_check.arrival_names_other",
        OTHER + ": arrival order alone would name it; .*",
        lambda m: {"other": int(m[1]), "other_share": _pct(m[2])},
    ),
    ("cross_check.no_sync_agrees", r"agrees with exposed transfer .* " + SHARES, _shares),
    (
        "cross_check.no_sync_costs_more",
        r"communication costs more " + SHARES + ".* " + SHARES + ".*",
        _shares,
    ),
    (
        "cross_check.no_sync_saves_less",
        r"removing communication saves less " + SHARES + ".* " + SHARES + ".*",
        _shares,
    ),
    ("cross_check.cpu_wait_neutral", WAITED + r" \(not a straggler either way\)", _waited),
    (
        "cross_check.cpu_held_other",
        r"rank (\d+) held off the CPU " + MS + " per step: the host .*",
        _hold,
    ),
    (
        "cross_check.cpu_wait_host",
        WAITED + r"; its gap less that: (.+) per step: the host took its time, .*",
        lambda m: {**_waited(m), "left": _gap(m[4])},
    ),
    (
        "cross_check.cpu_wait_slow",
        WAITED + r"; its gap less that: (.+) per step: (its input|the work itself) is slow",
        lambda m: {**_waited(m), "left": _gap(m[4]), "input": m[5] == "its input"},
    ),
    (
        "cross_check.held_none",
        r"no rank's hook .* \(the most: rank (\d+), " + MS + r" per step\)",
        _hold,
    ),
    (
        "cross_check.held_waits",
        HOOK + ", but its own work is " + MS + " per step below .*",
        lambda m: {**_hold(m), "work_s": _s(m[3])},
    ),
    (
        "cross_check.held_behind",
        HOOK + r", not beyond what rank (\d+) is behind: .*",
        lambda m: {**_hold(m), "named": int(m[3])},
    ),
    ("cross_check.held_host", HOOK + ", no more than the host .*", _hold),
    (
        "cross_check.held_compute",
        HOOK + r", less than its extra work \(" + MS + r"\): compute",
        lambda m: {**_hold(m), "work_s": _s(m[3])},
    ),
    ("cross_check.held_late", HOOK + " than the others': they wait for its launch", _hold),
)
# the codes without figures
FIXED = (
    "cross_check.arrival_undecided",
    "cross_check.no_sync_few_steps",
    "cross_check.cpu_wait_unmeasured",
)


def _recognised(text: str, table: Table, fixed: tuple[str, ...]) -> Figures | None:
    """The first finding of `table` (or `fixed`, without figures) whose words are `text`."""
    found = [Finding(code=code) for code in fixed]
    for code, pattern, figures_of in table:
        if (match := re.fullmatch(pattern, text)) is None:
            continue
        try:
            found.append(Finding(code=code, figures=figures_of(match)))
        except (ValueError, KeyError):
            continue  # a figure these words do not spell as today's do ('?', another rule)
    return next((f.model_dump() for f in found if wording.say(f) == text), None)


def detail_finding(text: str) -> Figures | None:
    """The finding a stored detail's words say (today's words for it are those words), or
    None."""
    return _recognised(text, SENTENCES, FIXED)


def coded_cross_checks(diagnosis: Any) -> Any:
    """A stored diagnosis (a dict) with a finding for each cross-check detail recognised."""
    if not isinstance(diagnosis, dict) or not isinstance(diagnosis.get("cross_checks"), list):
        return diagnosis
    checks = [
        {**c, "detail": detail_finding(c["detail"]) or c["detail"]}
        if isinstance(c, dict) and isinstance(c.get("detail"), str)
        else c
        for c in diagnosis["cross_checks"]
    ]
    return {**diagnosis, "cross_checks": checks}
