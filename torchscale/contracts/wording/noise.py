"""Words for the findings of a cell's noise: too few repeats to judge, or a figure that varies.
Figures (offline/analysis/reliability.py): `repeats` and their `unit` ('repeat', or 'run' for a
pooled cell), `half` (the throughput's 95 % interval, half its width over the median), `spread`
(the farthest unit from the units' median, relative), `step_cv`, and the `bound` they are held
to; a figure not known is None."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import pct, pct_set


def _units(figures: Mapping[str, Any]) -> str:
    count, unit = int(figures["repeats"]), str(figures.get("unit") or "repeat")
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _cv_of(cv: float, plain: bool) -> str:
    """'step-time CV 31.5 %', or on the first screen 'step times vary by 31.5 %' (the glossary
    names the CV behind it)."""
    return f"step times vary by {pct(cv)}" if plain else f"step-time CV {pct(cv)}"


def _cv(figures: Mapping[str, Any], plain: bool = False) -> str:
    cv = figures.get("step_cv")
    return _cv_of(cv, plain) if cv is not None else "step-time CV not recorded"


def _bound(figures: Mapping[str, Any]) -> str:
    return "±" + pct_set(float(figures["bound"]))


# what a "spread" is wherever one is shown (offline/analysis/stats.py, `spread_from_median`)
SPREAD = "the farthest repeat's distance from the repeats' median, over that median"

# the three conditions a reliable cell meets, keyed by the figure the rule holds to the bound,
# each as met and as missed: the glossary names them from here, so it says the rule's own
CONDITIONS: dict[str, tuple[str, str]] = {
    "half": (
        "throughput's 95 % interval within {bound} of the median",
        "a 95 % interval wider than {bound}",
    ),
    "spread": (
        "every repeat within {bound} of the repeats' median",
        "a repeat more than {bound} from the repeats' median",
    ),
    "step_cv": ("step-time CV at most {cv}", "step-time CV above {cv}"),
}


def condition(key: str, bound: float, *, met: bool = True) -> str:
    """One of `CONDITIONS` at `bound`: 'every repeat within ±10 % of the repeats' median'."""
    words = CONDITIONS[key][0 if met else 1]
    return words.format(bound="±" + pct_set(bound), cv=pct_set(bound))


def glossary(bound: float) -> dict[str, str]:
    """The glossary's words for the levels, each naming exactly the conditions the rule
    (offline/analysis/reliability.py) applies at `bound`."""
    interval, repeats, cv = (condition(key, bound) for key in CONDITIONS)
    wide, off, steps = (condition(key, bound, met=False) for key in CONDITIONS)
    return {
        "reliable": f"a cell with its {interval}, {repeats} and {cv}",
        "noisy": f"a cell with {off} or {steps} (its step times vary inside its windows), "
        "whatever its interval",
        "too few repeats": f"a cell with {repeats} and {cv}, but {wide}: its repeats are too "
        "few (2 repeats have 1 degree of freedom), and more repeats settle it",
    }


def varies(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'varies more than ±10 %: 4 repeats up to ±14.7 % from their median, step-time CV 28.1 %'
    (only what passes the bound)."""
    bound = float(figures["bound"])
    parts = []
    spread, cv = figures.get("spread"), figures.get("step_cv")
    if spread is not None and spread > bound:
        parts.append(f"{_units(figures)} up to ±{pct(spread)} from their median")
    if cv is not None and cv > bound:
        parts.append(_cv_of(cv, plain))
    return f"varies more than {_bound(figures)}: {', '.join(parts)}"


def too_few(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'too few repeats to judge: 2 repeats within ±2.2 % of their median give a 95 % interval
    of ±29.5 %, above ±10 %; step-time CV 5.5 %'."""
    spread = figures.get("spread")
    within = f" within ±{pct(spread)} of their median" if spread is not None else ""
    unit = str(figures.get("unit") or "repeat")
    return (
        f"too few {unit}s to judge: {_units(figures)}{within} give a 95 % interval of "
        f"±{pct(figures['half'])}, above {_bound(figures)}; {_cv(figures, plain)}"
    )


def spread_unknown(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'one repeat: no run-to-run spread to judge throughput by; step-time CV 3.0 %'."""
    why = "one repeat" if int(figures["repeats"]) < 2 else "no throughput interval"
    return f"{why}: no run-to-run spread to judge throughput by; {_cv(figures, plain)}"


def reliable(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'throughput's 95 % interval ±2.0 % of the median over 3 repeats, repeats up to ±1.0 %
    from their median and step-time CV 5.0 %, all within ±10 %' (the glossary's three)."""
    spread, unit = figures.get("spread"), str(figures.get("unit") or "repeat")
    repeats = f"{unit}s up to ±{pct(spread)}" if spread is not None else f"{unit}s not recorded"
    return (
        f"throughput's 95 % interval ±{pct(figures['half'])} of the median over "
        f"{_units(figures)}, {repeats} from their median and {_cv(figures, plain)}, all within "
        f"{_bound(figures)}"
    )


# each phrase words its figures technically, or with `plain=True` as the first screen says them
_WORDED: dict[str, Callable[..., str]] = {
    "noise.reliable": reliable,
    "noise.varies": varies,
    "noise.too_few_repeats": too_few,
    "noise.spread_unknown": spread_unknown,
}
PHRASES: Phrases = {**_WORDED}


def plain(finding: Finding) -> str:
    """A cell's reliability in the first screen's words: as `PHRASES` say it, the step-time CV
    said as how much the step times vary (the glossary names the CV)."""
    phrase = _WORDED.get(finding.code)
    if phrase is None:  # a busy machine's words (run_purpose.py), as every surface says them
        from torchscale.contracts import wording

        return wording.say(finding)
    return phrase(finding.figures, plain=True)
