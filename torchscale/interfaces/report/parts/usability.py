"""Can these numbers be used? The first thing every format says, from the cells' load telemetry,
reliability and repeats and the cells that failed or could not be read, computed once here
(`model.Decision`); the rules are docs/reporting.md's "The first screen: headline rules" (a busy
machine puts fixing the host before tuning the workload). Which clause applies is decided here;
its words are the catalogue's `usability.*` (contracts/wording/report.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from torchscale.contracts.wording.cell_warnings import level_word
from torchscale.contracts.wording.report import words
from torchscale.interfaces.report.parts.context import Context, is_quiet, names, records
from torchscale.interfaces.report.parts.usable import Usability
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.reliability import UNSETTLED, repeat_count
from torchscale.offline.analysis.uncertainty import SMALL
from torchscale.orchestration.own_job.identity import OWN_PREFIX

# at least this share of the measured cells on a busy machine: the set cannot be used
BUSY_SHARE = 0.5
FAILED = ("failed", "oom", "timeout")


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
    other = [v for v in (finite(r.get("other_cpu_cores")) for r in cpu) if v is not None]
    what = words(
        "usability.contended", cpu=bool(cpu), gpu=bool(gpu), other=other, cores=_cores(ctx, cpu)
    )
    remedy = "rerun_idle_own_gpus" if cpu and gpu else ("rerun_idle" if cpu else "rerun_own_gpus")
    return _Contention(busy, len(looked), what, words(f"usability.{remedy}"))


def _where(what: str, busy: list[dict[str, Any]], total: int) -> str:
    # `what`: the machine's other load, said with the cells it was in
    if len(busy) == total:
        return words("usability.busy_every" if total > 1 else "usability.busy_one", what=what)
    # which cells: the summary's reliability line names them
    return words("usability.busy_some", what=what, n=len(busy), total=total)


def _repeats(rows: list[dict[str, Any]]) -> int:
    """The most repeats any of these cells ran (a pooled cell: its runs)."""
    counts = [max(repeat_count(r.get("samples_per_s_repeats")), 1) for r in rows]
    return max(counts, default=0)


def _enough(rows: list[dict[str, Any]]) -> int:
    """The repeats to ask for where these cells ran too few: SMALL, or twice what they ran
    where that was already SMALL or more (4 repeats within ±7 % can still give ±12 %)."""
    repeats = _repeats(rows)
    return SMALL if repeats < SMALL else 2 * repeats


def _job_steps(rows: list[dict[str, Any]]) -> int | None:
    """The measured steps a repeat of these cells holds where every one is a user's job (it
    has no measurement.repeats: its measured steps are cut in repeats of that many, so more
    repeats are more --steps of its profile); None otherwise."""
    per = [int(r.get("measured_steps") or 0) for r in rows]
    jobs = bool(rows) and all(str(r.get("model", "")).startswith(OWN_PREFIX) for r in rows)
    return max(per) if jobs and min(per) else None


def _more_repeats(rows: list[dict[str, Any]], n: int | None = None) -> str:
    # raise the repeats these cells ran to `n` (by default what they need, `_enough`)
    want = n or _enough(rows)
    if (steps := _job_steps(rows)) is not None:
        return words("usability.raise_job_steps", now=steps * _repeats(rows), n=steps * want)
    return words("usability.raise_repeats", now=_repeats(rows), n=want)


def _repeat_actions(noisy: list[dict[str, Any]], few: list[dict[str, Any]]) -> list[str]:
    """More repeats for the noisy cells of fewer than SMALL and for the cells of too few, one
    action where both need the same count."""
    wanted: dict[int, list[str]] = {}
    if noisy and _repeats(noisy) < SMALL:
        wanted.setdefault(SMALL, []).append("noisy")
    if few:
        wanted.setdefault(_enough(few), []).append("few")
    return [
        words(f"usability.more_repeats.{'_'.join(who)}", n=n, noisy=level_word("varies"))
        for n, who in wanted.items()
    ]


def _all_unsettled(noisy: list[dict[str, Any]], few: list[dict[str, Any]]) -> tuple[str, str, str]:
    """Why no cell is settled, what to do and the first action: too few repeats to judge
    (their repeats agree, their interval is wide for the count), or measurements that really
    vary (a quieter node, unless they also ran fewer than SMALL repeats: more repeats first)."""
    total = len(noisy) + len(few)
    code = "all_few" if total > 1 else "one_few"
    if noisy:
        code = "some_noisy" if few else ("all_noisy" if total > 1 else "one_noisy")
    reason = words(
        f"usability.{code}",
        n=len(noisy),
        total=total,
        few=len(few),
        repeats=_repeats(few),
        noisy=level_word("varies"),
    )
    if noisy and _repeats(noisy) >= SMALL:
        quieter = words("usability.quieter")
        return reason, quieter, quieter
    steps = _job_steps(noisy + few)
    more = (
        words("usability.more_job_steps", n=steps * _enough(noisy + few))
        if steps is not None
        else words("usability.more_repeats", n=_enough(noisy + few))
    )
    return reason, more, _more_repeats(noisy + few)


def _failures(ctx: Context) -> list[tuple[str, str]]:
    """('2 of 6 cells failed', what to do) and the unreadable cell files."""
    out = []
    cells = ctx.cells
    failed = cells[cells["status"].isin(FAILED)]
    if len(failed):
        reasons = names(str(r) for r in failed["error"].dropna())
        fix = "usability.fix_failed_why" if reasons else "usability.fix_failed"
        said = words("usability.failed", n=len(failed), total=len(cells))
        out.append((said, words(fix, n=len(failed), reasons=reasons)))
    if ctx.unreadable:
        total = len(cells) + ctx.unreadable
        rerun = words("usability.unreadable", n=ctx.unreadable)
        out.append((words("usability.readable", n=len(cells), total=total), rerun))
    return out


def judge(ctx: Context) -> Usability:
    """The verdict over the report's sweep cells (see the module docstring)."""
    measured = ctx.measured
    failures = _failures(ctx)
    if measured.empty:
        total = len(ctx.cells) + ctx.unreadable
        remedy = words("usability.see_failures")
        if len(ctx.cells):
            failed = int(ctx.cells["status"].isin(FAILED).sum())
            code = "usability.none_finished_failed" if failed else "usability.none_finished"
            reason = words(code, total=total, failed=failed)
        elif unreached := [c.label for _, c in ctx.unreached()]:  # a sweep.json, no result yet
            reason = words("usability.none_planned", n=len(unreached), cells=names(unreached))
        else:
            reason = words("usability.none_read", total=total)
            remedy = words("usability.see_skipped")
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
        reason = _where(shared.what, shared.cells, total)
        host = words("usability.host_first", remedy=shared.remedy)
        return Usability(
            "no", reason, shared.remedy, True, busy_keys, (host, *(f[1] for f in failures))
        )
    if len(noisy) + len(few) == total:
        reason, remedy, first = _all_unsettled(noisy, few)
        return Usability("no", reason, remedy, False, busy_keys, (first, *(f[1] for f in failures)))
    if not any(is_quiet(r) and r.get("reliability") not in UNSETTLED for r in rows):
        return _none_quiet_and_reliable(ctx, rows, shared, busy_keys, failures)
    clauses = [f[0] for f in failures]
    actions = [f[1] for f in failures]
    if shared is not None and shared.cells:
        clauses.append(_where(shared.what, shared.cells, total))
        actions.insert(0, words("usability.rerun_those", remedy=shared.remedy))
    if noisy:
        clauses.append(
            words("usability.noisy_cells", n=len(noisy), total=total, noisy=level_word("varies"))
        )
    if few:
        clauses.append(words("usability.few_cells", n=len(few), total=total))
    actions += _repeat_actions(noisy, few)
    if unknown:
        every = "usability.all_one_repeat" if total > 1 else "usability.one_repeat"
        code = every if len(unknown) == total else "usability.some_one_repeat"
        clauses.append(words(code, n=len(unknown), total=total))
        actions.append(words("usability.more_repeats.spread", n=SMALL))
    if clauses:
        return Usability("with care", ", ".join(clauses), None, False, busy_keys, tuple(actions))
    calm = "_calm" if shared is not None and shared.looked == total else ""
    reason = words(f"usability.{'all' if total > 1 else 'one'}_reliable{calm}", total=total)
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
    parts, actions = [], []
    remedy = shared.remedy if shared is not None else words("usability.rerun_idle")
    if busy:
        what = shared.what if shared is not None else words("usability.other_load")
        parts.append(_where(what, busy, total))
        actions.append(words("usability.rerun_busy", remedy=remedy))
    if noisy:
        said = "usability.other_noisy" if busy else "usability.all_said_noisy"
        parts.append(words(said, n=len(noisy), noisy=level_word("varies")))
        quiet = _repeats(noisy) >= SMALL
        actions.append(words("usability.quieter") if quiet else _more_repeats(noisy, SMALL))
    if few:
        parts.append(words("usability.few", few=len(few)))
        actions.append(_more_repeats(few))
    reason = words("usability.none_quiet_and_reliable", parts=parts)
    first = remedy if busy else (actions[0] if actions else None)
    return Usability("no", reason, first, False, busy_keys, (*actions, *(f[1] for f in failures)))
