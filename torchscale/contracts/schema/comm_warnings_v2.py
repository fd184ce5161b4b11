"""Schema 1 and 2 comm results stored their warnings as sentences: each sentence a torchscale
writer made is read back into its finding (contracts/wording/comm_warnings.py words it the same);
any other, or one whose figures the words rounded (a row's busbw check, the footer's mean), is
kept as stored (`comm.stored`)."""

from __future__ import annotations

import re
from typing import Any

from torchscale.contracts.finding import Finding

# the sentences as torchscale wrote them then: today's words may change, these may not
_ONE_RANK = (
    r"one rank: no data crosses a link, so the times are each call's fixed cost \(NCCL copies "
    r"nothing for an in-place op on one rank\) and algbw/busbw are not link bandwidths"
)
_BUSY = (
    r"busy machine: other processes used (?P<other_cores>[\d.]+)(?: of (?P<cores>\d+))? cores "
    r"during the run \(the run used (?P<run_cores>[\d.]+)\); timings may be slowed or noisy, "
    r"the smallest sizes first"
)
_ROW = (
    r"(?P<loc>\d+|results\[\d+\]) \((?P<size>\d+) B\): (?:(?P<placement>in-place|out-of-place): )?"
)
_ROW_LOC = r"(?:line )?" + _ROW

# code -> the sentence that code's one writer made, its figures as named groups
_SENTENCES: dict[str, str] = {
    "comm.one_rank": _ONE_RANK,
    "comm.busy_machine": _BUSY,
    "comm.import.run_failed": (
        r"a run at line (?P<line>\d+) failed before its table \((?P<failure>.*)\)"
    ),
    "comm.import.run_no_rows": (
        r"a run at line (?P<line>\d+) stops after its table header, before any row "
        r"\(output cut short\?\)"
    ),
    "comm.import.run_no_table": (
        r"a run at line (?P<line>\d+) stops before its table \(output cut short\?\)"
    ),
    "comm.import.last_line_dropped": r"dropped the last table line, cut short: (?P<error>.*)",
    "comm.import.failed_after_table": (
        r"the run reported a failure but finished its table \((?P<failure>.*)\)"
    ),
    "comm.import.stopped_early": (
        r"the run stopped early: imported the (?P<rows>\d+) table lines before it"
    ),
    "comm.import.no_footer": (
        r"no footer \('# Avg bus bandwidth'\) after the (?P<rows>\d+) table lines: the output "
        r"may be cut short"
    ),
    "comm.import.inferred_op": r"inferred the op, (?P<op>\w+): (?P<how>.*)",
    "comm.import.inferred_ranks": r"inferred (?P<ranks>\d+) ranks: (?P<how>.*)",
    "comm.import.program_named": (
        r"the file says (?P<program>\S+): imported as (?P<op>\w+), not (?P<asked_op>\S+)"
    ),
    "comm.import.command_differs": (
        r"the command line runs (?P<program>\S+): imported as (?P<op>\w+)"
    ),
    "comm.import.file_name_unfit": (
        r"the file name (?P<name>.+) suggests (?P<op>\w+), but the table does not fit it"
    ),
    "comm.import.split": (
        r"ranks split into (?P<groups>\d+) communicators of (?P<ranks>\d+) ranks each"
    ),
    "comm.import.rank_lines": (
        r"(?P<lines>\d+) rank lines, but (?P<processes>\d+) processes x (?P<per_process>\d+) "
        r"ranks each: used \d+"
    ),
    "comm.import.ranks_per_process": (
        r"(?P<ranks>\d+) ranks, but the header's nThread x nGpus is (?P<per_process>\d+) a process"
    ),
    "comm.import.command_ranks": (
        r"the command line asks for (?P<asked>\d+) ranks \((?P<how>.*)\): the table says "
        r"(?P<ranks>\d+)"
    ),
    "comm.import.no_column_header": (
        r"line (?P<line>\d+): no column header: read the table's (?P<columns>\d+) columns as "
        r"(?P<lead>[\w ]+), then (?P<group>[\w# ]+) out-of-place and in-place"
    ),
    "comm.import.nccl_warn": r"line (?P<line>\d+): (?P<text>.*NCCL WARN.*)",
    "comm.import.average_setting": (
        r"nccl-tests ran with -a (?P<average>-?\d+): its times are rank 0's, not an average over "
        r"ranks; recorded as avg"
    ),
    "comm.import.legacy_bandwidth": (
        r"this older nccl-tests printed (?P<op>\w+)'s algbw as S x \(n-1\)/n / t and busbw = "
        r"algbw: algbw_gbps rescaled to S / t \(x (?P<ranks>\d+)/\d+\), busbw kept as printed"
    ),
    "comm.import.cpu_times": (
        r"times are CPU launch times \(-C 1\), not op times: time_us left empty"
    ),
    "comm.import.error_column": (
        r"this older nccl-tests prints 'error', the largest deviation of a result, not a "
        r"count of wrong elements: #wrong left empty"
    ),
    "comm.import.iteration_columns": (
        r"per-iteration columns \((?P<columns>[\w, ]+)\) not imported: nccl-tests takes the "
        r"slowest process per iteration, torchscale pools every rank's iterations"
    ),
    "comm.import.row_algbw": (
        _ROW_LOC + r"algbw (?P<algbw>\S+) GB/s, but \d+ B in (?P<time_us>\S+) µs is \S+ GB/s"
    ),
    "comm.import.more_rows": r"(?P<rows>\d+) more rows disagree",
    "comm.import.footer_error_column": (
        r"the footer counts (?P<wrong>\d+) results out of bounds \(rows whose largest "
        r"error passed nccl-tests' threshold\)"
    ),
    "comm.import.footer_wrong": (
        r"the footer counts (?P<wrong>\d+) out-of-bounds results; no row does"
    ),
    "comm.import.several_dtypes": (
        r"rows of several dtypes \((?P<dtypes>[\w, ]+)\): dtype names the first"
    ),
}
_PATTERNS = {code: re.compile(f"^{text}$") for code, text in _SENTENCES.items()}
_IN_RUN = re.compile(r"^run at line (?P<run_line>\d+): (?P<rest>.*)$")
_INTS = {"line", "rows", "ranks", "groups", "lines", "processes", "per_process", "asked"}
_INTS |= {"columns", "average", "wrong", "size", "cores", "run_line"}
_FLOATS = {"other_cores", "run_cores", "algbw", "time_us"}
_LISTS = {"lead": " ", "group": " ", "dtypes": ", "}


def _figures(groups: dict[str, str | None], code: str) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, text in groups.items():
        if text is None:
            continue
        if name in _LISTS:
            figures[name] = text.split(_LISTS[name])
        elif name == "columns" and code == "comm.import.iteration_columns":
            figures[name] = text.split(", ")
        elif name in _INTS:
            figures[name] = int(text)
        elif name in _FLOATS:
            figures[name] = float(text)
        else:
            figures[name] = text
    return figures


def _known(text: str) -> Finding | None:
    for code, pattern in _PATTERNS.items():
        found = pattern.match(text)
        if found is not None:
            return Finding(code=code, figures=_figures(found.groupdict(), code))
    return None


def v2_warning(text: str, schema: int) -> Finding:
    """The finding an older comm result's warning sentence held, else the sentence as stored."""
    in_run = _IN_RUN.match(text)
    if in_run is not None:
        finding = _known(in_run["rest"])
        if finding is not None:
            figures = {**finding.figures, "run_line": int(in_run["run_line"])}
            return Finding(code=finding.code, figures=figures)
    finding = _known(text)
    if finding is None:
        return Finding(code="comm.stored", figures={"words": text, "schema": schema})
    return finding
