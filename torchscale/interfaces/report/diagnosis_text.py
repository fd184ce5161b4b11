"""The run's one diagnosis in words: the sentences every surface prints for it.

The diagnosis is computed once (torchscale/offline/analysis/diagnosis/); this module only writes its
figures, so the terminal (profile and sweep lines), the reports and their formats say the same thing
with the same digits: a figure with its interval as the tables write it, '±' half its width where it
is about symmetric and [low, high] where it is lopsided or a gap's reaches 0, cut by the one
rounding rule (`figures.round_figure`: two significant digits of the half-width), a point value as
a share with one decimal or milliseconds with three significant figures. The terminal's lines around
these sentences (levels, what -v adds) are console/diagnosis.py's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import (
    CrossCheck,
    Diagnosis,
    Estimate,
    Problem,
    StragglerVerdict,
)
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say, spell
from torchscale.contracts.wording.cell_reasons import LAUNCH_TIME

# the straggler line is the wording layer's; re-exported for the report's parts
from torchscale.contracts.wording.diagnosis_straggler import INJECTED as INJECTED
from torchscale.contracts.wording.diagnosis_straggler import straggler_text as straggler_text
from torchscale.contracts.wording.figures import seconds_text, share_figure, share_text
from torchscale.contracts.wording.spell import ms_or_s, pct, pct_bound
from torchscale.offline.analysis.diagnosis.inflation import (
    disagreement,
    inflation_of,
    uncleared_inflation,
)

PART_WORDS = {
    "compute": "compute",
    "data": "data",
    "wait_for_peers": "waiting",
    "exposed_transfer": "exposed comm",
    "rest": "rest",
}
VERDICT_WORDS = {True: "agrees", False: "disagrees", None: "not judged"}
# where a disagreeing cross-check is shown: the diagnosis stores the terminal's pointer
REPORT_HINT = "(the appendix lists them)"
TINY_PART = 0.001  # a part of the step split under this share reads '< 0.1 %'


def compute_word(result: CellResult | None) -> str:
    """The step split's name for its compute part, decided once for every surface from the
    cell's host-bound record: 'launch time' on a host-bound GPU (the host issuing kernels,
    not the GPU computing), 'compute' otherwise (no result: a trace alone)."""
    record = result.host_bound if result is not None else None
    return LAUNCH_TIME if record is not None and record.host_bound else PART_WORDS["compute"]


def sync_stall_text(diagnosis: Diagnosis) -> str:
    """The seed's line: 'Sync stall time: 40.1 % ±1.5 %' (waiting for peers, mean over
    ranks, share of the step)."""
    part = diagnosis.part("wait_for_peers")
    return f"Sync stall time: {share_text(part.share if part else None)}"


def split_text(
    diagnosis: Diagnosis, compute: str = PART_WORDS["compute"], largest: bool = False
) -> str:
    """'Step 66.7 ms: compute 57.2 %, data 0.0 %, waiting 40.1 %, exposed comm 1.6 %, rest
    1.1 %' (point values; each part's interval is in the JSON and -v); `compute` names the
    compute part (`compute_word`: 'launch time' on a host-bound GPU). `largest`: the largest
    part only ('Step 66.7 ms: compute 57.2 %'), a headline's share of the split."""
    words = PART_WORDS | {"compute": compute}
    shown = diagnosis.parts
    if largest and shown:
        shown = [max(shown, key=lambda p: p.share.value or 0.0)]
    parts = ", ".join(f"{words[p.name]} {_point(p.share)}" for p in shown)
    step = ms_or_s(diagnosis.step_s.value) if diagnosis.step_s.value is not None else "?"
    return f"Step {step}{_traced(diagnosis)}: {parts}"


def _traced(diagnosis: Diagnosis) -> str:
    """Where a profiler slowed the traced steps beyond the noise (`inflation.inflation_of`):
    ' untraced (the profiler added +76 %)' after the measured windows' step that heads the
    diagnosis, ' traced, +76 % over the untraced step' after the traces' where no phase timers
    could; nothing otherwise."""
    inflation = inflation_of(diagnosis)
    if inflation is None or inflation.value is None:
        return _maybe_traced(diagnosis)
    added = spell.change_whole(inflation.value)
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
    low, high = (spell.signed_whole(100 * (x or 0.0)) for x in (estimate.low, estimate.high))
    return (
        f" traced ({spell.change_whole(estimate.value)} [{low}, {high}] over the "
        "untraced step: not measurable)"
    )


def _point(estimate: Estimate) -> str:
    if estimate.low == 0 and estimate.high == 0 and estimate.value == 0.0 and estimate.reason:
        return "none"  # zero by its reason (one rank: no peers), as its Sync stall says
    if estimate.value is not None and estimate.measurable:
        if 0 < estimate.value < TINY_PART:  # '0.0054 %' of a split says nothing more
            return f"< {pct(TINY_PART)}"
        if 1 - TINY_PART < estimate.value < 1:  # nor does '99.975 %'
            return f"> {pct(1 - TINY_PART)}"
        return share_figure(estimate.value, estimate.low, estimate.high)
    if estimate.low == 0 and estimate.high == 0:
        return pct(0.0)
    return f"< {pct_bound(estimate.high)}" if estimate.high is not None else "unknown"


def straggler_test_text(verdict: StragglerVerdict) -> str:
    """What -v adds: the test, its threshold and its p, and what decided the kind."""
    p = spell.p_value(verdict.p_value) if verdict.p_value is not None else "no p (not tested)"
    floor = f"{ms_or_s(verdict.min_effect_s)}" if verdict.min_effect_s is not None else "?"
    text = f"{say(verdict.test)}; this run: interval {seconds_text(verdict.gap_s, signed=True)}"
    text += f" against a minimum effect of {floor}; paired per-step test: {p}"
    if verdict.kind_rule is not None:
        text += f"; kind {verdict.kind}: {say(verdict.kind_rule)}"
    if verdict.device is not None:  # a compute straggler's calibration (or why none was read)
        text += f"; device: {say(verdict.device)}"
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


def finding_line(number: int, finding: Problem, injected: bool = False) -> str:
    """'  1. <title> (40.1 % of the step)'; a straggler finding the run's own delay made
    (`injected`) says so after its title."""
    cost = _point(finding.cost_share)
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


def headline(diagnosis: Diagnosis, compute: str = PART_WORDS["compute"]) -> list[Sentence]:
    """The diagnosis' lines in the order every surface prints them: sync stall, the step
    split, the straggler verdict (when there are peers or a verdict), the busy-machine caveat,
    the what-if and, when a cross-check disagrees, the one line saying so (the terminal's
    pointer to -v: `disagreement_text` points elsewhere). A straggler the verdict names is
    the answer, so it and its what-if come first, the figures that carry them after."""
    verdict = diagnosis.straggler
    figures = [
        Sentence("stall", "info", sync_stall_text(diagnosis)),
        Sentence("split", "info", split_text(diagnosis, compute)),
    ]
    answer = []
    if diagnosis.ranks > 1 or verdict is not None:
        level: Literal["info", "warn"] = "warn" if acted(verdict) else "info"
        answer.append(Sentence("straggler", level, straggler_text(verdict, diagnosis.ranks)))
    if caveat := verdict_words.caveat(diagnosis):
        answer.append(Sentence("caveat", "warn", caveat))
    if (whatif := whatif_text(diagnosis)) is not None:
        answer.append(Sentence("whatif", "info", whatif))
    out = [*answer, *figures] if acted(verdict) else [*figures, *answer]
    if (line := disagreement(diagnosis.cross_checks)) is not None:
        out.append(Sentence("disagreement", "skip", line))
    return out


def caveat_text(caveat: str) -> str:
    """'Caveat: busy machine: ...' (the terminal's [CAVEAT] line, in a report)."""
    return f"Caveat: {caveat}"


def disagreement_text(diagnosis: Diagnosis, hint: str = REPORT_HINT) -> str | None:
    """The diagnosis' one line when a cross-check disagrees ('cross-checks disagree: ...'), pointing
    at `hint` (a report's appendix) where the terminal's points at -v; None when none disagrees.
    Read from the stored checks by today's rule (`disagreement`), as `headline` does: a result
    stored before it may hold a line that repeated the Step line's inflation."""
    return disagreement(diagnosis.cross_checks, hint)


def check_figure(check: CrossCheck) -> str | None:
    """A cross-check's figure ('12.3 % [10.1, 14.4]'), None when it has none."""
    return share_text(check.estimate) if check.estimate is not None else None
