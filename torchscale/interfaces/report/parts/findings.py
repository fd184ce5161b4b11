"""The report's findings, ranked by cost (docs/reporting.md, "What is in it"): each run's diagnosis'
own (a profile's from its analysis, whose result.json holds the same diagnosis: one verdict per
run), plus `throttling_finding`, each with its run's busy-machine caveat.
Shared by the summary (top lines) and the bottlenecks section (all of them)."""

from __future__ import annotations

from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import POWER_CAP
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Problem, StragglerVerdict
from torchscale.contracts.wording import diagnosis_problems, reason_of, say, spell, why
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.interfaces.report.model import ReportFinding
from torchscale.interfaces.report.parts.context import (
    Context,
    ProfileRef,
    cost_severity,
    fmt,
    names,
    records,
)
from torchscale.offline.analysis.diagnosis.findings import MIN_COST_FRACTION


def caveat_of(result: CellResult) -> str | None:
    """The run's busy-machine caveat: its diagnosis'."""
    return verdict_words.caveat(result.diagnosis)


def no_finding_text(ctx: Context) -> str:
    """What 'no finding' means for these runs: no diagnosis finding, no throttling; how many
    runs have no diagnosis to judge."""
    text = (
        "no run's diagnosis found a cost of at least "
        f"{fmt(MIN_COST_FRACTION, 'ratio_pct')} of the step above noise and no throttled GPU"
    )
    diagnoses = [ctx.result(row).diagnosis for row in records(ctx.ok)]
    without = sum(1 for d in diagnoses if d is None)
    if without:
        text += f"; runs without a diagnosis, so not judged: {without}"
    unjudged: dict[str, list[str]] = {}  # why it was not measured -> the cells
    for row in records(ctx.ok):
        bound = ctx.result(row).host_bound
        if row["device"] == "cuda" and bound is not None and bound.host_bound is None:
            unjudged.setdefault(_unmeasured_why(bound.reason) or str(bound.method), []).append(
                ctx.label(row)
            )
    if unjudged:  # 'no bottleneck' must not read as 'not host-bound'
        cells = sum(len(c) for c in unjudged.values())
        said = "; ".join(f"{names(c)}: {reason}" for reason, c in unjudged.items())
        text += (
            f"; whether the GPU waits for the host was not measured in {cells} GPU cell(s) ({said})"
        )
    return text


def _unmeasured_why(reason: Finding | None) -> str | None:
    """Why the probe measured nothing, never a figure the fallback left unjudged (an MFU above
    the host-bound floor judges nothing: a green line must not carry it)."""
    if reason is not None and reason.code == "host_bound.not_judged":
        reason = reason_of(reason.figures["why"])
    return why(reason)


def _injected_note(result: CellResult, rank: int | None) -> str | None:
    for delay in result.injected_delays:
        if rank is None or delay.rank == rank:
            return (
                f"artificial: --inject-delay made rank {delay.rank} sleep "
                f"{spell.ms_plain(delay.ms)} in its {delay.phase} phase every step"
            )
    return None


# what an artificial straggler asks of the reader: nothing about the host (its advice to check
# the host's cores and clocks would send them after a delay the run made itself)
INJECTED_ADVICE = (
    "Nothing to fix on the machine: this straggler is artificial (--inject-delay); run "
    "without it to measure the host."
)
INJECTED_GENERIC = "artificial: --inject-delay delayed this rank on purpose"


def diagnosis_finding(
    item: Problem,
    *,
    source: str,
    caveat: str | None,
    injected: CellResult | None = None,
    straggler_rank: int | None = None,
    verdict_injected: bool = False,
) -> ReportFinding:
    """One of a diagnosis' findings as the report shows it: its own title, cost, evidence and fix;
    the caveat as its own field (not repeated in the evidence); marked artificial, with no advice
    about the host, when the run's own --inject-delay makes the straggler (a delay `injected`
    records on the straggler's rank, said in its own words, or the verdict's `verdict_injected`)."""
    evidence = [line for line in item.evidence if line != caveat]
    # a cost that is only bounded (not measurable) is shown as no figure, never as its bound
    bounded = item.cost_share is not None and not item.cost_share.measurable
    cost_pct = None if bounded else item.cost_pct
    title = item.title
    severity = cost_severity(cost_pct)
    advice = diagnosis_problems.recommendation(item.finding, diagnosis_problems.run_of(injected))
    if item.category == "straggler":
        note = _injected_note(injected, straggler_rank) if injected is not None else None
        if note is None and verdict_injected:
            note = INJECTED_GENERIC
        if note is not None:
            evidence.insert(0, note)
            severity = "info"
            title = f"{title} (injected delay)"
            advice = INJECTED_ADVICE
    return ReportFinding(
        title=title,
        cost_pct=cost_pct,
        source=source,
        evidence=evidence,
        recommendation=advice,
        severity=severity,
        caveat=caveat,
        group=diagnosis_problems.group(item.finding),
    )


def profile_findings(ref: ProfileRef) -> list[ReportFinding]:
    """A profile's findings as its analysis holds them (the diagnosis' findings for its
    target), with its caveat, marked artificial when an injected delay makes the straggler."""
    analysis, diagnosis = ref.entry.analysis, ref.diagnosis
    verdict = diagnosis.straggler if diagnosis is not None else None
    caveat = verdict_words.caveat(diagnosis)
    result = ref.entry.result
    if caveat is None and result is not None:
        caveat = caveat_of(result)
    return _findings(analysis.findings, ref.label, caveat, result, verdict)


def cell_findings(result: CellResult, label: str) -> list[ReportFinding]:
    """A sweep cell's diagnosis' findings, in its order."""
    diagnosis = result.diagnosis
    if diagnosis is None:
        return []
    caveat = verdict_words.caveat(diagnosis)
    return _findings(diagnosis.findings, label, caveat, result, diagnosis.straggler)


def _findings(
    items: list[Problem],
    source: str,
    caveat: str | None,
    result: CellResult | None,
    verdict: StragglerVerdict | None,
) -> list[ReportFinding]:
    """`diagnosis_finding` of each item, with the straggler a named verdict names."""
    return [
        diagnosis_finding(
            item,
            source=source,
            caveat=caveat,
            injected=result,
            straggler_rank=verdict.rank if verdict is not None and verdict.named else None,
            verdict_injected=bool(verdict is not None and verdict.injected),
        )
        for item in items
    ]


def throttling_finding(result: CellResult, label: str) -> ReportFinding | None:
    """GPU clocks held down by power, heat or hardware during the measured windows (the telemetry's
    clocks-event reasons). No cost: the share of samples throttled is not a share of the step."""
    telemetry = result.telemetry
    if telemetry is None or not telemetry.throttled:
        return None
    evidence = []
    for rank in telemetry.ranks:
        if not rank.throttle_reasons:
            continue
        line = f"rank {rank.rank} ({rank.gpu_name or rank.device}): " + (
            (say(rank.clock_finding) if rank.clock_finding else None)
            or f"{', '.join(rank.throttle_reasons)} set in "
            f"{fmt(rank.throttled_fraction, 'ratio_pct')} of {rank.samples} samples"
        )
        if rank.sm_clock_mhz is not None:
            line += f"; SM clock mean {spell.mhz(rank.sm_clock_mhz.mean)}"
        if rank.temperature_c is not None:
            line += f", up to {spell.celsius(rank.temperature_c.max)}"
        if rank.power_w is not None:
            line += f", power mean {spell.watts(rank.power_w.mean)}"
        evidence.append(line)
    evidence.append(
        f"sampled every {spell.ms_plain(telemetry.interval_ms)} over {telemetry.windows} "
        "measured window(s)"
    )
    reasons = ", ".join(telemetry.throttle_reasons)
    if set(telemetry.throttle_reasons) <= {POWER_CAP}:
        # held by its power limit: how a GPU keeps to it under dense work, not a fault
        title = f"{label}: GPU clocks held down by the power limit ({reasons})"
        advice = (
            "The figures were measured below full clocks: the GPU lowered its SM clock to stay "
            "within its power limit (the evidence says which limit and how far). At the default "
            "limit under dense work this is normal power management, not a fault, but figures "
            "from GPUs or runs at other limits or clocks do not compare; a limit below the "
            "default is a site cap (`nvidia-smi -q -d POWER`). In a multi-GPU cell the GPU "
            "held lowest becomes the straggler every rank waits for."
        )
    else:
        title = f"{label}: GPU clocks throttled ({reasons})"
        advice = (
            "The figures were measured below full clocks. Thermal reasons point at cooling or "
            "airflow, hardware slowdown at power delivery or the board (`nvidia-smi -q -d "
            "PERFORMANCE,POWER,TEMPERATURE`); in a multi-GPU cell a throttled GPU becomes the "
            "straggler every rank waits for."
        )
    return ReportFinding(
        title=title,
        cost_pct=None,
        source=label,
        evidence=evidence,
        recommendation=advice,
        severity="warn",
        group=f"throttling: {reasons}",
    )


def rank_findings(findings: list[ReportFinding]) -> list[ReportFinding]:
    """Highest cost first; findings without a cost last; ties by title."""
    return sorted(
        findings, key=lambda f: (f.cost_pct is None, -(f.cost_pct or 0.0), f.title, f.source)
    )


# where the whole advice is read: the first screen gives its first words only
HOW = "how: the Bottlenecks section, with --full"


def action_text(finding: ReportFinding) -> str:
    """A finding as the first screen's 'What to do' line, in plain words: its title, cost, run
    and the plain first clause of its advice ('Exposed gloo communication (70.7 % of the
    step), in tiny-gpt2 b16 x2 fp32 ddp: hide or shrink gradient communication (how: ...)');
    the technical detail after the
    clause (bucket_cap_mb, no_sync(), comm hooks) stays with the finding in Bottlenecks."""
    cost = (
        f" ({spell.percent(finding.cost_pct)} of the step)" if finding.cost_pct is not None else ""
    )
    # the run it is of: its figures are that run's, not the best configuration's above it
    named = finding.title.startswith(finding.source)  # a title that names its run already
    said = f"{finding.title}{cost}" + ("" if named else f", in {finding.source}")
    advice = short_advice(finding.recommendation)
    if not advice:
        return said
    return f"{said}: {advice[:1].lower()}{advice[1:]} ({HOW})"


def short_advice(recommendation: str | None) -> str:
    """The plain first clause of a recommendation: every finding's advice reads 'what to do: how, in
    technical terms' ('Hide or shrink gradient communication: DDP bucket_cap_mb ...')."""
    if not recommendation:
        return ""
    return recommendation.split(": ", 1)[0].split("; ", 1)[0].rstrip(".")


def collect_findings(ctx: Context) -> list[ReportFinding]:
    """Every run's findings, ranked by cost (see the module's docstring): a profile's result.json
    is not read for a second verdict; per cell also what the diagnosis does not cover."""
    findings: list[ReportFinding] = []
    for ref in ctx.profiles:
        findings += profile_findings(ref)
    for row in records(ctx.ok):
        result, label = ctx.result(row), ctx.label(row)
        found = [throttling_finding(result, label), *cell_findings(result, label)]
        caveat = caveat_of(result)
        findings += [
            f if f.caveat or caveat is None else f.model_copy(update={"caveat": caveat})
            for f in found
            if f is not None
        ]
    return rank_findings(findings)
