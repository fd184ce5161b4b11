"""The run's one diagnosis in words: the sentences every surface prints for it.

The diagnosis is computed once (torchscale/offline/analysis/diagnosis/); this module only writes
its figures, so the terminal (profile and sweep lines), the reports and their formats say the same
thing with the same digits: a figure with its interval as the tables write it, '±' half its width
where it is about symmetric and [low, high] where it is lopsided or a gap's reaches 0, cut by the
one rounding rule (`estimates.round_figure`: two significant digits of the half-width), a point
value as a share with one decimal or milliseconds with three
significant figures. The terminal's lines around these sentences (levels, what -v adds) are
console/diagnosis.py's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from torchscale.contracts.schema.cell_result import (
    CrossCheck,
    Diagnosis,
    Estimate,
    Finding,
    StragglerVerdict,
)
from torchscale.contracts.share_bound import share_bound
from torchscale.interfaces.formatting import quantum_of
from torchscale.interfaces.report.estimates import (
    RoundedFigure,
    figure_quantum,
    lopsided,
    round_figure,
    value_format,
)
from torchscale.offline.analysis.diagnosis.inflation import inflation_of, uncleared_inflation

PART_WORDS = {
    "compute": "compute",
    "data": "data",
    "wait_for_peers": "waiting",
    "exposed_transfer": "exposed comm",
    "rest": "rest",
}
VERDICT_WORDS = {True: "agrees", False: "disagrees", None: "not judged"}
# where a disagreeing cross-check is shown: the diagnosis stores the terminal's pointer
TERMINAL_HINT = "(-v shows them)"
REPORT_HINT = "(the appendix lists them)"


def pct(value: float) -> str:
    """A share of the step: '40.1 %'."""
    return f"{value * 100:.1f} %"


def pct_bound(high: float) -> str:
    """A share's upper bound: '0.1 %' for microseconds of a step, never '0.0 %'."""
    return f"{share_bound(high)} %"


def ms(seconds: float) -> str:
    """A duration: '52.6 ms', '0.412 ms', '348 ms', '1,234 ms'; from 10 s on '13.3 s'."""
    if abs(seconds) >= 10:
        return f"{seconds:.1f} s"
    return f"{_number(seconds * 1e3)} ms"


def share_text(estimate: Estimate | None) -> str:
    """'40.1 % [38.4, 41.4]', '0.0 %' (none in any step), 'not measurable (< 0.4 %)',
    '12.0 % (spread unknown)' (or the estimate's reason for having no interval),
    'not measurable (its reason)' where it has no bound, or 'unknown'."""
    if estimate is None:
        return "unknown"
    if estimate.low == 0 and estimate.high == 0 and estimate.value in (None, 0.0):
        return pct(0.0)
    if estimate.value is None or not estimate.measurable:
        if estimate.high is not None:
            return f"not measurable (< {pct_bound(estimate.high)})"
        return f"not measurable ({estimate.reason})" if estimate.reason else "unknown"
    if estimate.low is None or estimate.high is None:
        return f"{pct(estimate.value)} ({estimate.reason or 'spread unknown'})"
    return _spelled(_rounded(estimate.value, estimate.low, estimate.high, 100.0), "%")


def judging_rules(diagnoses: Iterable[Diagnosis | None]) -> dict[str, int]:
    """{rule: how many diagnoses} of those that state the rule they were judged by (noise
    could not judge them), in order of first appearance. A figure without an interval says
    nothing of the rule: today's one-step result has none and is judged by today's."""
    out: dict[str, int] = {}
    for diagnosis in diagnoses:
        if diagnosis is not None and diagnosis.rule:
            out[diagnosis.rule] = out.get(diagnosis.rule, 0) + 1
    return out


def _rounded(value: float, low: float, high: float, scale: float) -> RoundedFigure:
    """The figure and its interval in the unit `scale` gives them (100: a share in %, 1e3:
    seconds in ms), as numbers cut by the one rounding rule; three significant figures where
    the interval is narrower than that (a sentence never grows a row of digits)."""
    value, low, high = value * scale, low * scale, high * scale
    step, finest = figure_quantum(value, low, high), quantum_of(abs(value))
    if step is None or (finest is not None and step < finest / 10):
        plain = _share_number if scale == 100.0 else _number
        half = None if lopsided(value, low, high) else plain((high - low) / 2)
        return RoundedFigure(value=plain(value), low=plain(low), high=plain(high), half=half)
    return round_figure(value, low, high, value_format("float"))


def _share_number(value: float) -> str:
    return f"{value:.1f}"


def _number(value: float) -> str:
    """Three significant figures below 100, whole above ('10', never '10.00' for 9.9999)."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def seconds_text(estimate: Estimate | None, *, signed: bool = False) -> str:
    """'+52.6 ms [49.9, 55.3]': in the unit its largest number reads best in (s, ms or us),
    the interval in the same unit; '+7.48 us (no interval)'; 'not measurable (< 8 us)'."""
    if estimate is None or (estimate.value is None and estimate.high is None):
        return "unknown"
    shown_ends = (estimate.high,) if estimate.value is None else (estimate.low, estimate.high)
    largest = max(abs(e) for e in (estimate.value, *shown_ends) if e is not None)
    # '+8 us [-12, 24]', never '+0.00785 ms'; a bare 0 in ms
    scale, unit = (1.0, "s") if largest >= 10 else (1e3, "ms") if largest >= 1e-3 else (1e6, "us")
    scale, unit = (1e3, "ms") if largest == 0 else (scale, unit)
    if estimate.value is None:
        bound = float(estimate.high or 0.0)
        return (
            f"not measurable (< {_number(bound * scale)} {unit})"
            if bound > 0
            else ("not measurable")
        )
    value_s = estimate.value + 0.0  # no '-0'
    sign = "+" if signed and value_s >= 0 else ""
    if estimate.low is None or estimate.high is None:
        why = estimate.reason or "spread unknown"
        return f"{sign}{_number(value_s * scale)} {unit} ({why})"
    shown = _rounded(value_s, estimate.low, estimate.high, scale)
    value = shown.value if shown.value.startswith("-") else f"{sign}{shown.value}"
    straddles = estimate.low < 0 < estimate.high
    return _spelled(replace(shown, value=value), unit, straddles)


def _spelled(shown: RoundedFigure, unit: str, straddles: bool = False) -> str:
    """'5.7 % ±1.9 %' where the interval is about symmetric, '+3.1 ms [1.0, 4.4]' where it is
    lopsided (the tables' one rule, `estimates.lopsided`) or `straddles` 0 (a gap whose
    verdict turns on whether its interval reaches 0 shows both ends), the unit said after the
    figure."""
    if shown.half is None or straddles:
        return f"{shown.value} {unit} [{shown.low}, {shown.high}]"
    return f"{shown.value} {unit} ±{shown.half} {unit}"


def sync_stall_text(diagnosis: Diagnosis) -> str:
    """The seed's line: 'Sync stall time: 40.1 % ±1.5 %' (waiting for peers, mean over
    ranks, share of the step)."""
    part = diagnosis.part("wait_for_peers")
    return f"Sync stall time: {share_text(part.share if part else None)}"


def split_text(diagnosis: Diagnosis) -> str:
    """'Step 66.7 ms: compute 57.2 %, data 0.0 %, waiting 40.1 %, exposed comm 1.6 %, rest
    1.1 %' (point values; each part's interval is in the JSON and -v)."""
    parts = ", ".join(f"{PART_WORDS[p.name]} {_point(p.share)}" for p in diagnosis.parts)
    step = ms(diagnosis.step_s.value) if diagnosis.step_s.value is not None else "?"
    return f"Step {step}{_traced(diagnosis)}: {parts}"


def _traced(diagnosis: Diagnosis) -> str:
    """Where a profiler slowed the traced steps beyond the noise (`inflation.inflation_of`):
    ' untraced (the profiler added +76 %)' after the measured windows' step that heads the
    diagnosis, ' traced, +76 % over the untraced step' after the traces' where no phase timers
    could; nothing otherwise."""
    inflation = inflation_of(diagnosis)
    if inflation is None or inflation.value is None:
        return _maybe_traced(diagnosis)
    added = f"{inflation.value * 100:+.0f} %"
    if diagnosis.source == "traces":
        return f" traced, {added} over the untraced step"
    return f" untraced (the profiler added {added})"


def _maybe_traced(diagnosis: Diagnosis) -> str:
    """Traces that head the diagnosis as not inflated beyond the noise, yet ran longer than the
    measured steps by more than the minimum effect (`traces.uncleared_inflation`): ' traced
    (+16 % [-3, +36] over the untraced step: not measurable)', so the split is never read as
    the untraced run's without that caveat; nothing otherwise."""
    estimate = uncleared_inflation(diagnosis)
    if estimate is None or estimate.value is None:
        return ""
    low, high = (100 * (x or 0.0) for x in (estimate.low, estimate.high))
    return (
        f" traced ({estimate.value * 100:+.0f} % [{low:+.0f}, {high:+.0f}] over the untraced "
        "step: not measurable)"
    )


def _point(estimate: Estimate) -> str:
    if estimate.value is not None and estimate.measurable:
        return pct(estimate.value)
    if estimate.low == 0 and estimate.high == 0:
        return pct(0.0)
    return f"< {pct_bound(estimate.high)}" if estimate.high is not None else "unknown"


# after a straggler the run's own --inject-delay made (`StragglerVerdict.injected`): no surface
# shows the artificial straggler as a finding about the machine
INJECTED = " (injected: --inject-delay)"


def straggler_text(verdict: StragglerVerdict | None, ranks: int) -> str:
    """The straggler in one line, without a p-value (the test lives behind -v:
    `straggler_test_text`): 'Straggler: rank 1, compute in backward, +52.6 ms [49.9, 55.3]/step'
    (what it costs the others per step), then how that falls over the steps where the verdict
    says ('..., every 4th step +60 ms'); 'Straggler: rank 1,
    input, ...'; 'Straggler: rank 1, host (held off the CPU) +9.6 ms [8.1, 11.0]/step: check
    the host' (the time the host held it beyond its fair share); or, nobody named, 'Straggler:
    none (rank 0 +0.21 ms [-0.3, 0.7]/step: could be noise: its interval reaches 0)' / '...:
    below the 5% minimum effect (1.2 ms of a 24 ms step)'."""
    if verdict is None:
        return "Straggler: none (one rank)" if ranks < 2 else "Straggler: not tested"
    gap = seconds_text(verdict.gap_s, signed=True)
    pattern = f", {verdict.pattern}" if verdict.pattern else ""
    if verdict.named and verdict.kind == "communication":
        late = seconds_text(verdict.headline_gap(), signed=True)
        said = f"Straggler: rank {verdict.rank}, {_kind_text(verdict)}: the others wait {late}/step"
        return said + (INJECTED if verdict.injected else "")
    if verdict.named and verdict.kind == "host":
        held = seconds_text(verdict.headline_gap(), signed=True)
        said = f"Straggler: rank {verdict.rank}, {_kind_text(verdict)} {held}/step{pattern}"
        return said + (INJECTED if verdict.injected else ": check the host")
    if verdict.named:
        said = f"Straggler: rank {verdict.rank}, {_kind_text(verdict)}, {gap}/step{pattern}"
        return said + (INJECTED if verdict.injected else "")
    if verdict.candidate_rank is None or verdict.gap_s is None:
        return f"Straggler: not tested ({verdict.summary.removeprefix('no straggler test: ')})"
    if verdict.host_bound:  # a schema-12 verdict: the host's gap withdrew the name
        held = seconds_text(verdict.host_wait_s, signed=True)
        return (
            f"Straggler: none in the work (rank {verdict.candidate_rank} {gap}/step behind, "
            f"waited {held} longer for a CPU): check the host"
        )
    why = verdict.not_named or "not named"
    return f"Straggler: none (rank {verdict.candidate_rank} {gap}/step{pattern}: {why})"


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


def straggler_test_text(verdict: StragglerVerdict) -> str:
    """What -v adds: the test, its threshold and its p, and what decided the kind."""
    p = f"p = {verdict.p_value:.2g}" if verdict.p_value is not None else "no p (not tested)"
    floor = f"{ms(verdict.min_effect_s)}" if verdict.min_effect_s is not None else "?"
    text = f"{verdict.test}; this run: interval {seconds_text(verdict.gap_s, signed=True)}"
    text += f" against a minimum effect of {floor}; paired per-step test: {p}"
    if verdict.kind_basis:
        text += f"; kind {verdict.kind}: {verdict.kind_basis}"
    return text


def whatif_text(diagnosis: Diagnosis) -> str | None:
    """'What-if: rank 1 on par, steps up to 78.8 % [75.7, 82.1] shorter' (on par: no more own
    work per step than the median of the others)."""
    w = diagnosis.whatif
    if w is None or not w.named:
        return None
    verdict = diagnosis.straggler
    late = verdict is not None and verdict.kind == "communication"
    on_par = "with its collectives on time" if late else "on par"
    return f"What-if: rank {w.rank} {on_par}, steps up to {share_text(w.share)} shorter"


def finding_line(number: int, finding: Finding, injected: bool = False) -> str:
    """'  1. <title> (40.1 % of the step)'; a straggler finding the run's own delay made
    (`injected`) says so after its title."""
    cost = _point(finding.cost_share) if finding.cost_share else f"{finding.cost_pct:.1f} %"
    mark = INJECTED if injected and finding.category == "straggler" else ""
    return f">   {number}. {finding.title}{mark} ({cost})"


@dataclass(frozen=True)
class Sentence:
    """One line of a diagnosis' headline, as every surface shows it: what it says (`kind`:
    stall, split, straggler, caveat, whatif, disagreement), how loud it is (`level`: warn for
    something to act on, skip for a pointer to the details) and its words."""

    kind: Literal["stall", "split", "straggler", "caveat", "whatif", "disagreement"]
    level: Literal["info", "warn", "skip"]
    text: str


def acted(verdict: StragglerVerdict | None) -> bool:
    """A name, or a gap the host took ('check the host'): something to act on."""
    return verdict is not None and (verdict.named or bool(verdict.host_bound))


def headline(diagnosis: Diagnosis) -> list[Sentence]:
    """The diagnosis' lines in the order every surface prints them: sync stall, the step
    split, the straggler verdict (when there are peers or a verdict), the busy-machine caveat,
    the what-if and, when a cross-check disagrees, the one line saying so (the terminal's
    pointer to -v: `disagreement_text` points elsewhere)."""
    verdict = diagnosis.straggler
    out = [
        Sentence("stall", "info", sync_stall_text(diagnosis)),
        Sentence("split", "info", split_text(diagnosis)),
    ]
    if diagnosis.ranks > 1 or verdict is not None:
        level: Literal["info", "warn"] = "warn" if acted(verdict) else "info"
        out.append(Sentence("straggler", level, straggler_text(verdict, diagnosis.ranks)))
    if diagnosis.caveat:
        out.append(Sentence("caveat", "warn", diagnosis.caveat))
    if (whatif := whatif_text(diagnosis)) is not None:
        out.append(Sentence("whatif", "info", whatif))
    if diagnosis.disagreement:
        out.append(Sentence("disagreement", "skip", diagnosis.disagreement))
    return out


def caveat_text(caveat: str) -> str:
    """'Caveat: busy machine: ...' (the terminal's [CAVEAT] line, in a report)."""
    return f"Caveat: {caveat}"


def disagreement_text(diagnosis: Diagnosis, hint: str = REPORT_HINT) -> str | None:
    """The diagnosis' one line when a cross-check disagrees ('cross-checks disagree: ...'),
    pointing at `hint` (a report's appendix) where the stored line points at -v; None when
    none disagrees."""
    if not diagnosis.disagreement:
        return None
    return diagnosis.disagreement.replace(TERMINAL_HINT, hint)


def check_figure(check: CrossCheck) -> str | None:
    """A cross-check's figure ('12.3 % [10.1, 14.4]'), None when it has none."""
    return share_text(check.estimate) if check.estimate is not None else None
