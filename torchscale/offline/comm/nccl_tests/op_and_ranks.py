"""The op and the rank count of a run: as the output states them, else as the caller says,
else inferred from a command line, the file name or the table itself.

An inference is recorded (how it was made) for `launch["inferred"]` and the warnings; when two
answers fit the table alike, the import is refused with the reason rather than guessed.
comm/nccl_infer.py reads the command line, the file name and busbw/algbw; this module weighs
them against the rows (checks.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchscale.contracts.catalog import COLLECTIVES
from torchscale.contracts.collective_facts import sweep_facts
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.spell import sig
from torchscale.offline.comm.nccl_infer import (
    MAX_RANKS,
    RankRange,
    file_name_op,
    ranks_from_bandwidth,
)
from torchscale.offline.comm.nccl_tests.checks import column_problem, legacy_rows, row_problem
from torchscale.offline.comm.nccl_tests.names import LEGACY_OPS, PROGRAM_OPS, TYPES, program_op
from torchscale.offline.comm.nccl_tests.records import Run, clip, fail, run_location


@dataclass(frozen=True)
class _Fit:
    """How well one op explains a run's table: its rank count and the rows that disagree."""

    op: str
    world: int | None  # None: the table cannot tell (`why`)
    problems: int
    legacy: bool  # the oldest all_gather/reduce_scatter bandwidths (LEGACY_OPS)
    how: str  # how `world` was read, for the inferred record
    why: str = ""
    span: tuple[int, int] | None = None  # the rank counts busbw/algbw allows alike


@dataclass(frozen=True)
class Identity:
    op: str
    world: int
    legacy: bool
    notes: list[Finding]
    inferred: dict[str, str]


def identify(run: Run, op: str | None, source: str) -> Identity:
    """The run's op and rank count: as the output states them, else as the caller says, else
    inferred, each inference recorded; refused when two answers fit."""
    where = run_location(run, source)
    stated, how_op, notes = _stated_op(run, op, source)
    listed, world_notes = _listed_world(run, where)
    fit = _fit(run, stated, listed) if stated else _table_op(run, listed, where)
    if stated is None:
        how_op = f"from the table ({_shape(run)}): the only op that fits"
    inferred = {"op": how_op} if how_op else {}
    world, how_world = _resolve_world(run, fit, where)
    if listed is None:
        inferred["ranks"] = how_world
        notes += _world_checks(run, world)
    return Identity(fit.op, world, fit.legacy, [*notes, *world_notes], inferred)


def _stated_op(run: Run, op: str | None, source: str) -> tuple[str | None, str, list[Finding]]:
    """The op as the output names it, else the caller, else a command line or the file name
    (how it was inferred, '' when stated); None when only the table can tell."""
    where = run_location(run, source)
    if run.program:
        found = program_op(run.program, where)
        if op is not None and program_op(op, where) != found:
            named = {"program": run.program, "op": found, "asked_op": op}
            return found, "", [Finding(code="comm.import.program_named", figures=named)]
        return found, "", []
    command = run.command
    if op is not None:
        chosen = program_op(op, where)
        if command is None or PROGRAM_OPS.get(command.program.split("_perf")[0]) == chosen:
            return chosen, "", []
        runs = {"program": command.program, "op": chosen}
        return chosen, "", [Finding(code="comm.import.command_differs", figures=runs)]
    if command is not None:
        how = f"from the {command.kind} '{clip(command.text, 100)}'"
        return program_op(command.program, where), how, []
    return _file_name_op(run, source)


def _file_name_op(run: Run, source: str) -> tuple[str | None, str, list[Finding]]:
    """The op the file's name spells, when the table's columns allow it."""
    name = Path(source).name
    named = file_name_op(name)
    if named is None:
        return None, "", []
    if any(column_problem(named, raw, strict=True) for raw in run.rows):
        unfit = Finding(code="comm.import.file_name_unfit", figures={"name": name, "op": named})
        return None, "", [unfit]
    return named, f"from the file name {name}", []


def _listed_world(run: Run, where: str) -> tuple[int | None, list[Finding]]:
    """Ranks in one communicator as the output lists them: text lists every rank, JSON each
    process's first (nThread x nGpus ranks each); NCCL_TESTS_SPLIT makes several equal
    communicators. None when nothing lists them."""
    per_process = _per_process(run) or None
    notes: list[Finding] = []
    processes = len({(r.host, r.pid) for r in run.ranks})
    if not run.ranks:
        return None, notes
    if run.ranks_are_processes:
        if per_process is None:
            raise fail(where, "config lacks nthreads and ngpus: cannot tell how many ranks ran")
        total = processes * per_process
    else:
        total = _text_world(run, per_process, processes, where, notes)
    groups = len({r.group for r in run.ranks}) or 1
    if groups > 1:
        if total % groups:
            raise fail(where, f"{total} ranks do not split into {groups} equal groups")
        split = {"groups": groups, "ranks": total // groups}
        notes.append(Finding(code="comm.import.split", figures=split))
    return total // groups, notes


def _text_world(
    run: Run, per_process: int | None, processes: int, where: str, notes: list[Finding]
) -> int:
    numbers = [r.rank for r in run.ranks]
    repeated = sorted({n for n in numbers if numbers.count(n) > 1})
    if repeated:
        raise fail(
            where,
            f"rank {repeated[0]} is listed {numbers.count(repeated[0])} times: several processes "
            "ran nccl-tests on their own (was it built with MPI=1?)",
        )
    if per_process is not None and processes * per_process != len(numbers):
        lines = {"lines": len(numbers), "processes": processes, "per_process": per_process}
        notes.append(Finding(code="comm.import.rank_lines", figures=lines))
        return processes * per_process
    return len(numbers)


def _fit(run: Run, op: str, listed: int | None) -> _Fit:
    """The rank count that best explains the table for `op`: the listed one, else the one
    the sizes (ops whose S counts the ranks) or busbw/algbw fix."""
    facts = sweep_facts(op)
    if listed is not None:
        return _best(run, op, (listed,), "")
    if facts.ranks_in_size:
        ratio = _size_ratio(run)
        if ratio is not None:
            return _best(run, op, (ratio,), f"size / (count x type size) = {ratio} on every row")
        if any(raw.count > 0 for raw in run.rows):
            why = "size / (count x type size) differs between rows, as it does for no rank count"
            return _Fit(op, None, len(run.rows), False, "", why)
        return _unknown(run, op, "no row has elements to compare its size with")
    if facts.busbw_factor == "1":
        return _unknown(run, op, f"busbw = algbw for {op} on any number of ranks")
    estimate = ranks_from_bandwidth(op, _bandwidths(run))
    if estimate is None:
        return _unknown(run, op, "no row's algbw is large enough to tell busbw/algbw")
    how = f"busbw/algbw = {sig(estimate.ratio, 5)} -> {estimate.lo} ({facts.busbw_factor})"
    if estimate.exact:
        return _best(run, op, (estimate.lo,), how)
    return _ambiguous(run, op, estimate)


def _best(run: Run, op: str, worlds: Sequence[int], how: str) -> _Fit:
    """The world (and bandwidth convention) with the fewest disagreeing rows."""
    scored = []
    for world in worlds:
        scored.append((_problems(run, op, world, legacy=False), world, False))
        if op in LEGACY_OPS and world > 1:
            scored.append((_problems(run, op, world, legacy=True), world, True))
    problems, world, legacy = min(scored)
    return _Fit(op, world, problems, legacy, how)


def _unknown(run: Run, op: str, why: str) -> _Fit:
    """A fit whose rank count the table cannot give; its rows are checked where n does not
    matter (not at all for ops whose S counts the ranks: then every row is 0 bytes)."""
    problems = 0 if sweep_facts(op).ranks_in_size else _problems(run, op, 2, legacy=False)
    return _Fit(op, None, problems, False, "", why)


def _ambiguous(run: Run, op: str, estimate: RankRange) -> _Fit:
    why = (
        f"busbw/algbw = {sig(estimate.ratio, 5)} fits {estimate.lo} to {estimate.hi} ranks "
        f"alike ({sweep_facts(op).busbw_factor}, printed to 2 decimals)"
    )
    problems = _problems(run, op, estimate.lo, legacy=False)
    return _Fit(op, None, problems, False, "", why, (estimate.lo, estimate.hi))


def _size_ratio(run: Run) -> int | None:
    """size / (count x type size), when every row with elements gives the same integer."""
    ratios = set()
    for raw in run.rows:
        itemsize = TYPES.get(raw.type_name, ("", 0))[1]
        if raw.count <= 0 or itemsize <= 0:
            continue
        ratio, rest = divmod(raw.size, raw.count * itemsize)
        ratios.add(ratio if rest == 0 and ratio >= 1 else -1)
    return ratios.pop() if len(ratios) == 1 and -1 not in ratios else None


def _bandwidths(run: Run) -> list[tuple[float, float, float, float]]:
    return [
        (fig.algbw, fig.algbw_res, fig.busbw, fig.busbw_res)
        for raw in run.rows
        for _, fig in raw.placements
        if fig.algbw is not None and fig.busbw is not None
    ]


def _problems(run: Run, op: str, world: int, legacy: bool) -> int:
    rows = legacy_rows(run.rows, world) if legacy else run.rows
    return sum(
        1
        for raw in rows
        if raw.type_name not in TYPES
        or row_problem(op, world, raw, TYPES[raw.type_name][1], run.cputime)
    )


def _table_op(run: Run, listed: int | None, where: str) -> _Fit:
    """The one op whose columns, sizes and busbw/algbw explain the table; refused when none
    does, or when several do alike."""
    fits = [
        fit
        for op in COLLECTIVES
        if not any(column_problem(op, raw, strict=True) for raw in run.rows)
        and 2 * (fit := _fit(run, op, listed)).problems <= len(run.rows)
    ]
    shape = _shape(run)
    if not fits:
        raise fail(
            where,
            f"the output does not name its test and no op fits its table ({shape}): pass the "
            f"op, one of {', '.join(COLLECTIVES)}",
        )
    fewest = min(fit.problems for fit in fits)
    tied = [fit for fit in fits if fit.problems == fewest]
    if len(tied) > 1:
        alike = " and ".join(
            f"{fit.op} on {fit.world} ranks" if fit.world is not None else fit.op for fit in tied
        )
        raise fail(
            where,
            f"the output does not name its test and {alike} fit its table alike ({shape}): "
            "pass the op",
        )
    return tied[0]


def _shape(run: Run) -> str:
    """The table's columns in a few words: what tells the ops apart."""
    first = run.rows[0] if run.rows else None
    lead = run.layout.lead if run.layout else ()
    redop = f"redop {first.redop}" if first and first.redop else "no redop"
    root = f"root {first.root}" if first and first.root is not None else "no root"
    ratio = _size_ratio(run)
    size = f"size = count x type size x {ratio}" if ratio else "sizes without a common ratio"
    columns = "" if "redop" in lead and "root" in lead else "older columns, "
    return f"{columns}{redop}, {root}, {size}"


def _resolve_world(run: Run, fit: _Fit, where: str) -> tuple[int, str]:
    """The fit's rank count, else a command line's, else the header's; refused when none
    tells, saying why."""
    if fit.world is not None:
        return fit.world, fit.how
    lo, hi = fit.span or (1, MAX_RANKS)
    per_process = _per_process(run)
    asked = run.command.ranks if run.command else None
    if asked and lo <= asked <= hi and (not per_process or asked % per_process == 0):
        how = f"the command line: {run.command.how}" if run.command else ""
        return asked, _also(fit.why if fit.span else "", how)
    if per_process and not run.ranks_are_processes:
        if fit.span is None:
            # a hand-trimmed log: nccl-tests always prints its rank lines
            return per_process, f"nThread x nGpus = {per_process} in the header, one process"
        multiples = range(-(-lo // per_process) * per_process, hi + 1, per_process)
        if len(multiples) == 1:
            how = f"the one multiple of nThread x nGpus = {per_process}"
            return multiples[0], _also(fit.why, how)
    raise fail(
        where,
        f"cannot tell how many ranks ran: {fit.why}, and the output has no '#  Rank' lines "
        "and no command line with -np/-g",
    )


def _also(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _per_process(run: Run) -> int:
    return run.settings.get("nthreads", 0) * run.settings.get("ngpus", 0)


def _world_checks(run: Run, world: int) -> list[Finding]:
    """An inferred rank count against what the header and a command line say."""
    notes = []
    per_process = _per_process(run)
    if per_process and world % per_process:
        per = {"ranks": world, "per_process": per_process}
        notes.append(Finding(code="comm.import.ranks_per_process", figures=per))
    command = run.command
    if command is not None and command.ranks is not None and command.ranks != world:
        asked = {"asked": command.ranks, "how": command.how, "ranks": world}
        notes.append(Finding(code="comm.import.command_ranks", figures=asked))
    return notes
