"""Bottlenecks: every finding ranked by cost, each sweep run's diagnosis in one row, each
profile's diagnosis, per-rank figures and stall heatmap, the runs' warnings and their telemetry
(docs/reporting.md, "What is in it"). A profiled run without a diagnosis keeps its analysis'
own figures, said so."""

from __future__ import annotations

import statistics
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import say, spell
from torchscale.contracts.wording import why as reason_words
from torchscale.contracts.wording.cell_reasons import reasons as reason_texts
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.wording.profile import said
from torchscale.interfaces.report.diagnosis_text import (
    caveat_text,
    disagreement_text,
    straggler_text,
    whatif_text,
)
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Findings,
    Heatmap,
    KeyFigure,
    KeyFigures,
    Section,
    Table,
    Text,
    Unavailable,
)
from torchscale.interfaces.report.parts.context import (
    Context,
    ProfileRef,
    col,
    present,
    records,
    slug,
)
from torchscale.interfaces.report.parts.diagnosis import diagnosis_blocks, rank_wait_texts
from torchscale.interfaces.report.parts.findings import caveat_of, no_finding_text
from torchscale.interfaces.report.parts.words import (
    HOST_FIRST,
    TERMS,
    footnote,
    plain,
    term_column,
)
from torchscale.offline.results import profile_figures

NO_PROFILE = (
    "no `torchscale profile` results in the sources (profile/<cell>/analysis.json): run "
    "`torchscale profile` on a cell to measure them from traces"
)


# the analysis' step-level figures left in its analysis.json beside a diagnosis
NOT_SHOWN = ("collective_wait_pct", "idle_us")


def _trace_figures(analysis: ProfileAnalysis) -> KeyFigures:
    """What the traces show beside the diagnosis and the terminal prints with it, no verdict:
    HTA's compute/communication overlap (a share of the communication time, not of the step:
    the step's split is the diagnosis'). The analysis' other step-level figures (collective
    wait, idle) stay in its analysis.json; each rank's idle time is in the per-rank table."""
    return KeyFigures(
        figures=[
            KeyFigure(
                label="Compute/communication overlap",
                value=analysis.overlap_pct,
                format="pct",
                note=reason_texts(analysis.unavailable).get(
                    "overlap_pct",
                    "HTA's definition: computing while communicating, share of the "
                    "communication time",
                ),
            )
        ]
    )


def _analysis_figures(analysis: ProfileAnalysis) -> KeyFigures:
    """A run without a diagnosis: its analysis' own trace figures, from separate methods
    (they may disagree with each other: said in its unavailable reasons)."""
    why = reason_texts(analysis.unavailable)
    stall = profile_figures.sync_stall_pct(analysis)
    exposed = profile_figures.exposed_comm_pct(analysis)
    cycle = profile_figures.cycle_us(analysis)
    idle = [r.idle_us for r in analysis.ranks if r.idle_us is not None]
    figures = [
        KeyFigure(
            label="Cycle (median step)",
            value=cycle,
            format="us",
            note=why.get("cycle_us") if cycle is None else None,
        ),
        KeyFigure(
            label="Sync stall",
            value=stall.value,
            format="pct",
            note=stall.reason or "ranks waiting for peers with nothing else to do",
            severity="bad" if (stall.value or 0) >= 10 else "info",
        ),
        KeyFigure(
            label="Collective wait",
            value=analysis.collective_wait_pct,
            format="pct",
            note=why.get("collective_wait_pct", "all waiting inside collectives, hidden or not"),
        ),
        KeyFigure(
            label=plain("exposed_comm"),
            value=exposed.value,
            format="pct",
            note=exposed.reason or TERMS["exposed_comm"].explained(),
        ),
        KeyFigure(
            label="Compute/communication overlap",
            value=analysis.overlap_pct,
            format="pct",
            note=why.get("overlap_pct", "HTA's definition: computing while communicating"),
        ),
        KeyFigure(
            label="Idle per step (median rank)",
            value=statistics.median(idle) if idle else None,
            format="us",
            note="the device doing nothing: waiting for the host or between kernels"
            if idle
            else why.get("idle_us", "no rank's idle time could be measured"),
        ),
    ]
    return KeyFigures(figures=figures)


def _ranks_table(ref: ProfileRef, key: str) -> Table:
    """Each rank's trace figures (medians over its complete profiled steps) and its wait for
    peers as the run's diagnosis holds it (share of its own step, with its interval)."""
    analysis, diagnosis = ref.entry.analysis, ref.diagnosis
    waits = rank_wait_texts(diagnosis)
    verdict = diagnosis.straggler if diagnosis is not None else None
    straggler = verdict.rank if verdict is not None and verdict.named else None
    rows = [
        {
            "rank": rank.rank,
            "steps": rank.steps,
            "step_us": rank.step_us,
            "compute_us": rank.compute_us,
            "comm_us": rank.comm_us,
            "overlap_pct": rank.overlap_pct,
            "wait_text": waits.get(rank.rank),
            "stall_pct": rank.sync_stall_pct,
            "idle_us": rank.idle_us,
            "data_wait_us": rank.data_wait_us,
            "forward_us": rank.phases_busy_us.get("forward"),
            "backward_us": rank.phases_busy_us.get("backward"),
            "optimizer_us": rank.phases_busy_us.get("optimizer"),
            "_severity": "warn" if straggler == rank.rank else "info",
        }
        for rank in analysis.ranks
    ]
    note = "medians over each rank's complete profiled steps; the straggler's row is marked"
    if waits:
        wait = [term_column("wait_text", "wait_for_peers", suffix=" (share of its step)")]
        note += (
            "; waiting for slower ranks: the run's diagnosis, each rank's mean wait over its mean "
            f"step. {footnote(['wait_for_peers'])}"
        )
    elif diagnosis is not None:
        wait = []
        note += "; no per-rank wait for peers: the diagnosis holds none (waits not separable)"
    else:
        wait = [col("stall_pct", "Sync stall share (its analysis)", "pct")]
        note += "; sync stall share: the analysis' own figure (it holds no diagnosis)"
    return Table(
        id=f"bottlenecks-{key}-ranks",
        title=f"{ref.label}: per rank (trace analysis)",
        columns=[
            col("rank", "Rank", "int"),
            col("steps", "Steps", "int"),
            col("step_us", "Step", "us"),
            col("compute_us", "Compute", "us"),
            col("comm_us", "Communication", "us"),
            col("overlap_pct", "Overlap", "pct"),
            *wait,
            col("idle_us", "Idle", "us"),
            col("data_wait_us", "Data wait", "us"),
            col("forward_us", "Forward busy", "us"),
            col("backward_us", "Backward busy", "us"),
            col("optimizer_us", "Optimizer busy", "us"),
        ],
        rows=rows,
        note=note,
    )


def _heatmap(ref: ProfileRef, key: str) -> Chart | None:
    cells = ref.entry.analysis.stall_by_step
    if not cells:
        return None
    ranks = sorted({c.rank for c in cells})
    steps = sorted({c.step for c in cells})
    z: list[list[float | None]] = [[None] * len(steps) for _ in ranks]
    for cell in cells:
        share = cell.stall_us / cell.step_us * 100 if cell.step_us > 0 else None
        z[ranks.index(cell.rank)][steps.index(cell.step)] = share
    return Chart(
        id=f"bottlenecks-{key}-stalls",
        title=f"{ref.label}: sync stall per rank and step",
        kind="heatmap",
        x_label="step",
        y_label="rank",
        heatmap=Heatmap(
            x_labels=[str(s) for s in steps],
            y_labels=[str(r) for r in ranks],
            z=z,
            z_label="sync stall, % of the step",
            higher_is="worse",
        ),
        note="a rank that stalls waits for the others: the straggler is the rank that does not",
    )


def _profile_blocks(ref: ProfileRef) -> list[Block]:
    analysis, result = ref.entry.analysis, ref.entry.result
    key = slug(ref.entry.name)
    ranks = f"{analysis.ranks_analysed} rank(s)"
    if analysis.world_size and analysis.world_size != analysis.ranks_analysed:
        ranks += f" of {analysis.world_size}"
    blocks: list[Block] = [
        Text(
            text=f"Profile {ref.entry.name} ({ref.label}): {analysis.tool} traces of {ranks}, "
            f"{analysis.backend or 'unknown backend'} on {analysis.device_type or 'unknown device'}"
            f", {analysis.matched_collectives} matched collectives, target {analysis.target}"
            + (
                f"; its diagnosis decided by the {ref.diagnosis.source}."
                if ref.diagnosis is not None
                else "."
            )
        )
    ]
    if result is not None and result.injected_delays:
        delays = "; ".join(
            f"rank {d.rank} sleeps {spell.ms_plain(d.ms)} in {d.phase}"
            for d in result.injected_delays
        )
        blocks.append(
            Text(
                text=f"This run injected a delay on purpose ({delays}): the straggler and the "
                "stall it causes are artificial.",
                severity="warn",
            )
        )
    diagnosis = ref.diagnosis
    if diagnosis is not None:
        blocks += diagnosis_blocks(diagnosis, result)
        blocks.append(_trace_figures(analysis))
    else:
        blocks.append(_analysis_figures(analysis))
    heatmap = _heatmap(ref, key)
    blocks += present(
        _ranks_table(ref, key) if analysis.ranks else None,
        heatmap,
    )
    blocks += [Text(text=f"Note: {said(note)}") for note in analysis.notes]
    unavailable = reason_texts(analysis.unavailable)
    if diagnosis is not None:  # the diagnosis' lines say these, and why not
        unavailable = {k: v for k, v in unavailable.items() if k not in NOT_SHOWN}
    if heatmap is None:
        unavailable.setdefault(
            "stall heatmap", "the analysis holds no per-step stalls (stall_by_step is empty)"
        )
    if unavailable:
        blocks.append(
            Unavailable(items={f"{k} ({ref.entry.name})": v for k, v in unavailable.items()})
        )
    return blocks


def _straggler_tests(ctx: Context) -> Table | None:
    """One row per multi-rank sweep run with a diagnosis: its straggler verdict and what-if in
    the terminal's words, its busy-machine caveat, and the one line of a disagreeing
    cross-check. Profiled runs show theirs with their profile, below."""
    rows: list[dict[str, Any]] = []
    tests: list[Finding] = []
    for row in records(ctx.ok):
        result = ctx.result(row)
        diagnosis = result.diagnosis
        verdict = diagnosis.straggler if diagnosis is not None else None
        if diagnosis is None or verdict is None:
            continue
        tests.append(verdict.test)
        caveat = caveat_of(result)
        rows.append(
            {
                "cell": ctx.label(row),
                "verdict": straggler_text(verdict, diagnosis.ranks),
                "named": verdict.named,
                "rank": verdict.rank,
                "phase": verdict.phase,
                "candidate_rank": verdict.candidate_rank,
                "gap_s": verdict.gap_s.value if verdict.gap_s else None,
                "p_value": verdict.p_value,
                "whatif": whatif_text(diagnosis),
                "caveat": caveat_text(caveat) if caveat else None,
                "checks": disagreement_text(diagnosis),
                "source": diagnosis.source,
                "_severity": "warn" if verdict.named or caveat else "info",
            }
        )
    if not rows:
        return None
    # converted results did not record their test: name it only when every run's is known
    known = tests[0].code != "unavailable.not_recorded" and all(t == tests[0] for t in tests)
    test = say(tests[0]) if known else "the run's own, in its result"
    columns = [
        col("cell", "Run"),
        col("verdict", "Straggler verdict"),
        col("whatif", "What-if"),
        col("caveat", "Caveat"),
        col("checks", "Cross-checks"),
    ]
    shown = [c for c in columns if c.key == "cell" or any(r.get(c.key) for r in rows)]
    return Table(
        id="bottlenecks-straggler-tests",
        title="Straggler verdict per run (its diagnosis)",
        columns=shown,
        rows=rows,
        note=f"a rank is named only when it passes the test ({test}); otherwise the largest "
        "gap is shown with its interval and no rank is called a straggler; gaps are what the "
        "rank costs the others per step, [low, high] the 95 % interval",
    )


def _warnings(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    runs = [(ctx.label(row), ctx.result(row)) for row in records(ctx.cells)]
    runs += [(ref.label, ref.entry.result) for ref in ctx.profiles if ref.entry.result]
    rows = [
        {
            "cell": label,
            "kind": warning.kind,
            "warning": warning_words(warning),
            "_severity": "info" if warning.kind == "injected delay" else "warn",
        }
        for label, result in runs
        for warning in result.warnings  # grouped by the kind its writer gave it
    ]
    blocks: list[Block] = [
        Table(
            id="bottlenecks-warnings",
            title="Warnings from the runs",
            columns=[col("cell", "Run"), col("kind", "Kind"), col("warning", "Warning")],
            rows=rows,
            note="high variance: pooled step-time CV above measurement.cv_warn_threshold",
        )
        if rows
        else Text(text="No run recorded a warning.", severity="good")
    ]
    unavailable = {}
    if not any(r["kind"] == "throttling" for r in rows):
        note, why = _throttling_status([result for _, result in runs])
        if note is not None:
            blocks.append(Text(text=note, severity="good"))
        if why is not None:
            unavailable["throttling"] = why
    return blocks, unavailable


def _throttling_status(results: list[CellResult]) -> tuple[str | None, str | None]:
    """(what the telemetry rules out, why the rest cannot be told) when no run warned of
    throttling."""
    gpu = [r for r in results if r.status.value == "ok" and r.cell.device != "cpu"]
    if not gpu:
        return None, "CPU runs only: no GPU clocks to throttle"
    read = [r for r in gpu if r.telemetry is not None and r.telemetry.throttled is False]
    unread = [r for r in gpu if r.telemetry is None or r.telemetry.throttled is None]
    note = None
    if read:
        intervals = sorted({r.telemetry.interval_ms for r in read if r.telemetry is not None})
        at_limit = [
            r.telemetry
            for r in read
            if r.telemetry and r.telemetry.clock_verdict == "at_power_limit"
        ]
        at_default = sum(
            all(g.power_limit is not None and g.power_limit.capped is False for g in t.ranks)
            for t in at_limit
        )
        limit_unread = len(at_limit) - at_default
        limit = (
            f"; {at_default} at their default power limit (SwPowerCap: how a GPU keeps to its "
            "limit under dense load, not a fault)"
            if at_default
            else ""
        )
        if limit_unread:
            limit += (
                f"; {limit_unread} with SwPowerCap within 90 % of their top clock, their power "
                "limit not read (a site cap can be neither seen nor ruled out)"
            )
        note = (
            f"No GPU clock throttling during the measured windows of {len(read)} GPU run(s): no "
            "thermal or hardware slowdown in two or more NVML clocks-event samples (every "
            f"{spell.ms_list(intervals)}){limit}."
        )
    why = None
    if unread:
        reasons = sorted(
            {
                reason_words(r.unavailable.get("telemetry.throttled"))
                or reason_words(r.unavailable.get("telemetry"))
                or "no telemetry"
                for r in unread
            }
        )
        why = (
            f"{len(unread)} GPU run(s) without readable clocks-event reasons, so throttling can "
            f"be neither shown nor ruled out there: {'; '.join(reasons)} (`torchscale validate` "
            "reads each GPU's throttle reasons now)"
        )
    return note, why


def _telemetry(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    """One row per measured cell with telemetry; why there is none otherwise."""
    rows: list[dict[str, Any]] = []
    missing: set[str] = set()
    for row in records(ctx.ok):
        result = ctx.result(row)
        tel = result.telemetry
        if tel is None:
            why_none = reason_words(result.unavailable.get("telemetry"))
            missing.add(why_none or "no telemetry in the result")
            continue
        rows.append(
            {
                "cell": ctx.label(row),
                "gpus": result.cell.world_size,
                "gpu_util": tel.gpu_util_pct_mean,
                "power": tel.power_w_mean,
                "temp": tel.temperature_c_max,
                "clock": tel.sm_clock_mhz_mean,
                "energy": tel.energy_j,
                "per_joule": tel.samples_per_joule,
                "tokens_per_joule": tel.tokens_per_joule,
                "cpu": tel.cpu_util_pct_mean,
                "throttled": "-"
                if tel.throttled is None
                else ", ".join(tel.throttle_reasons)
                if tel.throttled
                else "no (at power limit)"
                if tel.clock_verdict == "at_power_limit"
                else "no",
                "_severity": "warn" if tel.throttled else "info",
            }
        )
    unavailable = {"telemetry": "; ".join(sorted(missing))} if missing else {}
    if not rows:
        return [], unavailable
    columns = [
        col("cell", "Cell"),
        col("gpus", ctx.units.world, "int"),
        col("gpu_util", "GPU utilisation (mean)", "pct"),
        col("power", "Power per GPU, W (mean)", "float"),
        col("temp", "Hottest GPU, °C", "float"),
        col("clock", "SM clock, MHz (mean)", "float"),
        col("energy", "Energy, J (all GPUs)", "float"),
        col("per_joule", "Samples per joule", "float"),
        col("tokens_per_joule", "Tokens per joule", "float"),
        col("cpu", "CPU per rank (mean, 100 % = one core)", "pct"),
        col("throttled", "Throttled"),
    ]
    # a column no cell has a figure for (the GPU ones on CPU ranks) says nothing: left
    # out, and named in the note
    empty = [c for c in columns[2:] if all(row.get(c.key) in (None, "-") for row in rows)]
    note = (
        "NVML and psutil sampled in a thread from each window's start to its stop "
        "(docs/telemetry.md); energy from the GPU's energy counter, or the power samples "
        "where it has none; '-': not measurable here (reasons in the results)"
    )
    if empty:
        note += "; no cell has a figure for " + ", ".join(c.label for c in empty)
    table = Table(
        id="bottlenecks-telemetry",
        title="Telemetry during the measured windows",
        columns=[c for c in columns if c not in empty],
        rows=rows,
        note=note,
    )
    return [table], unavailable


def build(ctx: Context) -> Section:
    """All findings by cost, each profile's figures and heatmap, and the runs' warnings."""
    blocks: list[Block] = []
    if ctx.findings and ctx.host_first:
        blocks.append(Text(text=HOST_FIRST, severity="bad"))
        # measured on a machine that spoiled the numbers: shown, but not in a problem's
        # colour, so that they do not lead the fix of the host
        info = [f.model_copy(update={"severity": "info"}) for f in ctx.findings]
        blocks.append(Findings(findings=info))
    elif ctx.findings:
        blocks.append(Findings(findings=ctx.findings))
    else:
        blocks.append(Text(text=f"No finding: {no_finding_text(ctx)}.", severity="good"))
    ranking = (
        "Findings are ranked by cost, their share of the step: each run's are its diagnosis' own "
        "(decided by the traces where a run was profiled, else by the phase timers), plus GPU "
        "throttling"
    )
    blocks.append(Text(text=f"{ranking}."))
    blocks += present(_straggler_tests(ctx))
    for ref in ctx.profiles:
        blocks += _profile_blocks(ref)
    warning_blocks, unavailable = _warnings(ctx)
    blocks += warning_blocks
    telemetry_blocks, no_telemetry = _telemetry(ctx)
    blocks += telemetry_blocks
    unavailable |= no_telemetry
    if not ctx.profiles:
        unavailable = {
            "profile findings (sync stall, straggler, overlap, idle, what-if)": NO_PROFILE,
            "rank x step stall heatmap": NO_PROFILE,
            **unavailable,
        }
    if unavailable:
        blocks.append(Unavailable(items=unavailable))
    return Section(id="bottlenecks", title="Bottlenecks", blocks=blocks)
