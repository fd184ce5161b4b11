"""Words for a comm result (`torchscale comm`, an imported nccl-tests output): the
`--min-busbw` gate's verdict (`CommResult.gate_finding`: `comm.gate.*`), the sizes left out and
why pairs or nodes are missing, and the warnings (`CommResult.warnings`: `comm.*`,
`comm.import.*`; one run's of a file with several said after 'run at line <n>: ')."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchscale.contracts.busy_machine import BUSY_NOTE
from torchscale.contracts.wording import Phrases, render, say
from torchscale.contracts.wording.spell import (
    as_set,
    gbps_derived,
    nccl_column,
    of,
    one_decimal,
    sig,
    size_bytes,
)

# Words of a collective-bandwidth run (`torchscale comm`, an imported nccl-tests output): the
# `--min-busbw` gate's verdict (figures: minimum_gbps, and busbw: op -> average GB/s of the ops
# judged, or ops: the ops with nothing to judge), the sizes left out (op, sizes, below_bytes,
# dtype) and why the pairs or the node count are missing.

if TYPE_CHECKING:
    from torchscale.contracts.schema.comm_result import CommResult


def _busbw(figures: Mapping[str, Any]) -> str:
    return ", ".join(f"{op} {nccl_column(value)}" for op, value in figures["busbw"].items())


_MINIMUM = "{minimum_gbps:set} GB/s"

ONE_RANK = (
    "one rank: no data crosses a link, so the times are each call's fixed cost (NCCL copies "
    "nothing for an in-place op on one rank) and algbw/busbw are not link bandwidths"
)


def gate_words(result: CommResult) -> str:
    """Why the gate said what it said, in today's words."""
    finding = result.gate_finding
    return "no reason recorded" if finding is None else say(finding)


# Words of a comm result's warnings (CommResult.warnings): torchscale's own (one rank, a busy
# machine) and an imported nccl-tests output's (comm.import.*: how the op and ranks were read,
# rows and a footer that disagree with nccl-tests' formulas, a run cut short). Evidence from the
# user's file (`failure`, `line`, `error`, `how`) is quoted as stored, never edited; `run_line`
# names the run of a file with several.


def where(loc: str) -> str:
    """A row's place in the file: 'line 14' for text, 'results[3]' for JSON."""
    return f"line {loc}" if loc.isdigit() else loc


def _row(f: Mapping[str, Any], problem: str) -> str:
    placement = f"{f['placement']}: " if f.get("placement") else ""
    return f"{where(f['loc'])} ({f['size']} B): {placement}{problem}"


def _busy(f: Mapping[str, Any]) -> str:
    total = f" of {f['cores']}" if f.get("cores") else ""
    return (
        f"busy machine: other processes used {one_decimal(f['other_cores'])}{total} cores during "
        f"the run (the run used {one_decimal(f['run_cores'])}); {BUSY_NOTE}, the smallest sizes "
        "first"
    )


PHRASES: Phrases = {
    "comm.gate.one_rank": ("cannot check " + _MINIMUM + ": " + ONE_RANK),
    "comm.gate.nothing_judged": lambda f: (
        f"no bus bandwidth to compare with {render(_MINIMUM, f)} "
        f"({', '.join(f['ops']) or 'no op'}: busbw is 0 by definition on one rank, or no row "
        "finished)"
    ),
    "comm.gate.below": lambda f: f"average busbw below {render(_MINIMUM, f)}: {_busbw(f)} GB/s",
    "comm.gate.passed": lambda f: f"average busbw at least {render(_MINIMUM, f)}: {_busbw(f)} GB/s",
    "comm.sizes_left_out": (
        "{op}: {sizes} size(s) below {below_bytes} B (one {dtype} element per rank) left out"
    ),
    "comm.pairs.one_rank": "needs at least 2 ranks",
    "comm.pairs.stopped": "the launch stopped before the pairs were measured (see its error)",
    "comm.nodes.no_hosts": "the output lists no hosts (no '#  Rank' lines): nodes is not known",
    "comm.one_rank": ONE_RANK,
    "comm.busy_machine": _busy,
    "comm.import.run_failed": "a run at line {line} failed before its table ({failure})",
    "comm.import.run_no_rows": (
        "a run at line {line} stops after its table header, before any row (output cut short?)"
    ),
    "comm.import.run_no_table": "a run at line {line} stops before its table (output cut short?)",
    "comm.import.last_line_dropped": "dropped the last table line, cut short: {error}",
    "comm.import.failed_after_table": (
        "the run reported a failure but finished its table ({failure})"
    ),
    "comm.import.stopped_early": "the run stopped early: imported the {rows} table lines before it",
    "comm.import.no_footer": (
        "no footer ('# Avg bus bandwidth') after the {rows} table lines: the output may be cut "
        "short"
    ),
    "comm.import.inferred_op": "inferred the op, {op}: {how}",
    "comm.import.inferred_ranks": "inferred {ranks} ranks: {how}",
    "comm.import.program_named": "the file says {program}: imported as {op}, not {asked_op}",
    "comm.import.command_differs": "the command line runs {program}: imported as {op}",
    "comm.import.file_name_unfit": (
        "the file name {name} suggests {op}, but the table does not fit it"
    ),
    "comm.import.split": "ranks split into {groups} communicators of {ranks} ranks each",
    "comm.import.rank_lines": lambda f: (
        f"{f['lines']} rank lines, but {f['processes']} processes x {f['per_process']} ranks "
        f"each: used {f['processes'] * f['per_process']}"
    ),
    "comm.import.ranks_per_process": (
        "{ranks} ranks, but the header's nThread x nGpus is {per_process} a process"
    ),
    "comm.import.command_ranks": (
        "the command line asks for {asked} ranks ({how}): the table says {ranks}"
    ),
    "comm.import.no_column_header": (
        "line {line}: no column header: read the table's {columns} columns as {lead:words}, then "
        "{group:words} out-of-place and in-place"
    ),
    "comm.import.nccl_warn": "line {line}: {text}",
    "comm.import.average_setting": (
        "nccl-tests ran with -a {average}: its times are rank 0's, not an average over ranks; "
        "recorded as avg"
    ),
    "comm.import.legacy_bandwidth": lambda f: (
        f"this older nccl-tests printed {f['op']}'s algbw as S x (n-1)/n / t and busbw = "
        f"algbw: algbw_gbps rescaled to S / t (x {f['ranks']}/{f['ranks'] - 1}), busbw kept "
        "as printed"
    ),
    "comm.import.cpu_times": "times are CPU launch times (-C 1), not op times: time_us left empty",
    "comm.import.error_column": (
        "this older nccl-tests prints 'error', the largest deviation of a result, not a count of "
        "wrong elements: #wrong left empty"
    ),
    "comm.import.iteration_columns": (
        "per-iteration columns ({columns:list}) not imported: nccl-tests takes the slowest "
        "process per iteration, torchscale pools every rank's iterations"
    ),
    "comm.import.row_size": lambda f: _row(
        f,
        f"size {f['size']} B, but {f['op']} of {of(f['count'], size_bytes(f['itemsize']))} on "
        f"{f['ranks']} ranks is {f['expected']} B",
    ),
    "comm.import.row_algbw": lambda f: _row(
        f,
        f"algbw {as_set(f['algbw'], 'GB/s')}, but {f['size']} B in "
        f"{as_set(f['time_us'], 'µs')} is {gbps_derived(f['size'] / f['time_us'] / 1e3)}",
    ),
    "comm.import.row_busbw": lambda f: _row(
        f,
        f"busbw {as_set(f['busbw'], 'GB/s')}, but algbw "
        f"{of(as_set(f['algbw']), sig(f['factor'], 4))} ({f['op']}, {f['ranks']} ranks) is "
        f"{gbps_derived(f['algbw'] * f['factor'])}",
    ),
    "comm.import.more_rows": "{rows} more rows disagree",
    "comm.import.footer_busbw": lambda f: (
        f"the footer's Avg bus bandwidth {as_set(f['footer'], 'GB/s')} is not the mean "
        f"busbw of the rows ({gbps_derived(f['mean'])})"
    ),
    "comm.import.footer_error_column": (
        "the footer counts {wrong} results out of bounds (rows whose largest error passed "
        "nccl-tests' threshold)"
    ),
    "comm.import.footer_wrong": "the footer counts {wrong} out-of-bounds results; no row does",
    "comm.import.several_dtypes": "rows of several dtypes ({dtypes:list}): dtype names the first",
}
