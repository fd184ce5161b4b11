"""Words for the diagnosis' straggler verdict (`Diagnosis.straggler`, `StragglerVerdict`), the
one wording every surface uses: its line (`line`, `straggler_text`: `straggler.*`), the
problem's title and evidence, its test, kind rule and step pattern, why its candidate is not
named (`why_not`) and the busy-machine caveat beside it (`Diagnosis.busy`: `caveat.*`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Diagnosis, Estimate, StepPattern, StragglerVerdict
from torchscale.contracts.step_phases import LOOP
from torchscale.contracts.wording import Phrases, spell
from torchscale.contracts.wording.figures import seconds_text

Figures = Mapping[str, Any]

# a rank the run delayed on purpose (`StragglerVerdict.injected`): said right after the lead
# on every surface, so no table that shortens the line hides it
INJECTED = " (injected: --inject-delay)"

# what each kind's extra time is, one vocabulary for the line, the title and the fix
KIND_WORDS: dict[str, str] = {
    "compute": "compute",
    "input": "input (waits for its data)",
    "host": "host (held off the CPU)",
    "communication": "communication (its collectives start late)",
}

# what own work is, by the source that timed it (`straggler.test`'s own_work)
OWN_WORK = {
    "timers": "",
    "phase_ranges": "; own work = the rank's busy time in its data, forward, backward and "
    "optimizer ranges (the traces' ProfilerStep phases)",
    "step_parts": "; own work = the rank's compute and data time of the step model's parts",
}

PHASE_WORDS = {
    "data": "data loading",
    "forward": "forward pass",
    "backward": "backward pass",
    "optimizer": "optimizer step",
}


def phase_words(phase: str) -> str:
    """'backward pass' for the backward phase."""
    return PHASE_WORDS.get(phase, phase)


def device_word(device: str) -> str:
    return "rank" if device == "cpu" else ("GPU" if device == "cuda" else "device")


def who(device: str, rank: int) -> str:
    """'rank 3' on CPUs, 'GPU-3' on CUDA, 'device-3' elsewhere."""
    word = device_word(device)
    return f"rank {rank}" if word == "rank" else f"{word}-{rank}"


def title(f: Figures) -> str:
    """The straggler problem's title (problem.straggler's figures): who, its kind, where its
    collective was ('GPU-1 is the straggler: compute in backward, in nccl all_reduce')."""
    where = " ".join(p for p in (f.get("backend"), f.get("op")) if p)
    where = f", in {where}" if where else ""
    name = who(f.get("device", "cpu"), f["rank"])
    return f"{name} is the straggler: {kind_words(f.get('kind'), f.get('phase'))}{where}"


def evidence(f: Figures) -> list[str]:
    """The straggler problem's evidence: its slow phase's gap, arrival order, the wait for
    peers it costs, the what-if (its line is the diagnosis', shown beside)."""
    from torchscale.contracts.wording.figures import share_text

    name = who(f.get("device", "cpu"), f["rank"])
    lines = []
    if f.get("phase") is not None and f.get("phase_gap_s") is not None:
        lines.append(
            f"its {phase_words(f['phase'])} takes {spell.trace_seconds(f['phase_gap_s'])} "
            "longer than the median of the other ranks, step by step"
        )
    arrival = f.get("arrival")
    if arrival is not None:
        lines.append(
            f"cross-check: {name} arrived last at {arrival['last']} of {arrival['instances']} "
            f"matched collectives ({spell.pct_whole(arrival['share'])}; chance alone: "
            f"{spell.pct_whole(arrival['expected'])})"
        )
    if f.get("stall") is not None:
        stall = share_text(Estimate.model_validate(f["stall"]))
        lines.append(f"ranks wait for peers {stall} of the step (mean over ranks, exposed)")
    else:
        lines.append(
            "waits not separable from the transfer (no collective matched): the cost is its "
            "extra own work per step"
        )
    if f.get("whatif") is not None:
        lines.append(
            f"what-if (upper bound): had {name} arrived with the others, steps would be at most "
            f"{share_text(Estimate.model_validate(f['whatif']))} shorter (capped by the other "
            "ranks' wait for it)"
        )
    return lines


def kind_words(kind: str | None, phase: str | None) -> str:
    """'compute in backward', 'input (waits for its data)', 'host (held off the CPU)'; a
    verdict without a kind: its slow phase."""
    if kind is None:
        return f"slow in {phase}" if phase else "slow own work"
    if kind == "compute" and phase == LOOP:
        return "compute outside its forward and backward"
    if kind == "compute" and phase:
        return f"compute in {phase}"
    return KIND_WORDS[kind]


def _said(figures: Figures, name: str) -> str:
    """A finding nested in `figures` (stored as its code and figures), in words."""
    from torchscale.contracts.wording import say  # the joined phrases, built after this module

    return say(Finding.model_validate(figures[name]))


def _gap(figures: Figures) -> str:
    return seconds_text(Estimate.model_validate(figures["gap"]), signed=True)


def _pattern(figures: Figures) -> str:
    return f", {_said(figures, 'pattern')}" if figures.get("pattern") else ""


def _named(f: Figures) -> str:
    lead = f"Straggler{INJECTED if f.get('injected') else ''}: rank {f['rank']}"
    kind = kind_words(f.get("kind"), f.get("phase"))
    if f.get("kind") == "communication":
        return f"{lead}, {kind}: the others wait {_gap(f)}/step"
    if f.get("kind") == "host":
        check = "" if f.get("injected") else ": check the host"
        return f"{lead}, {kind} {_gap(f)}/step{_pattern(f)}{check}"
    device = f": {_device_said(f)}" if f.get("device") else ""
    return f"{lead}, {kind}, {_gap(f)}/step{_pattern(f)}{device}"


def _device_said(f: Figures) -> str:
    """The device reading; more work in the loop (outside the model's forward and backward)
    is the rank's own extra work, no data to rebalance."""
    if f.get("phase") == LOOP and f["device"].get("code") == "straggler.more_work":
        from torchscale.contracts.wording import say

        return say(Finding(code="straggler.more_loop_work"))
    return _said(f, "device")


def _not_named(f: Figures) -> str:
    why = _said(f, "why") if f.get("why") else "not named"
    return f"Straggler: none (rank {f['candidate']} {_gap(f)}/step{_pattern(f)}: {why})"


def _untested(f: Figures) -> str:
    return f"Straggler: not tested ({_said(f, 'why')})" if f.get("why") else "Straggler: not tested"


def _periodic(f: Figures) -> str:
    nth = {2: "2nd", 3: "3rd"}.get(f["period"], f"{f['period']}th")
    return f"every {nth} step {_cost(f)}"


def _cost(f: Figures) -> str:
    """A pattern's typical cost: two significant figures under 10 ms, three from it."""
    typical = f["typical_s"]
    return spell.ms_signed_sig(typical, 2 if abs(typical) < 0.01 else 3)


def _on_cpu(f: Figures) -> str:
    where = f"its {f['phase']}" if f.get("phase") and f["phase"] != "data" else "its work"
    held = f"; the host also held it off the CPU {_ms(f['held_s'])}" if f.get("held_s") else ""
    return (
        f"it ran {_ms(f['on_cpu_s'])} per step longer on a CPU than the others: {where} has "
        f"more to do{held}"
    )


def _ms(seconds: float) -> str:
    return spell.ms_signed_sig(seconds)


def _late_rule(f: Figures) -> str:
    arrived = (
        f"it arrives last at {f['last']} of {f['matched']} matched collectives (chance: "
        f"{spell.pct_whole(f['expected'])})"
        if f.get("last") is not None
        else "the others wait for it the most (arrival order alone does not single it out)"
    )
    return (
        f"{arrived}, the others wait {spell.pct(f['wait_share'])} of the step longer than "
        f"it does (at least {spell.pct_whole(f['min_share'])}), and its own work is not "
        f"significantly above theirs ({_ms(f['work_s'])} per step) nor explains that wait"
    )


def _test(f: Figures) -> str:
    return (
        "what the rank costs the others: per step, how far its own work runs past the slowest "
        "other rank's (zero where it is not last), over the mean of the others' costs; named "
        f"when the one-sided moving-block bootstrap bound of the mean cost at {f['alpha']:g} / "
        f"ranks is above zero and the mean is at least {spell.pct_whole(f['min_share'])} of "
        f"the mean step{OWN_WORK[f['own_work']]}"
    )


def _also_held(f: Figures) -> str:
    """A rule's words, then the host's hold beside a kind that is not the host's."""
    held = f.get("also_held_s")
    if held is None:
        return ""
    less = ", less than its work" if f.get("held_less") else ""
    return f"; the host held it off the CPU {_ms(held)}{less}"


def _few_steps(figures: Figures) -> str:
    left_out, steps = figures.get("left_out"), figures.get("steps")
    dropped = f", {left_out} of {steps} left out: not on every rank" if left_out else ""
    return (
        f"{figures['paired']} paired steps{dropped}; the test needs at least "
        f"{figures['needed']} (trace or measure more steps)"
    )


def _device_name(figures: Figures) -> str:
    return "GPU" if figures.get("timer") == "cuda_events" else "core"


def _ratio(figures: Figures) -> str:
    """'its calibration 1.18x [1.12, 1.25] the others', its work 1.20x'."""
    mean, low, high = figures["ratio"]
    interval = f" [{spell.sig(low)}, {spell.sig(high)}]" if low is not None else ""
    return (
        f"its calibration {spell.times(mean, 2)}{interval} the others', its work "
        f"{spell.times(figures['work_ratio'], 2)}"
    )


def _busy(figures: Figures) -> str:
    cores = figures.get("cores")
    used = spell.one_decimal(cores) if cores is not None else "?"
    return f"busy machine (others used {used} cores on {figures['host']}): check the host first"


def _checks(figures: Figures) -> str:
    from torchscale.contracts.wording.diagnosis_checks import check_label

    return ", ".join(check_label(check) for check in figures["by"])


def line(verdict: StragglerVerdict | None, ranks: int) -> Finding:
    """The verdict's one line as a code and its figures, read off its fields: named (who, its
    kind, what it costs the others per step, how that falls over the steps, its device,
    injected), not named (the largest gap and why), not tested (why), or one rank."""
    if verdict is None:
        return Finding(code="straggler.one_rank" if ranks < 2 else "straggler.untested")
    pattern = _pattern_finding(verdict.pattern)
    gap = verdict.headline_gap()
    if verdict.named:
        figures = {
            "rank": verdict.rank,
            "kind": verdict.kind,
            "phase": verdict.phase,
            "gap": gap.model_dump() if gap is not None else None,
            "pattern": pattern,
            "device": _shown_device(verdict),
            "injected": bool(verdict.injected),
        }
        return Finding(code="straggler.named", figures=figures)
    why = verdict.why_not.model_dump() if verdict.why_not is not None else None
    if verdict.candidate_rank is None or gap is None:
        return Finding(code="straggler.untested", figures={"why": why})
    figures = {"candidate": verdict.candidate_rank, "gap": gap.model_dump(), "pattern": pattern}
    return Finding(code="straggler.not_named", figures=figures | {"why": why})


def _pattern_finding(pattern: StepPattern | None) -> dict[str, Any] | None:
    if pattern is None:
        return None
    figures = pattern.model_dump(exclude={"shape"}, exclude_none=True)
    return {"code": f"straggler.pattern.{pattern.shape}", "figures": figures}


def pattern_words(pattern: StepPattern | None) -> str | None:
    """How a straggler's cost falls over the steps: 'every 4th step +60 ms'; None: none."""
    found = _pattern_finding(pattern)
    return _said({"pattern": found}, "pattern") if found is not None else None


def _shown_device(verdict: StragglerVerdict) -> dict[str, Any] | None:
    """The device reading the line carries: told apart (slower, more work, slower while it
    worked); the undecided readings stay in the detail."""
    told = (
        "straggler.device_slower",
        "straggler.more_work",
        "straggler.device_in_window",
        "straggler.device_shared_gpu",
    )
    device = verdict.device
    return device.model_dump() if device is not None and device.code in told else None


def straggler_text(verdict: StragglerVerdict | None, ranks: int) -> str:
    """The straggler's one line on every surface: 'Straggler: rank 1, compute in backward,
    +52.6 ms [49.9, 55.3]/step, every 4th step +60 ms' (what it costs the others per step, how
    that falls over the steps); 'Straggler: none (rank 0 +0.21 ms [-0.3, 0.7]/step: could be
    noise: its interval reaches 0)'."""
    from torchscale.contracts.wording import say

    return say(line(verdict, ranks))


def why_not(verdict: StragglerVerdict) -> str | None:
    """Why its candidate is not named; None when named."""
    return _said_or_none(verdict.why_not)


def caveat(diagnosis: Diagnosis | None) -> str | None:
    """The diagnosis' busy-machine caveat in words; None: none (or no diagnosis)."""
    return _said_or_none(diagnosis.busy) if diagnosis is not None else None


def _said_or_none(finding: Finding | None) -> str | None:
    from torchscale.contracts.wording import say

    return say(finding) if finding is not None else None


PHRASES: Phrases = {
    # the line (`line`)
    "straggler.named": _named,
    "straggler.not_named": _not_named,
    "straggler.untested": _untested,
    "straggler.one_rank": "Straggler: none (one rank)",
    # how its cost falls over the steps (`StepPattern`)
    "straggler.pattern.periodic": _periodic,
    "straggler.pattern.every": "every step",
    "straggler.pattern.most": lambda f: f"most steps ({f['steps']} of {f['of']}) {_cost(f)}",
    "straggler.pattern.sporadic": lambda f: f"{f['steps']} of {f['of']} steps {_cost(f)}",
    "straggler.pattern.uneven": "uneven over the steps",
    # the rule that decided the kind (`kind_rule`)
    "straggler.rule.on_cpu": _on_cpu,
    "straggler.rule.host_held": lambda f: (
        f"the host held it off the CPU {_ms(f['held_s'])} per step, which passes the straggler "
        f"test and is at least the rest of its gap ({_ms(f['left_s'])}): other work held it off "
        "the CPU"
    ),
    "straggler.rule.held_in_wait": lambda f: (
        f"the host held it off the CPU {_ms(f['held_s'])} per step (passes the straggler test), "
        f"while its own work is {_ms(f['work_s'])} per step over the others': the time was lost "
        "where it waits with them"
    ),
    "straggler.rule.data_phase": lambda f: (
        "its data phase has the largest significant gap" + _also_held(f)
    ),
    "straggler.rule.slow_phase": lambda f: (
        f"its {f['phase']} has the largest significant gap" + _also_held(f)
    ),
    "straggler.rule.phases_data": lambda f: (
        "no phase is significant alone; its data phase holds most of the gap" + _also_held(f)
    ),
    "straggler.rule.phases_compute": lambda f: (
        "no phase is significant alone; its compute phases hold most of the gap" + _also_held(f)
    ),
    "straggler.rule.late_collectives": _late_rule,
    "straggler.rule.held_launches": lambda f: (
        f"its DDP communication hook holds its collectives {_ms(f['held_s'])} per step longer "
        f"than the others' (passes the straggler test), while its own work is "
        f"{_ms(f['work_s'])} per step over theirs: the others wait for its launch"
    ),
    "straggler.test": _test,
    # why a candidate is not named (`why_not`)
    "straggler.too_few_ranks": "fewer than two ranks with phase timers",
    "straggler.too_few_steps": _few_steps,
    "straggler.none_above": "no rank's own work is above the others'",
    "straggler.noise_interval": "could be noise: its interval reaches 0",
    "straggler.noise_few_steps": "could be noise: too few steps agree for the test",
    "straggler.below_minimum": "below the {share:share0} minimum effect",
    "straggler.withdrawn": lambda f: f"withdrawn by {_checks(f)}",
    # a compute straggler's device (`device`)
    "straggler.device_slower": lambda f: (
        f"a slower {_device_name(f)} ({spell.times(f['ratio'][0], 2)}): "
        + ("replace or cool the GPU" if _device_name(f) == "GPU" else "the same work takes longer")
    ),
    "straggler.device_partly": lambda f: f"a slower {_device_name(f)} and more work ({_ratio(f)})",
    "straggler.more_work": "more work (rebalance its data)",
    "straggler.more_loop_work": (
        "more work, its loop's own (work this rank does alone: spread it over the ranks or "
        "take it off the training step)"
    ),
    "straggler.device_undecided": lambda f: (
        f"a slower {_device_name(f)} or more work: not told apart ({_ratio(f)})"
    ),
    "straggler.device_in_window": lambda f: (
        f"slower only while it worked, with the same work as the others: its {_device_name(f)} "
        "timed on par after, so not shown to be the device (a process on its core, its host "
        "thread, a clock drop)"
    ),
    "straggler.device_unmeasured": "no calibration timed: slower device or more work?",
    "straggler.device_shared_gpu": (
        "{ranks_per_gpu} ranks share each GPU: no device reading (a rank's calibration times "
        "a GPU the others drive too)"
    ),
    # the busy-machine caveat (`Diagnosis.busy`)
    "caveat.busy_machine": _busy,
    "caveat.shared_cores": "{ranks} ranks share {cores} cores on {host}: check the host first",
}
