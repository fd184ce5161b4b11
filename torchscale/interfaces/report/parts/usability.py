"""Can these numbers be used? The first thing every format says, from the cells' load telemetry,
reliability and repeats and the cells that failed or could not be read, computed once here
(`model.Decision`); the rules are docs/reporting.md's "The first screen: headline rules" (a busy
machine puts fixing the host before tuning the workload)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from torchscale.contracts.wording.cell_warnings import level_word
from torchscale.contracts.wording.spell import one_decimal_range
from torchscale.interfaces.report.parts.context import Context, is_quiet, names, plural, records
from torchscale.interfaces.report.parts.usable import Usability
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.reliability import UNSETTLED, repeat_count
from torchscale.offline.analysis.uncertainty import SMALL

# at least this share of the measured cells on a busy machine: the set cannot be used
BUSY_SHARE = 0.5
FAILED = ("failed", "oom", "timeout")
IDLE_NODE = "rerun on an idle node"
OWN_GPUS = "rerun with the GPUs to yourself (no other compute process on them)"
MORE_REPEATS = "rerun with `measurement.repeats: {n}` or more"
RAISE_REPEATS = (
    "raise `measurement.repeats` from {now} to {n} or more: with {now} a 95 % interval is too "
    "wide to tell configurations apart"
)
QUIETER = (
    "rerun on a quiet node or with longer windows (`measurement.steps`; a profile's `--steps`)"
)


@dataclass(frozen=True)
class _Contention:
    """The measured cells whose machine was shared during their windows, in words."""

    cells: list[dict[str, Any]]
    looked: int  # measured cells whose telemetry could tell
    what: str  # '1.4-1.8 of 2 cores taken by other processes'
    remedy: str


def _cores(ctx: Context, rows: list[dict[str, Any]]) -> str:
    """'2' (the busy hosts' logical CPUs, one figure where they agree), '' when not recorded."""
    counts: set[int] = set()
    for row in rows:
        telemetry = ctx.result(row).telemetry
        for host in (telemetry.hosts or []) if telemetry is not None else []:
            if host.busy and host.cores:
                counts.add(int(host.cores))
    if not counts:
        return ""
    low, high = min(counts), max(counts)
    return f"{low}" if low == high else f"{low}-{high}"


def contention(ctx: Context, measured: pd.DataFrame) -> _Contention | None:
    """The cells that shared their machine (the telemetry's busy-machine verdict: other
    processes on their cores; or other compute processes on their GPUs); None when no cell
    has that telemetry (then nothing can be said either way)."""
    columns = [
        c for c in ("busy_machine", "other_cpu_cores", "other_gpu_processes") if c in measured
    ]
    if not columns or measured.empty:
        return None
    rows = records(measured)
    looked = [r for r in rows if any(finite(r.get(c)) is not None for c in columns)]
    if not looked:
        return None
    on_cpu = [r.get("busy_machine") in (True, 1.0) for r in looked]
    on_gpu = [(finite(r.get("other_gpu_processes")) or 0) > 0 for r in looked]
    cpu = [r for r, flag in zip(looked, on_cpu, strict=True) if flag]
    gpu = [r for r, flag in zip(looked, on_gpu, strict=True) if flag]
    busy = [r for r, a, b in zip(looked, on_cpu, on_gpu, strict=True) if a or b]
    parts, remedies = [], []
    if cpu:
        other = [v for v in (finite(r.get("other_cpu_cores")) for r in cpu) if v is not None]
        cores = _cores(ctx, cpu)
        amount = one_decimal_range(other) if other else "some"
        of = f" of {cores}" if cores and other else ""
        parts.append(f"{amount}{of} cores taken by other processes")
        remedies.append(IDLE_NODE)
    if gpu:
        parts.append("other compute processes on the GPUs")
        remedies.append(OWN_GPUS)
    remedy = remedies[0] if len(remedies) == 1 else f"{IDLE_NODE}, with the GPUs to yourself"
    return _Contention(busy, len(looked), " and ".join(parts), remedy)


def _where(ctx: Context, busy: list[dict[str, Any]], total: int) -> str:
    if len(busy) == total:
        return "in every cell" if total > 1 else "in its one cell"
    return f"in {len(busy)} of {total} cells ({names(ctx.label(r) for r in busy)})"


def _repeats(rows: list[dict[str, Any]]) -> int:
    """The most repeats any of these cells ran (a pooled cell: its runs)."""
    counts = [max(repeat_count(r.get("samples_per_s_repeats")), 1) for r in rows]
    return max(counts, default=0)


def _enough(rows: list[dict[str, Any]]) -> int:
    """The repeats to ask for where these cells ran too few: SMALL, or twice what they ran
    where that was already SMALL or more (4 repeats within ±7 % can still give ±12 %)."""
    repeats = _repeats(rows)
    return SMALL if repeats < SMALL else 2 * repeats


def _more_repeats(rows: list[dict[str, Any]]) -> str:
    return RAISE_REPEATS.format(now=_repeats(rows), n=_enough(rows))


def _repeat_actions(noisy: list[dict[str, Any]], few: list[dict[str, Any]]) -> list[str]:
    """More repeats for the noisy cells of fewer than SMALL and for the cells of too few, one
    action where both need the same count."""
    wanted: dict[int, list[str]] = {}
    if noisy and _repeats(noisy) < SMALL:
        wanted.setdefault(SMALL, []).append(f"the {level_word('varies')} cells")
    if few:
        wanted.setdefault(_enough(few), []).append("the cells of too few repeats")
    return [f"{MORE_REPEATS.format(n=n)} for {' and '.join(who)}" for n, who in wanted.items()]


def _all_unsettled(noisy: list[dict[str, Any]], few: list[dict[str, Any]]) -> tuple[str, str]:
    """Why no cell is settled, and what to do first: too few repeats to judge (their repeats
    agree, their interval is wide for the count), or measurements that really vary (a quieter
    node, unless they also ran fewer than SMALL repeats: more repeats first)."""
    total = len(noisy) + len(few)
    if not noisy:
        repeats = _repeats(few)
        cells = f"all {total} cells ran {repeats} repeats each" if total > 1 else ""
        cells = cells or f"its one cell ran {plural(repeats, 'repeat')}"
        return f"{cells}, too few to judge", MORE_REPEATS.format(n=_enough(few))
    said = level_word("varies")
    cells = f"all {total} cells {said}" if total > 1 else f"its one cell is {said}"
    if few:
        cells = f"{len(noisy)} of {total} cells {said}"
    varies = f"{cells} (throughput or step time varies by more than ±10 %)"
    reason = f"{varies}, {_few_words(few)}" if few else varies
    if _repeats(noisy) < SMALL:
        return reason, MORE_REPEATS.format(n=_enough(noisy + few))
    return reason, QUIETER


def _few_words(few: list[dict[str, Any]]) -> str:
    return f"{len(few)} with too few repeats to judge"


def _failures(ctx: Context) -> list[tuple[str, str]]:
    """('2 of 6 cells failed', what to do) and the unreadable cell files."""
    out = []
    cells = ctx.cells
    failed = cells[cells["status"].isin(FAILED)]
    if len(failed):
        reasons = names(str(r) for r in failed["error"].dropna())
        fix = f"fix the {plural(len(failed), 'failed cell')}" + (f": {reasons}" if reasons else "")
        out.append((f"{len(failed)} of {len(cells)} cells failed", f"{fix} (see Failures)"))
    if ctx.unreadable:
        total = len(cells) + ctx.unreadable
        files = plural(ctx.unreadable, "cell file")
        rerun = f"{files} could not be read (see the skipped inputs): rerun those cells"
        out.append((f"{len(cells)} of {total} cells readable", rerun))
    return out


def judge(ctx: Context) -> Usability:
    """The verdict over the report's sweep cells (see the module docstring)."""
    measured = ctx.measured
    failures = _failures(ctx)
    if measured.empty:
        total = len(ctx.cells) + ctx.unreadable
        if len(ctx.cells):
            reason = f"none of the {plural(total, 'cell')} finished ok"
            failed = int(ctx.cells["status"].isin(FAILED).sum())
            reason += f" ({failed} failed)" if failed else ""
            remedy = "see Failures"
        elif unreached := [c.label for _, c in ctx.unreached()]:  # a sweep.json, no result yet
            reason = f"none of the {plural(len(unreached), 'planned cell')} has a result yet"
            reason, remedy = f"{reason} ({names(unreached)})", "see Failures"
        else:
            reason = f"none of the {plural(total, 'cell file')} could be read"
            remedy = "see the skipped inputs"
        return Usability("nothing to judge", reason, remedy, actions=tuple(f[1] for f in failures))
    total = len(measured)
    shared = contention(ctx, measured)
    busy_keys = frozenset(
        (str(r["experiment"]), str(r["cell_id"])) for r in (shared.cells if shared else [])
    )
    rows = records(measured)
    noisy = [r for r in rows if r.get("reliability") == "varies"]
    few = [r for r in rows if r.get("reliability") == "too_few_repeats"]
    unknown = [r for r in rows if r.get("reliability") == "spread_unknown"]
    if shared is not None and shared.cells and len(shared.cells) >= BUSY_SHARE * total:
        reason = f"{shared.what} {_where(ctx, shared.cells, total)}"
        host = (
            f"fix the host first: {shared.remedy}; the bottleneck findings tune the workload "
            "and come after"
        )
        return Usability(
            "no", reason, shared.remedy, True, busy_keys, (host, *(f[1] for f in failures))
        )
    if len(noisy) + len(few) == total:
        reason, remedy = _all_unsettled(noisy, few)
        first = _more_repeats(noisy + few) if "repeats" in remedy else remedy
        return Usability("no", reason, remedy, False, busy_keys, (first, *(f[1] for f in failures)))
    if not any(is_quiet(r) and r.get("reliability") not in UNSETTLED for r in rows):
        return _none_quiet_and_reliable(ctx, rows, shared, busy_keys, failures)
    clauses = [f[0] for f in failures]
    actions = [f[1] for f in failures]
    if shared is not None and shared.cells:
        clauses.append(f"{shared.what} {_where(ctx, shared.cells, total)}")
        actions.insert(0, f"{shared.remedy} for those cells: their figures measure the contention")
    if noisy:
        clauses.append(f"{len(noisy)} of {total} cells {level_word('varies')}")
    if few:
        clauses.append(f"{len(few)} of {total} cells with too few repeats to judge")
    actions += _repeat_actions(noisy, few)
    if unknown:
        if len(unknown) == total:
            every = "every cell of one repeat" if total > 1 else "one repeat"
            clauses.append(f"{every}: no spread to judge by")
        else:
            clauses.append(f"{len(unknown)} of {total} cells of one repeat (spread unknown)")
        actions.append(MORE_REPEATS.format(n=SMALL) + " to see the run-to-run spread")
    if clauses:
        return Usability("with care", ", ".join(clauses), None, False, busy_keys, tuple(actions))
    calm = shared is not None and shared.looked == total
    reason = f"all {total} cells reliable" if total > 1 else "its one cell measured reliably"
    if calm:
        reason += ", with no other load on the machine"
    return Usability("yes", reason, None, False, busy_keys, ())


def _none_quiet_and_reliable(
    ctx: Context,
    rows: list[dict[str, Any]],
    shared: _Contention | None,
    busy_keys: frozenset[tuple[str, str]],
    failures: list[tuple[str, str]],
) -> Usability:
    """'no': every cell either ran on a busy machine or is noisy (2 busy, 6 noisy: no figure
    a decision can rest on), with what to do for each kind."""
    total = len(rows)
    busy = [r for r in rows if not is_quiet(r)]
    noisy = [r for r in rows if r.get("reliability") == "varies" and is_quiet(r)]
    few = [r for r in rows if r.get("reliability") == "too_few_repeats" and is_quiet(r)]
    parts = []
    if busy:
        what = shared.what if shared is not None else "other load on the machine"
        parts.append(f"{what} {_where(ctx, busy, total)}")
    if noisy:
        said = level_word("varies")
        parts.append(f"the other {plural(len(noisy), 'cell')} {said}" if busy else f"all {said}")
    if few:
        parts.append(_few_words(few))
    reason = f"no cell is both quiet and reliable ({', '.join(parts)})"
    actions = []
    if busy:
        remedy = shared.remedy if shared is not None else IDLE_NODE
        actions.append(f"{remedy} for the busy cells: their figures measure the contention")
    if noisy:
        repeats = _repeats(noisy)
        actions.append(RAISE_REPEATS.format(now=repeats, n=SMALL) if repeats < SMALL else QUIETER)
    if few:
        actions.append(_more_repeats(few))
    first = actions[0].split(" for the busy cells")[0] if actions else None
    return Usability("no", reason, first, False, busy_keys, (*actions, *(f[1] for f in failures)))
