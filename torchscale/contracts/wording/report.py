"""Words for the report's and the console's first screen: the report's calls, the decision line
(`decision.*`, one buy-or-fix call per model, offline/analysis/decision.py) and a
configuration's lead over the next (`lead.*`, offline/analysis/ranking.py), and the regression
count's note; whether the numbers can be used (`usable.*`, `usability.*`), the headline's lines
(`headline.*`), the executive summary's cards and lines (`summary.*`) and the sweep's live table
(`live.*`). The interface modules decide which clause applies and count the cells; the words,
from a whole sentence to a table's one-word state, are here (`words(code, **figures)`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Figures, Phrase, Phrases, render, say
from torchscale.contracts.wording.figures import (
    change_text,
    figure_with_interval,
    too_wide,
    value_format,
)
from torchscale.contracts.wording.spell import (
    count_of,
    format_value,
    one_decimal_range,
    pct,
    pct_whole,
    points,
    repeats_text,
)

# Words for the decision line: one buy-or-fix call per model (offline/analysis/decision.py,
# docs/reporting.md "The decision line"). Figures: `model`; a scaling call's `basis`
# ('measured' or 'forecast'), `base` and `world` (GPU counts), `efficiency` with `low` and
# `high`, `good` (the efficiency more GPUs pay from), `cost_per_m_tokens` (None: no price), and a
# forecast's `measured_at`, `scored` and `held`; an MFU call's `mfu`, `low`, `high`, `gpu`,
# the reference's `reference_model`, `reference_batch`, `reference_mfu` (its rounds' median),
# `reference_rounds`, `fraction` and `source`, and against it `gap` with `gap_low` and
# `gap_high` (points of MFU: the reference's band less the cell's interval); a cell without a
# reference its `gpu`, `batch`, `precision` and `compiled`; a share's `share`, `low`, `high`.


def _pct(figures: Mapping[str, Any], value: str = "efficiency") -> str:
    """'91.0 % [88.0, 93.0]', '91.0 % ±2.5 %': as every interval is spelled."""
    return figure_with_interval(
        figures[value], figures["low"], figures["high"], value_format("ratio_pct")
    )


def _cost(figures: Mapping[str, Any]) -> str:
    cost = figures.get("cost_per_m_tokens")
    if cost is None:
        return ""
    return f"; {format_value(cost, 'money')} per M tokens at {figures['world']} GPUs"


def _span(figures: Mapping[str, Any]) -> str:
    """'2 -> 8 GPUs keeps 91.0 % [88.0, 93.0] of linear (measured)', or '... by the forecast:
    measured at 2 (3 forecasts scored, 3 held)'."""
    said = f"{figures['base']} -> {figures['world']} GPUs keeps {_pct(figures)} of linear"
    if figures.get("basis") != "forecast":
        return f"{said} (measured){_cost(figures)}"
    at = ", ".join(str(w) for w in figures.get("measured_at") or [figures["base"]])
    record = f"{figures['scored']} forecasts scored, {figures['held']} held"
    return f"{said} by the forecast: measured at {at} ({record}){_cost(figures)}"


def _buy(figures: Mapping[str, Any]) -> str:
    return f"{figures['model']}: more GPUs pay: {_span(figures)}"


def _fix_scaling(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: fix the scaling before buying GPUs: {_span(figures)}, under "
        f"{pct(figures['good'])}"
    )


def _borderline(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: no buy-or-fix call: {_span(figures)}, across the "
        f"{pct(figures['good'])} line"
    )


# "40.2 %, a plain PyTorch gpt2 loop's at batch 16 on an H100 (benchmarks/workload_reference.py)":
# where the figure was measured is the finding's `source`, cited in docs/reporting.md.
_REFERENCE = (
    "{reference_mfu:share}, a plain PyTorch {reference_model} loop's at batch {reference_batch} "
    "on an {gpu} (benchmarks/workload_reference.py)"
)


def _gap(figures: Mapping[str, Any], above: bool = False) -> str:
    """'4.2 pts ±2.8 pts': how far the cell's MFU is below the reference's band (`above`: the
    same gap turned round, how far above it)."""
    gap, low, high = figures["gap"], figures["gap_low"], figures["gap_high"]
    if above:
        gap, low, high = -gap, -high, -low
    return figure_with_interval(gap, low, high, value_format("pts"))


def _fix_mfu(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: fix the step before buying GPUs: MFU {_pct(figures, 'mfu')} is "
        f"low, under {pct(figures['fraction'])} of {render(_REFERENCE, figures)}"
    )


def _step_on_par(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: the step is on par: MFU {_pct(figures, 'mfu')} against "
        f"{render(_REFERENCE, figures)}; measure 2 GPUs or more before buying"
    )


def _step_below(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: the step is below the reference by {_gap(figures)}: MFU "
        f"{_pct(figures, 'mfu')} against {render(_REFERENCE, figures)}"
    )


def _step_above(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: the step is above the reference by {_gap(figures, True)}: MFU "
        f"{_pct(figures, 'mfu')} against {render(_REFERENCE, figures)}; measure 2 GPUs or "
        "more before buying"
    )


def _no_interval(figures: Mapping[str, Any]) -> str:
    """One measured window, no interval (a profile's, whatever its flags: a benchmark's)."""
    where = "`torchscale benchmark` with " if figures.get("profiled") else ""
    return (
        f"{figures['model']}: no MFU call: MFU {pct(figures['mfu'])} from one window has no "
        f"interval to set against {render(_REFERENCE, figures)}; {where}`measurement.repeats: 4` "
        "gives one"
    )


def _no_reference(figures: Mapping[str, Any]) -> str:
    """'vit-b16: no MFU call: no reference for vit-b16 (bf16, compiled) on an NVIDIA H200 ...'."""
    compiled = {True: ", compiled", False: ", eager", None: ""}[figures.get("compiled")]
    what = f"{figures['model_name']} ({figures['precision']}{compiled})"
    measure = (
        f"measure one with `python benchmarks/workload_reference.py --model "
        f"{figures['model_name']} --batch {figures['batch']} --device cuda"
        f"{' --compile' if figures.get('compiled') else ''}`"
        if figures.get("measurable")
        else "benchmarks/workload_reference.py has no loop of it yet"
    )
    return (
        f"{figures['model']}: no MFU call: no reference for {what} on an {figures['gpu']}; "
        f"{measure}"
    )


def _fix_host(figures: Mapping[str, Any]) -> str:
    busy = figures.get("busy_share")
    said = (
        f"the GPU is busy {pct(busy)} of the step, waiting for Python and kernel launches"
        if busy is not None
        else "the GPU waits for Python and kernel launches (host-bound)"
    )
    return f"{figures['model']}: fix the host first: {said}; more GPUs would wait too"


def _too_small(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: no call: too small to load the GPU, by design; `torchscale validate "
        "--level perf` measures it"
    )


def _fix_input(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: fix the input pipeline first: the step waits for data "
        f"{_pct(figures, 'share')} of the time"
    )


def _fix_straggler(figures: Mapping[str, Any]) -> str:
    rank = figures.get("rank")
    who = f"rank {rank}" if rank is not None else "a straggler"
    return (
        f"{figures['model']}: fix the straggler first: the others wait for {who} "
        f"{_pct(figures, 'share')} of the step"
    )


def _not_decidable(figures: Mapping[str, Any]) -> str:
    """'gpt2: no buy-or-fix call: its scaling efficiency's interval (25.0 pts wide) is wider
    than 10.0 pts; more repeats narrow it'."""
    width = figures.get("width")
    said = f" ({points(width)} wide)" if width is not None else ""
    what = f"{figures['what']}'s " if figures.get("what") else ""
    return (
        f"{figures['model']}: no buy-or-fix call: its {what}interval{said} is wider than "
        f"{points(figures['max_width'])}; more repeats narrow it"
    )


def blind_below(note: str | None, blind: float) -> str:
    """A regression count's note with the throughput drop it may miss (a share)."""
    return (
        f"{note + '; ' if note else ''}'no significant change' here may miss throughput drops "
        f"smaller than about {pct_whole(blind)} (the rule finds one that large 95 % of the time "
        "at the spread measured; more runs a side see smaller ones)"
    )


# Words for the findings of one configuration against another: a lead judged by its interval.
# Figures (offline/analysis/ranking.py `judge_lead`): `change` (the lead, ratio - 1), `low` and
# `high` (its 95 % interval, None with one figure a side), `repeats` (the fewer units a side);
# where it is shown, `measure` ('throughput', or 'cost': what the next one costs more per
# sample) and `runner_up` (the next configuration's name).


def _figure(figures: Mapping[str, Any]) -> str:
    """'+51 % ±44 %', '+57 % [53, 84]': spelled as every change is (`figures.change_text`)."""
    return change_text(figures["change"], figures["low"], figures["high"])


def _repeats(figures: Mapping[str, Any]) -> str:
    return repeats_text(int(figures.get("repeats") or 0))


def _said(figures: Mapping[str, Any]) -> str:
    """The lead with its interval as a sentence's object: '+12.0 % ±7.5 % throughput over X',
    'X costs +57 % [53, 84] more per sample'."""
    who = figures.get("runner_up") or "the next"
    if figures.get("measure") == "cost":
        return f"{who} costs {_figure(figures)} more per sample"
    return f"{_figure(figures)} throughput over {who}"


def clear(figures: Mapping[str, Any]) -> str:
    """'+12.0 % ±7.5 % throughput over b16 x2 fp32 ddp'."""
    return _said(figures)


def ahead_unsized(figures: Mapping[str, Any]) -> str:
    """'ahead of X beyond noise, by a margin not measurable (2 repeats)': the interval excludes
    0, so the order holds, but it is wider than the lead, so no size of it is shown (the first
    screen shows no digits of a figure wider than itself)."""
    who = figures.get("runner_up") or "the next"
    margin = f"beyond noise, by a margin not measurable ({_repeats(figures)})"
    if figures.get("measure") == "cost":
        return f"{who} costs more per sample {margin}"
    return f"ahead of {who} {margin}"


def within_noise(figures: Mapping[str, Any]) -> str:
    """'within noise of X (+3 % ±14 % throughput)'; 'within noise of X; lead not
    measurable (2 repeats)' where the interval is wider than the lead too."""
    who = figures.get("runner_up") or "the next"
    if too_wide(figures["change"], figures["low"], figures["high"]):
        return f"within noise of {who}; lead not measurable ({_repeats(figures)})"
    if figures.get("measure") == "cost":
        return f"within noise: {_said(figures)}"
    return f"within noise of {who} ({_figure(figures)} throughput)"


def spread_unknown(figures: Mapping[str, Any]) -> str:
    """'not told apart from X (+5.0 % throughput): spread unknown (one repeat)'."""
    who = figures.get("runner_up") or "the next"
    change = figures.get("change")
    measure = "more per sample" if figures.get("measure") == "cost" else "throughput"
    said = f" ({change_text(change, None, None)} {measure})" if change is not None else ""
    return f"not told apart from {who}{said}: spread unknown (one repeat)"


def words(code: str, **figures: Any) -> str:
    """A first-screen phrase for these figures, by today's catalogue entry for its code:
    `words("usability.failed", n=2, total=6)` is '2 of 6 cells failed'."""
    return say(Finding(code=code, figures=figures))


def _counted(template: str, **nouns: str) -> Phrase:
    """A template whose count figures are said with their noun, singular or plural:
    `_counted("{n} finished", n="cell")` says '1 cell finished', '2 cells finished'."""

    def phrase(figures: Figures) -> str:
        counts = {name: count_of(figures[name], noun) for name, noun in nouns.items()}
        return render(template, {**figures, **counts})

    # the docs' catalogue shows a computed phrase by its docstring: the template, its counts
    said = ", ".join(f"{{{name}}} as '{count_of(2, noun)}'" for name, noun in nouns.items())
    phrase.__doc__ = f"{template} ({said})"
    return phrase


# Words for "can these numbers be used?" (interfaces/report/parts/usability.py decides which
# clause applies, docs/reporting.md "The first screen: headline rules"): its reasons, remedies
# and actions, and the headline sentence they make (`usable.*`). Figures: `n` and `total`
# (cells), `cells` (their names, listed), `noisy` (the word of the reliability level `varies`),
# `what` (the machine's other load, `usability.contended`), `remedy` (a rerun, said), `n` (the
# repeats to ask for), `now` (the repeats run).


def _contended(figures: Figures) -> str:
    """The other load on the cores (`cpu`: `other` of the host's `cores`) and GPUs (`gpu`).

    '1.4-1.8 of 2 cores taken by other processes and other compute processes on the GPUs'; 'some
    cores taken by other processes' where the other processes' cores were not measured."""
    other = figures.get("other")
    of = f" of {figures['cores']}" if figures.get("cores") and other else ""
    cpu = f"{one_decimal_range(other) if other else 'some'}{of} cores taken by other processes"
    gpu = "other compute processes on the GPUs"
    return " and ".join(said for said, on in ((cpu, figures["cpu"]), (gpu, figures["gpu"])) if on)


UNUSABLE = "these numbers cannot be used"
NOT_USED = "not usable"  # a model's figure under the headline's 'no': no number, only this
RERUN_IDLE = "rerun on an idle node"
MORE_REPEATS = "rerun with `measurement.repeats: {n}` or more"

# Words for the summary's cards and lines (interfaces/report/sections/summary.py) and the
# headline's lines (interfaces/report/parts/headline.py). Figures: `model`, `config` (a
# configuration's name), `cells` (names, listed), `n` and `total` (counts), `span` ('to 8 GPUs'),
# `unit` ('GPU', 'CPU rank'), `against` (the baseline's name), `largest` (its largest change).
TOO_WIDE = (
    "its confidence interval is wider than the figure itself, so no number is given here (the "
    "tables further down hold the measurements)"
)
# the first screen's words for the reliability rule (the glossary names the CV behind them)
RELIABLE_RULE = (
    "reliable: throughput's 95 % interval within ±{bound:share_set}, step times vary by at most "
    "{bound:share_set}"
)
NO_REGRESSION = "no regression against {against} in {n}"


PHRASES: Phrases = {
    "decision.buy": _buy,
    "decision.fix_scaling": _fix_scaling,
    "decision.scaling_borderline": _borderline,
    "decision.fix_mfu": _fix_mfu,
    "decision.step_on_par": _step_on_par,
    "decision.step_below": _step_below,
    "decision.step_above": _step_above,
    "decision.no_reference": _no_reference,
    "decision.no_interval": _no_interval,
    "decision.fix_host": _fix_host,
    "decision.too_small": _too_small,
    "decision.fix_input": _fix_input,
    "decision.fix_straggler": _fix_straggler,
    "decision.not_decidable": _not_decidable,
    "lead.clear": clear,
    "lead.ahead_unsized": ahead_unsized,
    "lead.within_noise": within_noise,
    "lead.spread_unknown": spread_unknown,
    "usable.yes": "These numbers can be used",
    "usable.with_care": "These numbers can be used with care",
    "usable.no": "These numbers cannot be used",
    "usable.nothing_to_judge": "No figures to use",
    "usable.sentence": "{opening}: {reason}.",
    "usable.sentence_remedy": "{opening}: {reason}: {remedy}.",
    "usable.unusable": UNUSABLE,
    "usable.unusable_why": UNUSABLE + ": {reason}",
    "usable.not_used": NOT_USED,
    "usability.rerun_idle": RERUN_IDLE,
    "usability.rerun_own_gpus": (
        "rerun with the GPUs to yourself (no other compute process on them)"
    ),
    "usability.rerun_idle_own_gpus": RERUN_IDLE + ", with the GPUs to yourself",
    "usability.rerun_those": "{remedy} for those cells: their figures measure the contention",
    "usability.rerun_busy": "{remedy} for the busy cells: their figures measure the contention",
    "usability.host_first": (
        "fix the host first: {remedy}; the bottleneck findings tune the workload and come after"
    ),
    "usability.more_repeats": MORE_REPEATS,
    "usability.more_repeats.noisy": MORE_REPEATS + " for the {noisy} cells",
    "usability.more_repeats.few": MORE_REPEATS + " for the cells of too few repeats",
    "usability.more_repeats.noisy_few": (
        MORE_REPEATS + " for the {noisy} cells and the cells of too few repeats"
    ),
    "usability.more_repeats.spread": MORE_REPEATS + " to see the run-to-run spread",
    "usability.more_job_steps": "rerun with `torchscale profile --steps {n}` or more",
    "usability.raise_job_steps": (
        "measure more of your job's steps, {n} or more (`torchscale profile --steps {n} -- ...`; "
        "it measured {now}): fewer give a 95 % interval too wide to tell runs apart"
    ),
    "usability.raise_repeats": (
        "raise `measurement.repeats` from {now} to {n} or more: with {now} a 95 % interval is too "
        "wide to tell configurations apart"
    ),
    "usability.quieter": (
        "rerun on a quiet node or with longer windows (`measurement.steps`; a profile's `--steps`)"
    ),
    "usability.see_failures": "see Failures",
    "usability.see_skipped": "see the skipped inputs",
    "usability.contended": _contended,
    "usability.other_load": "other load on the machine",
    "usability.busy_every": "{what} in every cell",
    "usability.busy_one": "{what} in its one cell",
    "usability.busy_some": "{what} in {n} of {total} cells",
    "usability.all_few": "all {total} cells ran {repeats} repeats each, too few to judge",
    "usability.one_few": _counted("its one cell ran {repeats}, too few to judge", repeats="repeat"),
    "usability.all_noisy": "all {total} cells {noisy}",
    "usability.one_noisy": "its one cell is {noisy}",
    "usability.some_noisy": "{n} of {total} cells {noisy}, {few} with too few repeats to judge",
    "usability.noisy_cells": "{n} of {total} cells {noisy}",
    "usability.few_cells": "{n} of {total} with too few repeats",
    "usability.few": "{few} with too few repeats to judge",
    "usability.all_one_repeat": "every cell of one repeat: no spread to judge by",
    "usability.one_repeat": "one repeat: no spread to judge by",
    "usability.some_one_repeat": "{n} of {total} cells of one repeat (spread unknown)",
    "usability.all_reliable": "all {total} cells reliable",
    "usability.all_reliable_calm": "all {total} cells reliable, with no other load on the machine",
    "usability.one_reliable": "its one cell measured reliably",
    "usability.one_reliable_calm": (
        "its one cell measured reliably, with no other load on the machine"
    ),
    "usability.none_quiet_and_reliable": "no cell is both quiet and reliable ({parts:list})",
    "usability.other_noisy": _counted("the other {n} {noisy}", n="cell"),
    "usability.all_said_noisy": "all {noisy}",
    "usability.failed": "{n} of {total} cells failed",
    "usability.fix_failed": _counted("fix the {n} (see Failures)", n="failed cell"),
    "usability.fix_failed_why": _counted("fix the {n}: {reasons} (see Failures)", n="failed cell"),
    "usability.readable": "{n} of {total} cells readable",
    "usability.unreadable": _counted(
        "{n} could not be read (see the skipped inputs): rerun those cells", n="cell file"
    ),
    "usability.none_finished": _counted("none of the {total} finished ok", total="cell"),
    "usability.none_finished_failed": _counted(
        "none of the {total} finished ok ({failed} failed)", total="cell"
    ),
    "usability.none_planned": _counted(
        "none of the {n} has a result yet ({cells})", n="planned cell"
    ),
    "usability.none_read": _counted("none of the {total} could be read", total="cell file"),
    "headline.cpu_unknown": "CPU model not recorded",
    "headline.cpu_cores": _counted("{model}, {cores}", cores="core"),
    "headline.devices_unknown": "{device} devices (model not recorded)",
    "headline.on_nodes": "{gpus} on {nodes} nodes",
    "headline.cpu_host": "a CPU-only host ({name})",
    "headline.cpu_hosts": "{nodes} CPU-only hosts ({name})",
    "headline.dates": "{first} to {last}",
    "headline.span_from": "from {base} to {to}",
    "headline.span_to": "to {to}",
    "headline.batch": "batch {batch}",
    "headline.path_ran": "{ok} of {cells} cells ran ok.",
    "headline.measure_it": (
        "Measure the workload: `torchscale benchmark` (on a GPU node its default config runs "
        "GPT-2 small in bf16, compiled, at batch 8 and 16, 4 repeats)"
    ),
    "headline.with": "{efficiency} with {config}",
    "headline.span_with": "{efficiency} {span} with {config}",
    "headline.scaling": "{model}, scaling {span}: {phrases:list}",
    "headline.scaling_spans": "{model}, scaling: {phrases:list}",
    "headline.scaling_range": (
        "{model}, scaling {span} over {n} configurations: from {low} to {high}"
    ),
    "headline.scaling_spans_range": (
        "{model}, scaling over {n} configurations: from {low} to {high}"
    ),
    "headline.reaches": "{model} reaches {rate}{median} on {where}{config}{busy}{of}",
    "headline.not_measurable": "{model} on {where}{config}: throughput {figure}{of}",
    "headline.median": " (median of {runs} runs)",
    "headline.with_config": " with {config}",
    "headline.fastest": ", the fastest of {n} configurations",
    "headline.fastest_unsized": ", the fastest of {n} configurations by a margin not measurable",
    "headline.none_fastest": "; {n} configurations, none clearly the fastest",
    "headline.per_m_tokens": "{cost} per M tokens",
    "headline.per_m_samples": "{cost} per M samples",
    "headline.priced_at": " at {cost}",
    "headline.cheapest": "; cheapest {cost} ({config})",
    "headline.unused": "{model}{over}: " + NOT_USED + " (" + UNUSABLE + ")",
    "headline.unused_scaling": "{model}, scaling {span}{over}: " + NOT_USED + " (" + UNUSABLE + ")",
    "headline.over": " over {n} configurations",
    "headline.alike": "{models} ({n} models)",
    "headline.more_models": _counted("{n} in the summary's table", n="more model"),
    "headline.best_unusable": "Best configuration: {none_named} (" + UNUSABLE + ").",
    "headline.best_none": "{model}: {none_named} ({why})",
    "headline.best_clear": "{config} ({lead})",
    "headline.best_unclear": "{model}: {no_clear_best}: {config} is {lead}",
    "headline.best_by_throughput": "Best configuration by throughput: {parts:list;}.",
    "headline.best_by_cost": "Best configuration by cost: {parts:list;}.",
    "headline.look_into": _counted(
        "look into the {n} against the baseline (see Baseline)", n="regression"
    ),
    "headline.regressions": _counted("{n} against {against}", n="regression"),
    "headline.regressions_largest": _counted(
        "{n} against {against} (largest change: {largest})", n="regression"
    ),
    "headline.no_match": "no cell matched {against}",
    "headline.none_judged": _counted(
        "none of {n} could be judged against {against}", n="matched cell"
    ),
    "headline.none_judged_largest": _counted(
        "none of {n} could be judged against {against} (largest change: {largest})",
        n="matched cell",
    ),
    "headline.no_regression": _counted(NO_REGRESSION, n="judged cell"),
    "headline.no_regression_unjudged": _counted(
        NO_REGRESSION + " ({unjudged} not judged)", n="judged cell"
    ),
    "headline.no_regression_largest": _counted(
        NO_REGRESSION + " (largest change: {largest})", n="judged cell"
    ),
    "headline.no_regression_unjudged_largest": _counted(
        NO_REGRESSION + " ({unjudged} not judged; largest change: {largest})", n="judged cell"
    ),
    "headline.sweep_state": "{name}: {state}",
    "summary.count_of": "{n} of {total}",
    "summary.reliable_cells": "{n} of {total} cells reliable",
    "summary.level_cells": "{n} {level} ({cells})",
    "summary.level_count": "{n} {level}",
    "summary.headline": "{clauses:list;}.",
    "summary.reliable_note": "{others:list}; " + RELIABLE_RULE,
    "summary.reliable_note_all": "every measured cell; " + RELIABLE_RULE,
    "summary.busy_none": "none of the {n} with load telemetry ran on a busy machine",
    "summary.busy_some": (
        "{n} of {total} ran on a busy machine ({cells}): other processes used its cores or GPUs "
        "during the windows"
    ),
    "summary.no_sweep": "no benchmark sweep in the sources ({other} only)",
    "summary.cells.failed": "{n} failed",
    "summary.cells.stopped": "{n} stopped",
    "summary.cells.not_reached": "{n} not reached",
    "summary.cells.pending": "{n} no result yet",
    "summary.cells.skipped": "{n} skipped by design",
    "summary.cells.unreadable": "{n} unreadable",
    "summary.cells.all_ok": "every cell finished ok",
    "summary.scaling_none": "no configuration of this model measured at two or more GPU counts",
    "summary.scaling_against": "{config}, against {against} (100 % = linear)",
    "summary.scaling_too_wide": "{config}, against {against}: " + TOO_WIDE,
    "summary.scaling_untrusted": "; not every cell behind it measured reliably on a quiet machine",
    "summary.no_config": "no configuration of this model measured",
    "summary.throughput_at": "samples/s at {config}: {throughput}",
    "summary.throughput_too_wide": "samples/s at {config}: " + TOO_WIDE,
    "summary.median_of_runs": (
        "; the median of {runs} runs of this configuration (each its own launch; interval over "
        "the runs), not the best run"
    ),
    "summary.ran_busy": "; ran on a busy machine",
    "summary.cheapest": "cheapest: {config}, at {price} per {unit}-hour",
    "summary.sync_stall": "share of step time ranks wait for peers (trace analysis)",
    "summary.cells_of": "{n} of {total} cells",
    "summary.not_judged": (
        "too few repeats or runs for the rule, or a busy machine: neither regressions nor passes "
        "(their changes are listed below)"
    ),
    "summary.largest_changes": "Largest changes against the baseline: {items:list;}.",
    "summary.best_by.throughput": "throughput",
    "summary.best_by.cost": "cost",
    "summary.best_by.throughput_and_cost": "throughput and cost",
    "summary.best_by_unclear": "{by}: {unclear}",
    "summary.by_cost": "; by cost: {lead}",
    "summary.price": "at {price:money} per {unit}-hour",
    "summary.price_each": "at each result set's price per {unit}-hour",
    "summary.best_note": (
        "best by throughput: the highest global samples/s (median over repeats, with "
        "{plus_minus}); ahead of the next: how far it leads the runner-up, with the 95 % interval "
        "of that lead: '{no_clear_best}' where that interval reaches 0, so the ranking is noise; "
        "'{ahead_unsized}' where it excludes 0 but is wider than the lead, so the order holds and "
        "its size is unknown (how the interval is found: the glossary); the intervals: {scopes}"
    ),
    "summary.best_note_cost": "; best by cost: the lowest cost per million samples {price}",
    "summary.best_note_no_base": (
        "; scaling efficiency 'no base': no smaller {unit} count was measured in the cell's "
        "group, so there is no scaling figure (never 100 %)"
    ),
    "summary.not_finished": "{n} cell(s) did not finish ({cells}): {reasons}.",
    "summary.no_analysis": "Profile {name} has no analysis: {reason}.",
    "summary.regressions": "{n} regression(s) against the baseline by the stated rule: {cells}.",
    "summary.finding_cost": "{cost:pct} of the step: ",
    "summary.finding_where": " ({where})",
    "summary.finding_cells": " (in {n} cells; the largest: {where})",
    "summary.caveat": " Caveat: {caveat}.",
    "summary.no_bottleneck": "No bottleneck: {why}.",
    # the live table's states, notes and legend (interfaces/console/live_table.py): a row's
    # one-word status and scaling, the busy machine's note (`cores`: what other processes used),
    # and what a column's figure is, said after its header (`live.legend.<key>`)
    "live.status.ok": "ok",
    "live.status.failed": "failed",
    "live.status.oom": "oom",
    "live.status.timeout": "timeout",
    "live.status.skipped": "skipped",
    "live.status.busy": "busy",
    "live.status.host": "host",
    "live.status.reps": "{n} reps",
    "live.status.one_rep": "1 rep",
    "live.scaling.base": "base",
    "live.scaling.noise": "noise",
    "live.scaling.linear": "≈100 %",
    "live.busy": (
        "busy machine: others used {cores:one} cores; rows marked busy measure the contention"
    ),
    "live.busy_unmeasured": "busy machine; rows marked busy measure the contention",
    "live.legend.throughput": "median ± half its 95 % interval, [low, high] where lopsided",
    "live.legend.step": "median step",
    "live.legend.scaling": "of linear, from the smallest world",
    "live.legend.stall": "step share waiting for peers",
    "live.legend.not_measurable": (
        "'not measurable', 'noise': the 95 % interval is wider than the figure itself"
    ),
    "live.legend.left_out": "left out to fit the terminal: {columns:list}",
}
