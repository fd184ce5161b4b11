"""Words for a diagnosis' cross-checks (`Diagnosis.cross_checks[].detail`:
`cross_check.*`) and why arrival order names a rank or none (`arrival.*`, the trace
analysis' reason, quoted by the checks)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.wording import Phrases, render, spell
from torchscale.contracts.wording.figures import change_text, gap_text, share_text

F = Mapping[str, Any]

# how the host's hold of a rank off the CPU was reckoned (`by`)
RECKONED = {
    "rate": "beyond its time on a CPU at the others' wait rate",
    "median": "beyond the median of the others' wait",
}

# each cross-check's name (`CrossCheck.check`); how each is measured: docs/profiling.md,
# "Cross-checks", and docs/methodology.md
CHECKS: dict[str, str] = {
    "paired": "paired per-step test",
    "cpu_wait": "CPU wait (host)",
    "held_launches": "held launches (DDP comm hook)",
    "others_wait": "others' wait for it",
    "arrival_order": "arrival order (last arriver)",
    "no_sync_comm": "communication cost (no_sync windows)",
    "no_sync_windows": "the no_sync windows",
    "inflation": "traced steps against the measured windows",
    "timers_split": "phase timers: step model",
    "timers_straggler": "phase timers: straggler",
    "traces_straggler": "traces: straggler",
}


def check_label(check: str) -> str:
    """A cross-check's name: 'arrival order (last arriver)'."""
    return CHECKS[check]


def detail(stored: Finding) -> str:
    """A cross-check's detail in words."""
    from torchscale.contracts.wording import say

    return say(stored)


def quoted(found: Any) -> str:
    """A finding nested in figures (a dump), in words."""
    from torchscale.contracts.wording import say

    return say(Finding.model_validate(found))


def _share(stored: Mapping[str, Any]) -> str:
    return share_text(Estimate(**stored))


def _split(parts: Sequence[Mapping[str, Any]]) -> str:
    """'compute 53.1 % ±2.0 %, wait for peers 1.2 %, ...' (a step split's parts)."""
    return ", ".join(f"{p['name'].replace('_', ' ')} {_share(p['share'])}" for p in parts)


def _against(parts: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{_split([p])} against {_share(p['traces'])}" for p in parts)


def _timers_split(f: F) -> str:
    text = f"measured windows: step {spell.ms_sig(f['step_s'])}: {_split(f['parts'])}"
    if f["differ"]:
        text += "; the waits differ: " + _against(f["differ"])
    elif f["judged"]:
        text += "; waiting for peers and exposed transfer within the traces' intervals"
    if f["other"]:
        text += (
            "; also outside the traces' intervals, as the methods differ (the timers count "
            "whole phases, Python included, the traces only ops; the traced steps run under "
            "the profiler): " + _against(f["other"])
        )
    return text


def _named_as(side: F) -> str:
    if side["rank"] is None:
        return "none"
    return f"rank {side['rank']}" + (f", {side['kind']}" if side["kind"] else "")


def _verdicts(f: F) -> str:
    timers, traces = f["timers"], f["traces"]
    return (
        f"the timers ({timers['steps']} measured steps) name {_named_as(timers)}, the traces "
        f"({traces['steps']} traced steps) {_named_as(traces)}"
    )


def _rule(f: F, name: str, otherwise: str) -> str:
    """A kind's rule quoted from the figures (a finding's dump), else what it was read from."""
    return quoted(f[name]) if f.get(name) else otherwise


def _agree(f: F) -> str:
    if f["timers"]["rank"] is None:
        return "neither names a rank"
    return f"both name {_named_as(f['timers'])}"


def _silent(f: F) -> str:
    why = quoted(f["why"]) if f["why"] is not None else "not named"
    return f"{_verdicts(f)}: {why}" + (": trace more steps (--profile-steps)" if f["hint"] else "")


def _inflation(f: F) -> str:
    """'traced steps 34.8 ms against 19.7 ms in the measured windows, +76 % ±20 % (Welch's t)'."""
    share, low, high = f["traced_s"] / f["untraced_s"] - 1.0, f["low"], f["high"]
    bounded = low is not None and high is not None
    shown = (
        change_text(share, low, high)
        if bounded
        else f"{change_text(share, None, None)} (no interval)"
    )
    return (
        f"traced steps {spell.ms_sig(f['traced_s'])} against "
        f"{spell.ms_sig(f['untraced_s'])} in the measured windows, {shown} (Welch's t)"
    )


def _withheld(f: F) -> str:
    """The findings withheld as the profiler's overhead, within the time it added."""
    if not f["withheld"]:
        return ""
    added = spell.ms_sig(f["traced_s"] - f["untraced_s"])
    if f["low"] is not None and f["high"] is not None:
        low, high = (f["untraced_s"] * x * 1e3 for x in (f["low"], f["high"]))
        added += f" [{spell.sig(low)}, {spell.sig(high)}]"
    items = [
        f"{quoted(w['problem'])}, {spell.ms_sig(w['cost_s'])} a step "
        f"({spell.percent(w['cost_pct'])} of the traced step)"
        for w in f["withheld"]
    ]
    return f"; withheld as profiler overhead (within the +{added} a step the profiler added): " + (
        "; ".join(items)
    )


def _waited(f: F) -> str:
    """How long the host held the candidate off the CPU, and how that was reckoned."""
    by = RECKONED[f["by"]]
    if f["held_s"] > 0:
        return (
            f"rank {f['rank']} held off the CPU {spell.ms_signed_sig(f['held_s'])} per step ({by})"
        )
    return f"rank {f['rank']} not held off the CPU more than the others ({by})"


def _left(f: F) -> str:
    return f"its gap less that: {gap_text(*f['left'])} per step"


_HOOK = "rank {rank}'s hook holds its launches {held_s:ms_signed} per step longer"

_ARRIVALS = "rank {rank} arrives last at {last} of {matched} matched collectives"

_CHANCE = "chance: {expected:share0}, {p:p}"

_OTHER = "rank {other} arrives last at {other_share:share0} of the matched collectives"


def _wait_ms(us: float) -> str:
    return spell.ms_sig(us / 1e6)


def _reason(f: F) -> str:
    return quoted(f["reason"]) if f["reason"] is not None else ""


def _late(f: F) -> str:
    """'41.2 µs' late ('nan µs' where no other rank waited at its collectives)."""
    return spell.us_one(f["late_us"] if f["late_us"] is not None else math.nan)


def _p(f: F) -> str:
    return spell.p_value(f["p"]) if f["p"] is not None else "no p-value"


PHRASES: Phrases = {
    "cross_check.paired_slower": lambda f: (
        f"rank {f['rank']} is slower at the median step ({_p(f)})"
    ),
    "cross_check.paired_not_slower": lambda f: (
        f"rank {f['rank']} is not slower at the median step ({_p(f)}): its cost, if any, "
        "falls on some steps only"
    ),
    "cross_check.waits_reversed": (
        "at the {source} rank {rank} waits for the others more than they wait for it"
    ),
    "cross_check.waited_for": (
        "the other ranks wait for peers this share of the step longer than rank {rank} does: "
        "they wait for it"
    ),
    "cross_check.not_waited_for": (
        "no measurable extra wait of the others for rank {rank}: its extra work may be hidden "
        "behind their compute"
    ),
    "cross_check.waits_small": (
        "the other ranks' extra wait for peers over rank {rank}'s (share of the step) is not a "
        "straggler's size either"
    ),
    "cross_check.waits_outside": (
        "the other ranks wait for peers longer than rank {rank}, above the minimum effect "
        "({min_share:share}), though its own work is not significantly above theirs: its delay "
        "may lie outside the work the {source} measure"
    ),
    "cross_check.arrival_undecided": "no matched collective with a clear last arriver",
    "cross_check.arrival_confirms": (_ARRIVALS + " (" + _CHANCE + ")"),
    "cross_check.arrival_other": (_ARRIVALS + "; " + _OTHER),
    "cross_check.arrival_other_costs_less": lambda f: (
        f"{render(_ARRIVALS, f)}; {render(_OTHER, f)}, but its late arrivals cost the others "
        f"{_wait_ms(f['other_wait_us'])} of wait in all, against rank {f['rank']}'s "
        f"{_wait_ms(f['wait_us'])}"
    ),
    "cross_check.arrival_no_standout": lambda f: f"{render(_ARRIVALS, f)}; {_reason(f)}",
    "cross_check.arrival_chance": lambda f: (
        f"no rank arrives last more often than chance ({_reason(f)})"
    ),
    "cross_check.arrival_alone_names": (
        _ARRIVALS
        + " ("
        + _CHANCE
        + (
            "): arrival order alone would name it, but its own work is not significantly above "
            "the others' (its delay may lie outside the work the traces measure)"
        )
    ),
    "cross_check.arrival_names_other": (
        _OTHER + ": arrival order alone would name it; not a straggler by the step model's test"
    ),
    "cross_check.no_sync_few_steps": "too few steps for an interval",
    "cross_check.no_sync_agrees": (
        "agrees with exposed transfer + rest of the step model ({model_low:share} to "
        "{model_high:share})"
    ),
    "cross_check.no_sync_costs_more": (
        "communication costs more ({low:share} to {high:share}) than its exposed transfer + rest "
        "({model_low:share} to {model_high:share}): it slows compute while it overlaps (shared "
        "cores, memory bandwidth)"
    ),
    "cross_check.no_sync_saves_less": (
        "removing communication saves less ({low:share} to {high:share}) than exposed transfer + "
        "rest ({model_low:share} to {model_high:share}): the no_sync windows ran on a different "
        "machine state or compute is slower without communication"
    ),
    "cross_check.cpu_wait_unmeasured": (
        "the wait for a CPU was not measured on every rank in these steps"
    ),
    "cross_check.cpu_wait_neutral": lambda f: f"{_waited(f)} (not a straggler either way)",
    "cross_check.cpu_held_other": (
        "rank {rank} held off the CPU {held_s:ms_signed} per step: the host took its time "
        "outside its own work (in the collective everyone waits in)"
    ),
    "cross_check.cpu_wait_host": lambda f: (
        f"{_waited(f)}; {_left(f)}: the host took its time, the work is not slower"
    ),
    "cross_check.cpu_wait_slow": lambda f: (
        f"{_waited(f)}; {_left(f)}: "
        + ("its input is slow" if f["input"] else "the work itself is slow")
    ),
    "cross_check.held_none": (
        "no rank's hook holds its launches a straggler's time longer (the most: rank {rank}, "
        "{held_s:ms_signed} per step)"
    ),
    "cross_check.held_waits": (
        _HOOK
        + (
            ", but its own work is {work_s:ms_signed} per step below the others': its hook waits "
            "for them"
        )
    ),
    "cross_check.held_behind": (
        _HOOK + ", not beyond what rank {named} is behind: it may wait there for that rank"
    ),
    "cross_check.held_host": (_HOOK + ", no more than the host held it off the CPU: host"),
    "cross_check.held_compute": (
        _HOOK + ", less than its extra work ({work_s:ms_signed}): compute"
    ),
    "cross_check.held_late": (_HOOK + " than the others': they wait for its launch"),
    "cross_check.timers_split": _timers_split,
    "cross_check.verdicts_agree": _agree,
    "cross_check.verdicts_one_silent": _silent,
    "cross_check.verdicts_other_rank": lambda f: (
        f"{_verdicts(f)}: the traced steps are another sample of the run, taken after its "
        "measured windows and under the profiler"
    ),
    "cross_check.verdicts_other_kind": lambda f: (
        f"{_verdicts(f)}: one rank, its kind read from different evidence: the timers' "
        f"({_rule(f, 'timers_rule', 'phase times')}) against the traces' "
        f"({_rule(f, 'traces_rule', 'ops')})"
    ),
    "cross_check.traces_describe_run": lambda f: (
        f"{_inflation(f)}: the traces describe the run's steps"
    ),
    "cross_check.traced_split": lambda f: (
        f"{_inflation(f)}: the step split describes the traced steps{_withheld(f)}"
    ),
    "cross_check.timers_head": lambda f: (
        f"{_inflation(f)}: the step split is the measured windows'; the traced steps' under the "
        f"profiler: step {spell.ms_sig(f['step_s'])}: {_split(f['parts'])}{_withheld(f)}"
    ),
    "arrival.none_matched": "no matched collectives: no straggler analysis",
    "arrival.none_clear": "no collective had a clear last arriver (durations equal on every rank)",
    "arrival.none_stands_out": (
        "no rank stands out: the most frequent last arriver, rank {rank}, is last at "
        "{share:share0} of its collectives (threshold {threshold:share0})"
    ),
    "arrival.tie": "ranks {rank} and {other} are last equally often",
    "arrival.chance": (
        "rank {rank} is last at {last} of {matched} collectives: too few to rule out chance ({p:p})"
    ),
    "arrival.noise": lambda f: (
        f"rank {f['rank']} is last most often but only {_late(f)} late on "
        f"average (under {spell.plain_us(f['min_us'])}: noise)"
    ),
    "arrival.last": (
        "rank {rank} arrives last at {share:share0} of its collectives (chance: "
        "{expected:share0}), {late_us:us_whole} late on average"
    ),
}
