"""From the runs read to one CommResult: which runs are usable, each run's rows converted
and checked, and the warnings, status and launch record of the whole file.

Neither format carries what torchscale's per-rank and per-iteration fields mean, so `ranks` stays
empty and iter_* stay None. A missing footer or a cut-off last row is a warning; a run that
died before its table is skipped with a warning when others have rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult, CommRow
from torchscale.offline.comm.nccl_footer import add_footer
from torchscale.offline.comm.nccl_tests.checks import (
    check_columns,
    consistency,
    dtype_of,
    error_column,
    footer_notes,
    legacy_rows,
)
from torchscale.offline.comm.nccl_tests.names import REDUCING_OPS, ROOTED_OPS
from torchscale.offline.comm.nccl_tests.op_and_ranks import Identity, identify
from torchscale.offline.comm.nccl_tests.records import (
    NcclTestsFormatError,
    RawRow,
    Run,
    fail,
    run_location,
)

RunStatus = Literal["ok", "failed", "oom", "timeout"]  # CommResult.status
# unavailable["nodes"]: CommResult.nodes must hold a number all the same
NO_HOSTS = Finding(code="comm.nodes.no_hosts")


@dataclass(frozen=True)
class _Converted:
    """One run as torchscale rows, with what the result needs about its ranks."""

    rows: list[CommRow]
    world_size: int
    hosts: frozenset[str]
    device_names: frozenset[str]
    warnings: list[Finding]
    inferred: dict[str, str]


def usable_runs(runs: list[Run], source: str) -> tuple[list[Run], list[Finding]]:
    """Runs with rows. When others have rows, a run that died before its table, whose output
    stops right after its table header, or, last in the text, before its table, is skipped
    with a warning."""
    usable: list[Run] = []
    skipped: list[Finding] = []
    others = any(run.rows for run in runs)
    for index, run in enumerate(runs):
        if run.rows:
            _check_ended(run)
            usable.append(run)
        elif run.failure and len(runs) > 1:
            failed = {"line": run.line, "failure": run.failure}
            skipped.append(Finding(code="comm.import.run_failed", figures=failed))
        elif run.layout is not None and others:
            skipped.append(Finding(code="comm.import.run_no_rows", figures={"line": run.line}))
        elif others and index == len(runs) - 1:  # the output ends in its header lines
            skipped.append(Finding(code="comm.import.run_no_table", figures={"line": run.line}))
        else:
            raise _no_rows(run, runs[index + 1] if index + 1 < len(runs) else None, source)
    return usable, skipped


def _no_rows(run: Run, following: Run | None, source: str) -> NcclTestsFormatError:
    where = run_location(run, source)
    if run.failure:
        return fail(where, f"nccl-tests failed before its first row ({run.failure})")
    if run.bad_row is not None:
        return run.bad_row
    if following is not None:
        return fail(
            where,
            f"this run printed no table before another began at line {following.line}: several "
            "processes ran nccl-tests on their own (was it built with MPI=1?)",
        )
    if run.layout is None:
        return fail(where, "nccl-tests' header but no table (no '#  size  count  type' line)")
    return fail(where, "the table has no rows")


def _check_ended(run: Run) -> None:
    """How the table ended: the footer, a failure, or neither (output cut short: a warning,
    and a last line that cannot be read is dropped)."""
    if run.bad_row is not None:
        dropped = {"error": str(run.bad_row)}
        run.notes.append(Finding(code="comm.import.last_line_dropped", figures=dropped))
    if run.ended:
        if run.failure:
            failure = {"failure": run.failure}
            run.notes.append(Finding(code="comm.import.failed_after_table", figures=failure))
        return
    rows = {"rows": len(run.rows)}
    # a failure itself becomes CommResult.error
    code = "comm.import.stopped_early" if run.failure else "comm.import.no_footer"
    run.notes.append(Finding(code=code, figures=rows))


def convert(run: Run, op: str | None, source: str) -> _Converted:
    """One run's rows, checked, with its rank count and the warnings it earned."""
    identity = identify(run, op, source)
    the_op, world = identity.op, identity.world
    check_columns(run, the_op, source)
    rows = legacy_rows(run.rows, world) if identity.legacy else run.rows
    inferred = {
        k: {"op": the_op, "how": how} if k == "op" else {"ranks": world, "how": how}
        for k, how in identity.inferred.items()
    }
    warnings = [
        *(Finding(code=f"comm.import.inferred_{k}", figures=v) for k, v in inferred.items()),
        *identity.notes,
        *run.notes,
        *_legacy_notes(identity),
        *_extra_column_notes(run),
        *consistency(run, rows, the_op, world, source),
        *footer_notes(run),
    ]
    return _Converted(
        rows=_comm_rows(run, rows, the_op, source),
        world_size=world,
        hosts=frozenset(r.host for r in run.ranks),
        device_names=frozenset(r.device_name for r in run.ranks if r.device_name),
        warnings=warnings,
        inferred=identity.inferred,
    )


def _comm_rows(run: Run, raws: Sequence[RawRow], op: str, source: str) -> list[CommRow]:
    return [
        CommRow(
            op=op,
            size_bytes=raw.size,
            count=raw.count,
            dtype=dtype_of(raw, source)[0],  # `consistency` already refused an unknown type
            redop=raw.redop if op in REDUCING_OPS else None,
            root=raw.root if op in ROOTED_OPS else None,
            placement=placement,
            time_us=None if run.cputime else fig.time_us,
            algbw_gbps=fig.algbw,
            busbw_gbps=fig.busbw,
            wrong=fig.wrong,
        )
        for raw in raws
        for placement, fig in raw.placements
    ]


def _extra_column_notes(run: Run) -> list[Finding]:
    if run.cputime:
        return [Finding(code="comm.import.cpu_times")]
    if error_column(run):
        return [Finding(code="comm.import.error_column")]
    extra = [c for c in (run.layout.group if run.layout else ()) if c.startswith("i_")]
    if extra:
        return [Finding(code="comm.import.iteration_columns", figures={"columns": extra})]
    return []


def _legacy_notes(identity: Identity) -> list[Finding]:
    if not identity.legacy:
        return []
    legacy = {"op": identity.op, "ranks": identity.world}
    return [Finding(code="comm.import.legacy_bandwidth", figures=legacy)]


def _same(values: Sequence[Any]) -> Any:
    """The value every run agrees on, else None."""
    return values[0] if values and all(v == values[0] for v in values) else None


def _stopped(runs: list[Run]) -> tuple[RunStatus, str | None]:
    """How the launch ended, as torchscale records its own: the first run that died early."""
    failure = next((r.failure for r in runs if r.failure and not r.ended), None)
    if failure is None:
        return "ok", None
    text = failure.lower()
    if "timeout" in text:
        return "timeout", failure
    return ("oom", failure) if "out of memory" in text else ("failed", failure)


def build_result(
    every: list[Run],
    runs: list[Run],
    converted: list[_Converted],
    skipped: list[Finding],
    source: str,
    run_id: str,
) -> CommResult:
    """`every` run in the file, the `runs` with rows and their `converted` rows."""
    worlds = sorted({c.world_size for c in converted})
    if len(worlds) > 1:
        raise fail(source, f"runs over different rank counts ({worlds}): import them one by one")
    rows = [row for c in converted for row in c.rows]
    prefix = len(runs) > 1
    warnings = [
        *skipped,
        *(
            Finding(code=w.code, figures={**w.figures, "run_line": r.line}) if prefix else w
            for r, c in zip(runs, converted, strict=True)
            for w in c.warnings
        ),
    ]
    dtypes = list(dict.fromkeys(row.dtype for row in rows))
    if len(dtypes) > 1:
        several = Finding(code="comm.import.several_dtypes", figures={"dtypes": dtypes})
        warnings.append(several)
    names = frozenset().union(*(c.device_names for c in converted))
    status, error = _stopped(every)
    return add_footer(
        CommResult(
            id=run_id,
            source="nccl-tests",
            imported_from=source,
            world_size=worlds[0],
            nodes=max(1, len(frozenset().union(*(c.hosts for c in converted)))),
            device="cuda",
            backend="nccl",
            device_name=next(iter(names)) if len(names) == 1 else None,
            dtype=dtypes[0],
            warmup_iters=_same([r.settings.get("warmup") for r in runs]),
            iters=_same([r.settings.get("iters") for r in runs]),
            check=any(row.wrong is not None for row in rows),
            across_ranks=_same([r.across_ranks for r in runs]) or "avg",
            rows=rows,
            unavailable={} if any(c.hosts for c in converted) else {"nodes": NO_HOSTS},
            status=status,
            error=error,
            warnings=warnings,
            environment=runs[0].environment,
            launch=_launch(runs, converted),
            started_at=runs[0].started_at,
            wall_s=runs[0].wall_s if len(runs) == 1 else None,
        )
    )


def _launch(runs: list[Run], converted: list[_Converted]) -> dict[str, Any]:
    """How nccl-tests was run, as far as the output says, and what was inferred and how."""
    entries = [
        {
            "program": r.program or (r.command.program if r.command else None),
            **{k: v for k, v in r.settings.items() if k != "warmup"},
            **r.launch,
            **({"command": r.command.text} if r.command else {}),
            **({"inferred": c.inferred} if c.inferred else {}),
        }
        for r, c in zip(runs, converted, strict=True)
    ]
    return entries[0] if len(entries) == 1 else {"runs": entries}
