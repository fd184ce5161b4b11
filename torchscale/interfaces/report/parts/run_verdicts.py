"""The verdict of a report without a benchmark sweep, never "no benchmark sweep" nor a sweep's
"no cell finished ok": a profiled run's words are its one stored `Diagnosis`' (diagnosis_text.py),
never a rival figure computed here (docs/reporting.md, "A report without a sweep gets its own
verdict"); a run with no diagnosis says why, as its analysis stored it."""

from __future__ import annotations

from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say, why
from torchscale.contracts.wording.comm import gate_words
from torchscale.contracts.wording.names import Peak, peak_text
from torchscale.contracts.wording.spell import gbps, tflops, with_unit
from torchscale.interfaces.report.diagnosis_text import (
    compute_word,
    split_text,
    straggler_text,
    sync_stall_text,
    whatif_text,
)
from torchscale.interfaces.report.model import Decision, Severity, Text, Usable
from torchscale.interfaces.report.parts.context import (
    Context,
    ProfileRef,
    first_screen_mfu,
    fmt,
    plural,
    present,
    records,
    run_label,
    throughput_text,
)
from torchscale.interfaces.report.parts.decision import profile_calls
from torchscale.interfaces.report.parts.findings import action_text
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.results.frame import cells_table

MAX_RUN_LINES = 6
RERUN_PROFILE = "rerun the profile on an idle node before acting on its findings"


def _named(ref: ProfileRef) -> bool:
    diagnosis = ref.diagnosis
    return bool(diagnosis and diagnosis.straggler and diagnosis.straggler.named)


def ordered_profiles(ctx: Context) -> list[ProfileRef]:
    """Profiled runs whose diagnosis names a straggler first, then the others, in read order."""
    return sorted(ctx.profiles, key=lambda ref: not _named(ref))


def verdict_text(ref: ProfileRef) -> str:
    """'tiny-mlp b8 x2 fp32 ddp (profiled run): Straggler: rank 1 backward +20.1 ms [19.8,
    20.4]/step, p = 0.00098': the diagnosis' straggler line (one rank: its step and the step's
    largest part, the whole split a line under it), with its caveat; for a run without one,
    why there is none."""
    diagnosis = ref.diagnosis
    if diagnosis is None:
        reason = why(ref.entry.analysis.unavailable.get("diagnosis"))
        return f"{ref.label}: no diagnosis" + (f" ({reason})" if reason else "")
    main = (
        straggler_text(diagnosis.straggler, diagnosis.ranks)
        if diagnosis.ranks > 1 or diagnosis.straggler is not None
        else split_text(diagnosis, compute_word(ref.entry.result), largest=True)
    )
    said = verdict_words.caveat(diagnosis)
    caveat = f" (caveat: {said})" if said else ""
    return f"{ref.label}: {main}{caveat}"


def profile_lines(ctx: Context) -> list[Text]:
    """One line per profiled run (named stragglers first), as `verdict_text`."""
    return [
        Text(text=verdict_text(ref), severity="warn" if _named(ref) else "info")
        for ref in ordered_profiles(ctx)
    ]


def _detail_lines(ref: ProfileRef) -> list[Text]:
    """The lead run's other diagnosis lines: sync stall, step split, what-if."""
    diagnosis = ref.diagnosis
    if diagnosis is None:
        return []
    lines = [sync_stall_text(diagnosis), split_text(diagnosis, compute_word(ref.entry.result))]
    return [Text(text=line) for line in [*lines, *present(whatif_text(diagnosis))]]


def figures_text(ref: ProfileRef) -> str | None:
    """'gpt2 b16 x1 bf16 ddp (profiled run, compiled) measured 466 samples/s (spread unknown),
    MFU 41.3 % of 989 TFLOP/s, 9.3 GiB peak allocated and 10.0 GiB peak reserved per rank':
    the figures its result holds, read through the cells table's row as a sweep's are (one
    definition of each), so a profile-only report carries them too; None without a result."""
    result = ref.entry.result
    if result is None or result.throughput is None:
        return None
    row = records(cells_table([result]))[0]
    repeats = len(result.throughput.repeats)
    rate = throughput_text(row) if repeats > 1 else fmt(result.throughput.samples_per_s, "readable")
    parts = [with_unit(rate or "-", "samples/s") + ("" if repeats > 1 else " (one window)")]
    mfu = first_screen_mfu(row)
    if mfu is not None:
        peak = finite(row.get("peak_tflops_per_device"))
        measured = not mfu.startswith("not measurable")
        parts.append(f"MFU {mfu}" + (f" of {tflops(peak)}" if peak and measured else ""))
    kinds: tuple[Peak, ...] = ("allocated", "reserved")
    peaks = [(k, finite(row.get(f"peak_{k}_bytes"))) for k in kinds]
    said = [peak_text(v, k, "").strip() for k, v in peaks if v is not None]
    if said:
        parts.append(f"{' and '.join(said)} per rank")
    return f"{ref.label} measured {', '.join(parts)}"


def _profile_verdict(ctx: Context) -> tuple[Text, Decision]:
    refs = ordered_profiles(ctx)
    lead = refs[0]
    caveats = [c for ref in refs if (c := verdict_words.caveat(ref.diagnosis))]
    usable: Usable = "with care" if caveats or ctx.unanalysed else "yes"
    severity: Severity = "warn" if _named(lead) or caveats else "info"
    headline = Text(text=verdict_text(lead) + ".", severity=severity)
    measured = [Text(text=t) for t in present(figures_text(lead))]
    lines = measured + _detail_lines(lead) + profile_lines(ctx)[1:MAX_RUN_LINES]
    lines += [
        Text(text=f"Profile {u.name}: no analysis ({u.reason})", severity="warn")
        for _, u in ctx.unanalysed
    ]
    if caveats:
        actions = [Text(text=f"{RERUN_PROFILE[:1].upper()}{RERUN_PROFILE[1:]}.", severity="warn")]
    else:  # the lead run's costliest finding, as the report holds it (its advice applies)
        top = next((f for f in ctx.findings if f.source == lead.label), None)
        actions = [Text(text=action_text(top) + ".")] if top is not None else []
    decided = profile_calls(ctx, usable)
    return headline, Decision(usable=usable, models=lines, actions=actions, calls=decided)


def _comm_line(label: str, run: CommResult) -> list[Text]:
    """'torchscale 2x gloo float32: all_reduce peaks at 1.23 GB/s bus bandwidth at 64.0 MiB,
    0.81 GB/s on average over 20 sizes' per op (a one-rank run: its time only)."""
    lines = []
    for summary in run.summaries:
        ok = [r for r in run.rows if r.op == summary.op and r.status == "ok"]
        if run.world_size < 2:
            lines.append(
                Text(text=f"{label}: {summary.op}, one rank: time only (nothing crosses a link)")
            )
            continue
        measured = [r for r in ok if r.busbw_gbps is not None]
        if not measured:
            lines.append(Text(text=f"{label}: {summary.op}: no size finished ok", severity="bad"))
            continue
        peak = max(measured, key=lambda r: r.busbw_gbps or 0.0)
        average = (
            f", {gbps(summary.avg_busbw_gbps)} on average over {plural(summary.rows, 'size')}"
            if summary.avg_busbw_gbps is not None
            else ""
        )
        lines.append(
            Text(
                text=f"{label}: {summary.op} peaks at {gbps(peak.busbw_gbps or 0.0)} bus "
                f"bandwidth at {fmt(peak.size_bytes, 'bytes')}{average}"
            )
        )
    return lines


def _comm_verdict(ctx: Context) -> tuple[Text, Decision]:
    runs = ctx.comm_runs
    multi = len({experiment for experiment, _ in runs}) > 1
    problems: list[str] = []
    cautions: list[str] = []
    lines: list[Text] = []
    for experiment, run in runs:
        label = run_label(experiment, run, multi)
        if run.error or run.status != "ok":
            problems.append(f"{label} stopped early ({run.status}): {run.error or 'no reason'}")
        if run.wrong_total:
            problems.append(f"{label}: {plural(run.wrong_total, 'wrong element')} in the check")
        if not run.rows and not run.error:
            problems.append(f"{label}: no message size measured")
        if run.gate == "failed":
            problems.append(f"{label}: bandwidth gate failed: {gate_words(run)}")
        not_ok = sum(r.status != "ok" for r in run.rows)
        if not_ok:
            cautions.append(f"{label}: {not_ok} of {plural(len(run.rows), 'size')} not ok")
        cautions += [f"{label}: {say(warning)}" for warning in run.warnings]
        lines += _comm_line(label, run)
    count = plural(len(runs), "comm run")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        text = (
            f"These bandwidth figures cannot be used: {problems[0]}{more}: fix it and rerun "
            "`torchscale comm`."
        )
        usable: Usable = "no"
    elif cautions:
        more = f" (and {len(cautions) - 1} more)" if len(cautions) > 1 else ""
        text = f"These bandwidth figures can be used with care: {cautions[0]}{more}."
        usable = "with care"
    else:
        checked = all(run.check for _, run in runs)
        how = ", every result checked element by element" if checked else ""
        text = f"These bandwidth figures can be used: {count}, every size ok{how}."
        usable = "yes"
    severity: Severity = "bad" if usable == "no" else ("warn" if cautions else "good")
    return Text(text=text, severity=severity), Decision(usable=usable, models=lines[:MAX_RUN_LINES])


def run_verdict(ctx: Context) -> tuple[Text | None, Decision | None]:
    """A source without sweep cells: its profiled runs' verdict, else its comm runs'; (None,
    None) when it holds neither."""
    if ctx.profiles:
        return _profile_verdict(ctx)
    if ctx.comm_runs:
        return _comm_verdict(ctx)
    if ctx.unanalysed:
        names = ", ".join(u.name for _, u in ctx.unanalysed)
        text = f"No figures to use: the profiled run(s) {names} have no analysis (see Failures)."
        return Text(text=text, severity="bad"), Decision(usable="nothing to judge")
    return None, None
