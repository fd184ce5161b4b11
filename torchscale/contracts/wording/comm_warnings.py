"""Words of a comm result's warnings (CommResult.warnings): torchscale's own (one rank, a busy
machine) and an imported nccl-tests output's (comm.import.*: how the op and ranks were read,
rows and a footer that disagree with nccl-tests' formulas, a run cut short). Evidence from the
user's file (`failure`, `line`, `error`, `how`) is quoted as stored, never edited; `run_line`
names the run of a file with several."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.busy_machine import BUSY_NOTE
from torchscale.contracts.wording.comm import ONE_RANK
from torchscale.contracts.wording.spell import (
    as_set,
    gbps_derived,
    of,
    one_decimal,
    sig,
    size_bytes,
)


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


def _inferred_ranks(f: Mapping[str, Any]) -> str:
    return f"inferred {f['ranks']} ranks: {f['how']}"


Phrase = Callable[[Mapping[str, Any]], str]

_PHRASES: dict[str, Phrase] = {
    "comm.one_rank": lambda f: ONE_RANK,
    "comm.busy_machine": _busy,
    "comm.import.run_failed": lambda f: (
        f"a run at line {f['line']} failed before its table ({f['failure']})"
    ),
    "comm.import.run_no_rows": lambda f: (
        f"a run at line {f['line']} stops after its table header, before any row "
        "(output cut short?)"
    ),
    "comm.import.run_no_table": lambda f: (
        f"a run at line {f['line']} stops before its table (output cut short?)"
    ),
    "comm.import.last_line_dropped": lambda f: (
        f"dropped the last table line, cut short: {f['error']}"
    ),
    "comm.import.failed_after_table": lambda f: (
        f"the run reported a failure but finished its table ({f['failure']})"
    ),
    "comm.import.stopped_early": lambda f: (
        f"the run stopped early: imported the {f['rows']} table lines before it"
    ),
    "comm.import.no_footer": lambda f: (
        f"no footer ('# Avg bus bandwidth') after the {f['rows']} table lines: the output "
        "may be cut short"
    ),
    "comm.import.inferred_op": lambda f: f"inferred the op, {f['op']}: {f['how']}",
    "comm.import.inferred_ranks": _inferred_ranks,
    "comm.import.program_named": lambda f: (
        f"the file says {f['program']}: imported as {f['op']}, not {f['asked_op']}"
    ),
    "comm.import.command_differs": lambda f: (
        f"the command line runs {f['program']}: imported as {f['op']}"
    ),
    "comm.import.file_name_unfit": lambda f: (
        f"the file name {f['name']} suggests {f['op']}, but the table does not fit it"
    ),
    "comm.import.split": lambda f: (
        f"ranks split into {f['groups']} communicators of {f['ranks']} ranks each"
    ),
    "comm.import.rank_lines": lambda f: (
        f"{f['lines']} rank lines, but {f['processes']} processes x {f['per_process']} ranks "
        f"each: used {f['processes'] * f['per_process']}"
    ),
    "comm.import.ranks_per_process": lambda f: (
        f"{f['ranks']} ranks, but the header's nThread x nGpus is {f['per_process']} a process"
    ),
    "comm.import.command_ranks": lambda f: (
        f"the command line asks for {f['asked']} ranks ({f['how']}): the table says {f['ranks']}"
    ),
    "comm.import.no_column_header": lambda f: (
        f"line {f['line']}: no column header: read the table's {f['columns']} columns as "
        f"{' '.join(f['lead'])}, then {' '.join(f['group'])} out-of-place and in-place"
    ),
    "comm.import.nccl_warn": lambda f: f"line {f['line']}: {f['text']}",
    "comm.import.average_setting": lambda f: (
        f"nccl-tests ran with -a {f['average']}: its times are rank 0's, not an average over "
        "ranks; recorded as avg"
    ),
    "comm.import.legacy_bandwidth": lambda f: (
        f"this older nccl-tests printed {f['op']}'s algbw as S x (n-1)/n / t and busbw = "
        f"algbw: algbw_gbps rescaled to S / t (x {f['ranks']}/{f['ranks'] - 1}), busbw kept "
        "as printed"
    ),
    "comm.import.cpu_times": lambda f: (
        "times are CPU launch times (-C 1), not op times: time_us left empty"
    ),
    "comm.import.error_column": lambda f: (
        "this older nccl-tests prints 'error', the largest deviation of a result, not a "
        "count of wrong elements: #wrong left empty"
    ),
    "comm.import.iteration_columns": lambda f: (
        f"per-iteration columns ({', '.join(f['columns'])}) not imported: nccl-tests takes the "
        "slowest process per iteration, torchscale pools every rank's iterations"
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
    "comm.import.more_rows": lambda f: f"{f['rows']} more rows disagree",
    "comm.import.footer_busbw": lambda f: (
        f"the footer's Avg bus bandwidth {as_set(f['footer'], 'GB/s')} is not the mean "
        f"busbw of the rows ({gbps_derived(f['mean'])})"
    ),
    "comm.import.footer_error_column": lambda f: (
        f"the footer counts {f['wrong']} results out of bounds (rows whose largest "
        "error passed nccl-tests' threshold)"
    ),
    "comm.import.footer_wrong": lambda f: (
        f"the footer counts {f['wrong']} out-of-bounds results; no row does"
    ),
    "comm.import.several_dtypes": lambda f: (
        f"rows of several dtypes ({', '.join(f['dtypes'])}): dtype names the first"
    ),
}


def _in_run(phrase: Phrase) -> Phrase:
    """A warning of one run of a file with several names that run first."""

    def worded(f: Mapping[str, Any]) -> str:
        line = f.get("run_line")
        return phrase(f) if line is None else f"run at line {line}: {phrase(f)}"

    return worded


PHRASES: dict[str, Phrase] = {code: _in_run(phrase) for code, phrase in _PHRASES.items()}
