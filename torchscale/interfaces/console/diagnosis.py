"""The run's one diagnosis as terminal lines (sweep and profile): the headline of
`report/diagnosis_text.py` (its sentences and levels, written once for every surface) with the
terminal's tags, and what `-v` adds; the findings by title.
"""

from __future__ import annotations

from torchscale.contracts.schema.diagnosis import Diagnosis, Problem
from torchscale.contracts.wording import diagnosis_problems
from torchscale.contracts.wording.diagnosis_checks import check_label, detail
from torchscale.contracts.wording.figures import seconds_text, share_text
from torchscale.contracts.wording.spell import ms_or_s
from torchscale.interfaces.console.lines import Line
from torchscale.interfaces.report.diagnosis_text import (
    PART_WORDS,
    VERDICT_WORDS,
    check_figure,
    finding_line,
    headline,
    straggler_test_text,
)


def diagnosis_lines(
    diagnosis: Diagnosis | None,
    why_not: str | None,
    *,
    verbose: bool,
    compute: str = PART_WORDS["compute"],
) -> list[Line]:
    """The diagnosis as terminal lines: sync stall, step split (its compute part named
    `compute`, `diagnosis_text.compute_word`), straggler, its caveat, the what-if and, when
    a cross-check disagrees, one line saying so; `verbose` adds the per-rank waits, what
    decided and every cross-check."""
    if diagnosis is None:
        return [Line("skip", f"> [ANALYSIS] Diagnosis: unavailable ({why_not})")] if why_not else []
    lines = []
    for sentence in headline(diagnosis, compute):
        if sentence.kind == "disagreement":
            if not verbose:  # -v shows every cross-check instead
                lines.append(Line("skip", f"> [NOTE] {sentence.text}"))
            continue
        tag = "[CAVEAT]" if sentence.kind == "caveat" else "[ANALYSIS]"
        lines.append(Line(sentence.level, f"> {tag} {sentence.text}"))
    if verbose:
        lines += verbose_lines(diagnosis)
    return lines


def verbose_lines(diagnosis: Diagnosis) -> list[Line]:
    """What -v adds: what decided, the per-rank waits, each part's interval, the verdict in
    full and every cross-check."""
    parts = ", ".join(f"{PART_WORDS[p.name]} {share_text(p.share)}" for p in diagnosis.parts)
    over = f"{diagnosis.steps} steps of {diagnosis.ranks} rank(s)"
    details = [f"decided by the {diagnosis.source} ({over})", f"parts: {parts}"]
    if diagnosis.rank_waits:
        waits = ", ".join(f"rank {w.rank} {share_text(w.share)}" for w in diagnosis.rank_waits)
        details.append(f"waiting by rank (share of its own step): {waits}")
    if (straggler := diagnosis.straggler) is not None:
        details.append(f"straggler test: {straggler_test_text(straggler)}")
    w = diagnosis.whatif
    if w is not None:
        who = f"rank {w.rank}" + ("" if w.named else " (largest gap, not named)")
        cap = (
            f"capped by its extra work, {ms_or_s(w.extra_work_s)}"
            if w.extra_work_s is not None
            else "the others' wait for its late collectives"
        )
        details.append(
            f"what-if, {who}: saves {seconds_text(w.saved_s)} per step, "
            f"{share_text(w.share)} of the step ({cap})"
        )
    lines = [Line("skip", f"> [DETAIL] {text}") for text in details]
    for check in diagnosis.cross_checks:
        figure = f"{shown}, " if (shown := check_figure(check)) is not None else ""
        said = f"{VERDICT_WORDS[check.agrees]}: {detail(check.detail)}"
        text = f"> [CHECK] {check_label(check.check)}: {figure}{said}"
        lines.append(Line("info" if check.agrees is not False else "warn", text))
    return lines


def findings_lines(
    findings: list[Problem],
    *,
    verbose: bool,
    heading: str = "Found {n} bottleneck(s):",
    injected: bool = False,
    caveat: str | None = None,
    run: diagnosis_problems.Run | None = None,
) -> list[Line]:
    """'Found N bottleneck(s):' and one line each (a straggler finding marked when the run's
    own --inject-delay made it: `injected`); `verbose` adds evidence (a straggler's with the
    diagnosis' `caveat`) and the fix, for the `run` it was found in (problems.Run)."""
    # no findings, no list: the heading's colon would announce one
    heading = heading.format(n=len(findings))
    lines = [Line("info", f"> [ANALYSIS] {heading if findings else heading.rstrip(':')}")]
    for number, finding in enumerate(findings, 1):
        lines.append(Line("warn", finding_line(number, finding, injected)))
        if verbose:
            evidence = finding.evidence
            if finding.category == "straggler" and caveat and caveat not in evidence:
                evidence.append(caveat)
            lines += [Line("info", f">      evidence: {item}") for item in evidence]
            fix = diagnosis_problems.recommendation(finding.finding, run)
            lines.append(Line("info", f">      fix: {fix}"))
    return lines
