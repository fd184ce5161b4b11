"""Words for the straggler verdict (contracts/schema/cell_result.py, `StragglerVerdict`): its one
stored line (`said`: straggler.named / .late / .not_named / .untested), why its candidate is
not named (`why_not`), the busy-machine caveat beside it (caveat.*), and the straggler line
every surface prints (`straggler_text`). Figures: rank, candidate, kind, phase, gap / late as
[mean, low, high] seconds, pattern (cost.pattern_words'), injected, caveat and why (findings)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import Diagnosis, StragglerVerdict
from torchscale.contracts.wording import spelled
from torchscale.contracts.wording.figures import gap_text, seconds_text

# after a straggler the run's own --inject-delay made (`StragglerVerdict.injected`): no surface
# shows the artificial straggler as a finding about the machine
INJECTED = " (injected: --inject-delay)"
KIND_WORDS: dict[str, str] = {
    "compute": "its own work takes longer",
    "input": "it waits for its input",
    "host": "it was held off the CPU",
    "communication": "its collectives start late",
}
UNTESTED = "no straggler test: "
WITHDRAWN = "withdrawn: "

Figures = Mapping[str, Any]


def _said(figures: Figures, name: str) -> str:
    """A finding nested in `figures` (stored as its code and figures), in words."""
    from torchscale.contracts.wording import say  # the joined phrases, built after this module

    return say(Finding.model_validate(figures[name]))


def _gap(figures: Figures, name: str = "gap") -> str:
    return gap_text(*(figures.get(name) or (None, None, None)))


def _as(pattern: str | None) -> str:
    return f"; {pattern}" if pattern else ""


def _after(figures: Figures) -> str:
    """What a named verdict says after itself: injected, then the busy-machine caveat."""
    injected = INJECTED if figures.get("injected") else ""
    caveat = f"; {_said(figures, 'caveat')}" if figures.get("caveat") else ""
    return injected + caveat


def _named(figures: Figures) -> str:
    kind, phase = figures["kind"], figures.get("phase")
    where = f" in {phase}" if phase and kind in ("compute", "host") else ""
    check = "; check the host" if kind == "host" else ""
    device = f"; {_said(figures, 'device')}" if figures.get("device") else ""
    return (
        f"rank {figures['rank']} is a straggler ({kind}: {KIND_WORDS[kind]}{where}): "
        f"{_gap(figures)} per step over the others{_as(figures.get('pattern'))}{check}"
        f"{device}{_after(figures)}"
    )


def _device_name(figures: Figures) -> str:
    return "GPU" if figures.get("timer") == "cuda_events" else "core"


def _ratio(figures: Figures) -> str:
    """'its calibration 1.18x [1.12, 1.25] the others', its work 1.20x'."""
    mean, low, high = figures["ratio"]
    interval = f" [{spelled.sig(low)}, {spelled.sig(high)}]" if low is not None else ""
    return (
        f"its calibration {spelled.times(mean, 2)}{interval} the others', its work "
        f"{spelled.times(figures['work_ratio'], 2)}"
    )


def _device_slower(figures: Figures) -> str:
    gpu = _device_name(figures) == "GPU"
    fix = "replace or cool the GPU" if gpu else "the same work takes longer on its core"
    return f"a slower {_device_name(figures)} ({_ratio(figures)}): {fix}"


DEVICE_PHRASES: dict[str, Callable[[Figures], str]] = {
    "straggler.device_slower": _device_slower,
    "straggler.device_partly": lambda f: f"a slower {_device_name(f)} and more work ({_ratio(f)})",
    "straggler.more_work": lambda f: (
        f"more work, its {_device_name(f)} on par ({_ratio(f)}): rebalance its data"
    ),
    "straggler.device_undecided": lambda f: (
        f"a slower {_device_name(f)} or more work: not told apart ({_ratio(f)})"
    ),
    "straggler.device_in_window": lambda f: (
        f"a slower {_device_name(f)} while it worked (its work {spelled.times(f['work_ratio'], 2)} "
        f"the others' on the same work per rank; its calibration after the windows "
        f"{spelled.times(f['ratio'][0], 2)}, on par): a slowdown inside the windows, such as "
        f"another process on its {_device_name(f)} or a clock drop, not the job's data"
    ),
    "straggler.device_unmeasured": lambda f: "no calibration timed: slower device or more work?",
}


def _late(figures: Figures) -> str:
    work, step = figures["work_s"], figures.get("step_s")
    on_par = (
        f"{spelled.ms_signed_sig(work)}, step {spelled.ms_sig(step)}"
        if step is not None
        else spelled.ms_signed_sig(work)
    )
    return (
        f"rank {figures['rank']} is a straggler (communication: {KIND_WORDS['communication']}): "
        f"the others wait longer for it, by {_gap(figures, 'late')} per step, while its own "
        f"work is on par ({on_par}){_after(figures)}"
    )


def _not_named(figures: Figures) -> str:
    return (
        f"nobody named: the largest gap, rank {figures['candidate']}, {_gap(figures)} per "
        f"step{_as(figures.get('pattern'))}: {_said(figures, 'why')}"
    )


def _below(figures: Figures) -> str:
    return (
        f"below the {spelled.pct_whole(figures['share'])} minimum effect "
        f"({spelled.ms_sig(figures['min_effect_s'])} of a {spelled.ms_sig(figures['step_s'])} "
        "step)"
    )


def _few_steps(figures: Figures) -> str:
    left_out, steps = figures.get("left_out"), figures.get("steps")
    dropped = f", {left_out} of {steps} left out: not on every rank" if left_out else ""
    return (
        f"{figures['paired']} paired steps{dropped}; the test needs at least "
        f"{figures['needed']} (trace or measure more steps)"
    )


def _busy(figures: Figures) -> str:
    cores = figures.get("cores")
    used = spelled.one_decimal(cores) if cores is not None else "?"
    return f"busy machine (others used {used} cores on {figures['host']}): check the host first"


def _shared(figures: Figures) -> str:
    return (
        f"{figures['ranks']} ranks share {figures['cores']} cores on {figures['host']}: check "
        "the host first"
    )


PHRASES: dict[str, Callable[[Figures], str]] = {
    "straggler.named": _named,
    "straggler.late": _late,
    "straggler.not_named": _not_named,
    "straggler.untested": lambda f: UNTESTED + _said(f, "why"),
    "straggler.too_few_ranks": lambda f: "fewer than two ranks with phase timers",
    "straggler.too_few_steps": _few_steps,
    "straggler.none_above": lambda f: "no rank's own work is above the others'",
    "straggler.noise_interval": lambda f: "could be noise: its interval reaches 0",
    "straggler.noise_few_steps": lambda f: "could be noise: too few steps agree for the test",
    "straggler.below_minimum": _below,
    "straggler.withdrawn": lambda f: WITHDRAWN + f["by"],
    "caveat.busy_machine": _busy,
    "caveat.shared_cores": _shared,
    **DEVICE_PHRASES,
}


def summary(verdict: StragglerVerdict) -> str:
    """The verdict's one line."""
    return _said_or_none(verdict.said) or ""


def why_not(verdict: StragglerVerdict) -> str | None:
    """Why its candidate is not named; None when named."""
    return _said_or_none(verdict.why_not)


def caveat(diagnosis: Diagnosis | None) -> str | None:
    """The diagnosis' busy-machine caveat in words; None: none (or no diagnosis)."""
    return _said_or_none(diagnosis.busy) if diagnosis is not None else None


def _said_or_none(finding: Finding | None) -> str | None:
    from torchscale.contracts.wording import say

    return say(finding) if finding is not None else None


def _kind_text(verdict: StragglerVerdict) -> str:
    """'compute in backward', 'input', 'host (held off the CPU)', 'communication (its
    collectives start late)'; a verdict without a kind: its slow phase."""
    if verdict.kind is None:
        return f"slow in {verdict.phase}" if verdict.phase else "slow own work"
    if verdict.kind == "compute":
        return f"compute in {verdict.phase}" if verdict.phase else "compute"
    if verdict.kind == "host":
        return "host (held off the CPU)"
    if verdict.kind == "communication":
        return "communication (its collectives start late)"
    return "input (waits for its data)"


def _lead(verdict: StragglerVerdict, injected_first: bool) -> str:
    """'Straggler:', or where the run delayed the rank on purpose and the line is to say so
    first (a narrow table that may shorten it), 'Straggler (injected: --inject-delay):'."""
    return f"Straggler{INJECTED}:" if injected_first and verdict.injected else "Straggler:"


def _named_line(verdict: StragglerVerdict, injected_first: bool) -> str:
    lead = _lead(verdict, injected_first)
    tail = INJECTED if verdict.injected and not injected_first else ""
    pattern = f", {verdict.pattern}" if verdict.pattern else ""
    if verdict.kind == "communication":
        late = seconds_text(verdict.headline_gap(), signed=True)
        said = f"{lead} rank {verdict.rank}, {_kind_text(verdict)}: the others wait {late}/step"
        return said + tail
    if verdict.kind == "host":
        held = seconds_text(verdict.headline_gap(), signed=True)
        said = f"{lead} rank {verdict.rank}, {_kind_text(verdict)} {held}/step{pattern}"
        return said + (tail if verdict.injected else ": check the host")
    gap = seconds_text(verdict.gap_s, signed=True)
    device = _device_short(verdict)
    return f"{lead} rank {verdict.rank}, {_kind_text(verdict)}, {gap}/step{pattern}{device}" + tail


def _device_short(verdict: StragglerVerdict) -> str:
    """', a slower core x1.18' / ', more work' after a compute straggler whose calibration
    (or the same work on every rank) told them apart; '' otherwise (not compute, not told, or
    not timed)."""
    device = verdict.device
    shown = ("straggler.device_slower", "straggler.more_work", "straggler.device_in_window")
    if device is None or device.code not in shown:
        return ""
    if device.code == "straggler.more_work":
        return ": more work (rebalance its data)"
    name = _device_name(device.figures)
    if device.code == "straggler.device_in_window":
        return f": a slower {name} while it worked (the same work as the others)"
    return f": a slower {name} ({spelled.times(device.figures['ratio'][0], 2)})"


def straggler_text(
    verdict: StragglerVerdict | None, ranks: int, *, injected_first: bool = False
) -> str:
    """The straggler in one line, without a p-value (the test lives behind -v):
    'Straggler: rank 1, compute in backward, +52.6 ms [49.9, 55.3]/step' (what it costs the
    others per step), then how that falls over the steps where the verdict says ('..., every
    4th step +60 ms'); 'Straggler: rank 1, input, ...'; 'Straggler: rank 1, host (held off the
    CPU) +9.6 ms [8.1, 11.0]/step: check the host' (the time the host held it beyond its fair
    share); or, nobody named, 'Straggler: none (rank 0 +0.21 ms [-0.3, 0.7]/step: could be
    noise: its interval reaches 0)' / '...: below the 5 % minimum effect (1.2 ms of a 24 ms
    step)'. `injected_first`: a rank the run delayed on purpose says so right after
    'Straggler' (where a narrow table may cut the line's end)."""
    if verdict is None:
        return "Straggler: none (one rank)" if ranks < 2 else "Straggler: not tested"
    if verdict.named:
        return _named_line(verdict, injected_first)
    gap = seconds_text(verdict.gap_s, signed=True)
    if verdict.candidate_rank is None or verdict.gap_s is None:
        return f"Straggler: not tested ({why_not(verdict) or summary(verdict)})"
    if verdict.host_bound:  # a schema-12 verdict: the host's gap withdrew the name
        held = seconds_text(verdict.host_wait_s, signed=True)
        return (
            f"Straggler: none in the work (rank {verdict.candidate_rank} {gap}/step behind, "
            f"waited {held} longer for a CPU): check the host"
        )
    pattern = f", {verdict.pattern}" if verdict.pattern else ""
    why = why_not(verdict) or "not named"
    return f"Straggler: none (rank {verdict.candidate_rank} {gap}/step{pattern}: {why})"
