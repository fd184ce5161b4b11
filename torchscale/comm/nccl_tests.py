"""Import NVIDIA nccl-tests output (its text table, or the JSON its `-J` option writes) as a
CommResult, so a `torchscale comm` run and an nccl-tests run sit side by side in one report.

What the formats hold (nccl-tests src/common.cu, src/util.cu, src/common.h):

- Text. Newer versions open with `# nccl-tests version V ...` and `# Collective test starting:
  all_reduce_perf`; older ones name the test nowhere, so the caller must say which op it was
  (all_reduce and reduce_scatter both print `sum  -1`). Then `# nThread T nGpus G ... warmup
  iters: W iters: I ... validation: V ...`, one `#  Rank r Group g Pid p on HOST device d [bus]
  NAME` line per rank (rank 0 gathers every process's lines over MPI), a table whose two header
  lines name its columns (`size count type redop root`, then per placement `time algbw busbw
  #wrong`, newer versions adding `#bitdiff`, per-iteration columns and a timestamp), and the
  footer `# Out of bounds values : N OK|FAILED` / `# Avg bus bandwidth : X`. `#wrong` reads N/A
  when validation is off. Nothing prints the `-a` setting: the times are nccl-tests' default,
  the average over ranks, unless the JSON's argv says otherwise.
- JSON (`-J file`, format versions 2 and 3): `args` (argv: the only place naming the test),
  `config` (nthreads, ngpus, warmup_iters, iterations, validation, and `devices`: the first rank
  line of each process), `results` (size, count, type, redop, root, and out_of_place/in_place
  {time or cpu_time, alg_bw, bus_bw, nwrong}), `average_bus_bandwidth`. A run that fails still
  closes the file, without the footer keys.

Neither format carries what torchscale's per-rank and per-iteration fields mean, so `ranks` stays
empty and iter_* stay None. Every figure is kept as printed and checked against its own
definition (analysis/nccl_bandwidth.py): a row that disagrees is named in a warning, and a file
where most rows disagree is refused, since its op or its rank count must then be wrong.

Pasted output (docs, blogs, issues, acceptance reports) is read too: prefixes that launchers
add (`[1,0]<stdout>:`, SkyPilot's `(head, rank=0, pid=N)`), markdown quotes, '#' lost in a
paste, rows elided by hand, older versions (no `redop`/`root` columns, `Rank N Pid` lines, the
`error` column). What the text does not say is inferred (nccl_infer.py) and recorded in
`launch["inferred"]` and the warnings: the op from a command line, the file name or the table's
columns; the ranks from a command line, the sizes or busbw/algbw. An inference that two answers
fit is refused with the reason; a missing footer or a cut-off last row is a warning.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from torchscale.analysis.nccl_bandwidth import busbw_factor, size_bytes
from torchscale.catalog import COLLECTIVES
from torchscale.collective_facts import ops_where, sweep_facts
from torchscale.comm.comm_result import AcrossRanks, CommResult, CommRow, Placement
from torchscale.comm.nccl_footer import average_busbw, summarize, wrong_total
from torchscale.comm.nccl_infer import (
    MAX_RANKS,
    Command,
    RankRange,
    file_name_op,
    parse_command,
    ranks_from_bandwidth,
)
from torchscale.errors import UsageError, describe_os_error

RunStatus = Literal["ok", "failed", "oom", "timeout"]  # CommResult.status


class NcclTestsFormatError(UsageError):
    """The file is not nccl-tests output torchscale can use. Exit code 2, as for a bad option:
    what is wrong is the input named on the command line, not the machine."""


# nccl-tests program (<name>_perf) -> torchscale op; gather, scatter, hypercube, alltoallv...
# have no torchscale op and are refused
PROGRAM_OPS = {sweep_facts(op).nccl_tests_program: op for op in COLLECTIVES}
# nccl-tests type name -> (torch dtype name, bytes); "char" and "int" are NCCL 1 spellings
TYPES: dict[str, tuple[str, int]] = {
    "int8": ("int8", 1),
    "char": ("int8", 1),
    "uint8": ("uint8", 1),
    "int32": ("int32", 4),
    "int": ("int32", 4),
    "uint32": ("uint32", 4),
    "int64": ("int64", 8),
    "uint64": ("uint64", 8),
    "half": ("float16", 2),
    "float": ("float32", 4),
    "double": ("float64", 8),
    "bfloat16": ("bfloat16", 2),
    "f8e4m3": ("float8_e4m3fn", 1),  # NCCL's e4m3 is the finite-only (fn) variant
    "f8e5m2": ("float8_e5m2", 1),
}
REDUCING_OPS = ops_where(lambda op: op.runnable and op.reduces)
# send_recv prints whatever -o says: neither list checks it
NON_REDUCING_OPS = ops_where(lambda op: op.runnable and not op.reduces and not op.point_to_point)
ROOTED_OPS = ops_where(lambda op: op.runnable and op.rooted)
NO_REDOP = ("", "none")
# the oldest nccl-tests printed algbw = S (n-1)/n / t for these, and busbw = algbw
LEGACY_OPS = frozenset({"all_gather", "reduce_scatter"})
# nccl-tests' -a: 0 = rank 0's time, which torchscale's across_ranks has no name for
AVERAGE_SETTINGS: dict[int, AcrossRanks | None] = {0: None, 1: "avg", 2: "min", 3: "max"}
JSON_PLACEMENTS: tuple[tuple[str, Placement], ...] = (
    ("out_of_place", "out-of-place"),
    ("in_place", "in-place"),
)
JSON_RESOLUTION = 5e-7  # util.cu writes doubles with "%lf": six decimals
RELATIVE_SLACK = 1e-4  # beyond the printed rounding, for the footer's %g and float arithmetic
ROW_WARNINGS = 5  # mismatching rows named one by one; the rest are counted
# lines that mean the run died: nccl-tests' own CUDACHECK/NCCLCHECK/TESTCHECK, MPI and Slurm
FAILURE = re.compile(
    r"Test (?:NCCL |CUDA )?failure|Test timeout|MPI_ABORT|mpirun noticed|srun: error"
    r"|slurmstepd: error|Segmentation fault|core dumped|terminate called"
)
VERSION = re.compile(r"nccl-tests version (\S+)(?:.*?nccl-library=(\d+))?")
STARTING = re.compile(r"Collective test starting: (\S+)")
# "Rank 0 Group 0 Pid 7 on host device 0 [0x1b] NAME"; versions before 2.10 print no Group
RANK = re.compile(
    r"Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)"
    r"\s+\[[^\]]*\]\s*(.*)$"
)
# what launchers put before each line: SkyPilot's "(head, rank=0, pid=3808) ", then mpirun
# --tag-output's "[1,0]<stdout>:"; and a markdown quote ("> ") around a pasted block
PREFIX = re.compile(r"(?:\([^()]*\brank=\d+[^()]*\)\s*)?(?:\[\d+,\d+\]<std(?:out|err)>:)?")
QUOTE = re.compile(r"^(?:>\s?)+")
SETTINGS = {
    "nthreads": re.compile(r"nThread (\d+)"),
    "ngpus": re.compile(r"nGpus (\d+)"),
    "warmup": re.compile(r"warmup iters: (\d+)"),
    "iters": re.compile(r"\d iters: (\d+)"),  # the one after the warm-up count
    "agg": re.compile(r"agg iters: (\d+)"),
    "validation": re.compile(r"validation: (\d+)"),
    "graph": re.compile(r"graph: (\d+)"),
}
AVG_FOOTER = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)")
WRONG_FOOTER = re.compile(r"Out of bounds values\s*:\s*(\d+)")
INT = re.compile(r"-?\d+")
DTYPE = re.compile(r"[a-z]+\d*")  # float, half, bfloat16, int8, uint64, double, ...


@dataclass(frozen=True)
class _Figures:
    """One placement's printed figures, with half a unit of each one's last printed digit."""

    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: int | None
    time_res: float
    algbw_res: float
    busbw_res: float


@dataclass(frozen=True)
class _RawRow:
    """One line of an nccl-tests table as printed; `loc` is "14" (a line) or "results[3]"."""

    loc: str
    size: int
    count: int
    type_name: str
    redop: str | None
    root: int | None
    placements: tuple[tuple[Placement, _Figures], ...]


@dataclass(frozen=True)
class _Rank:
    rank: int
    group: int
    pid: int
    host: str
    device_name: str


@dataclass(frozen=True)
class _Layout:
    """Where each figure sits in a table row, read from the table's own column header."""

    lead: tuple[str, ...]  # size count type [redop root]
    group: tuple[str, ...]  # time algbw busbw [#wrong ...], once per placement
    timestamp: bool  # a trailing "YYYY-MM-DD HH:MM:SS" (-S 1)


@dataclass
class _Run:
    """What one nccl-tests run printed; a text file may hold several, one after another."""

    line: int
    last_line: int = 0
    program: str | None = None
    settings: dict[str, int] = field(default_factory=dict)
    ranks: list[_Rank] = field(default_factory=list)
    ranks_are_processes: bool = False  # JSON lists each process's first rank only
    layout: _Layout | None = None
    cputime: bool = False
    rows: list[_RawRow] = field(default_factory=list)
    footer_busbw: tuple[float, float] | None = None  # value, resolution
    footer_wrong: int | None = None
    ended: bool = False  # the footer was printed: the run finished its table
    failure: str | None = None  # the first line saying the run died, "line N: ..."
    command: Command | None = None  # the command line (or label) printed before the run
    bad_row: NcclTestsFormatError | None = None  # an unreadable table line, pending
    across_ranks: AcrossRanks = "avg"
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    launch: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    wall_s: float | None = None


@dataclass(frozen=True)
class _Converted:
    """One run as torchscale rows, with what the result needs about its ranks."""

    rows: list[CommRow]
    world_size: int
    hosts: frozenset[str]
    device_names: frozenset[str]
    warnings: list[str]
    inferred: dict[str, str]


# --- public API ---------------------------------------------------------------------------------


def read_nccl_tests(path: Path, op: str | None = None, run_id: str | None = None) -> CommResult:
    """Read an nccl-tests output file, text or `-J` JSON (told apart by the first character).
    `op` names the test when the file does not (older text output); `run_id` defaults to
    "nccl-tests-<file stem>"."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {describe_os_error(exc)}") from None
    text = data.decode("utf-8", errors="replace")
    rid = run_id or default_run_id(path)
    if text.lstrip().startswith("{"):
        return parse_json(text, op=op, source_name=str(path), run_id=rid)
    return parse_text(text, op=op, source_name=str(path), run_id=rid)


def parse_text(text: str, *, op: str | None, source_name: str, run_id: str) -> CommResult:
    """nccl-tests' stdout (one run, or several printed one after another) as one CommResult."""
    runs = _scan_text(text, source_name)
    usable, skipped = _usable_runs(runs, source_name)
    converted = [_convert(run, op, source_name) for run in usable]
    return _result(runs, usable, converted, skipped, source_name, run_id)


def parse_json(text: str, *, op: str | None, source_name: str, run_id: str) -> CommResult:
    """The JSON nccl-tests writes with `-J/--output_file` as a CommResult."""
    run = _scan_json(text, source_name)
    usable, skipped = _usable_runs([run], source_name)
    converted = [_convert(run, op, source_name)]
    return _result([run], usable, converted, skipped, source_name, run_id)


def default_run_id(path: Path) -> str:
    """A run id from the file's name, in the characters a file name always allows."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-.")
    return f"nccl-tests-{stem or 'import'}"


# --- shared helpers -----------------------------------------------------------------------------


def _fail(where: str, message: str) -> NcclTestsFormatError:
    return NcclTestsFormatError(f"{where}: {message}")


def _at(source: str, loc: str) -> str:
    """'file:14' for a text line, 'file results[3]' for a JSON record."""
    return f"{source}:{loc}" if loc.isdigit() else f"{source} {loc}"


def _label(loc: str) -> str:
    return f"line {loc}" if loc.isdigit() else loc


def _clip(text: str, width: int = 120) -> str:
    """One line of someone else's output, short enough to quote in a message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _printed(token: str) -> tuple[float, float]:
    """A number as printf wrote it, and half a unit of its last digit ("1.2e+04" -> 50)."""
    value = float(token)
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    scale = 10.0 ** int(exponent) if exponent else 1.0
    return value, 0.5 * 10.0**-decimals * scale


def _wrong(value: float | None) -> int | None:
    """#wrong: printed with %g (so 1e+06 for a million); N/A or negative means unchecked."""
    if value is None or not math.isfinite(value) or value < 0:
        return None
    return round(value)


def _program_op(name: str, where: str) -> str:
    """torchscale's op for an nccl-tests program name (all_reduce_perf, ./build/alltoall_perf,
    all_reduce_perf_mpi) or for a torchscale op name."""
    base = PurePosixPath(name).name
    if base in COLLECTIVES:
        return base
    match = re.fullmatch(r"(\w+?)_perf\w*", base)
    key = match.group(1) if match else base
    if key in PROGRAM_OPS:
        return PROGRAM_OPS[key]
    known = ", ".join(f"{p}_perf" for p in PROGRAM_OPS)
    raise _fail(
        where,
        f"{base} has no torchscale op: torchscale imports {known} (as {', '.join(COLLECTIVES)})",
    )


# --- text ---------------------------------------------------------------------------------------


def _scan_text(text: str, source: str) -> list[_Run]:
    """Every run in the text, each from its first header line to the next run's."""
    if not text.strip():
        raise _fail(source, "the file is empty")
    runs: list[_Run] = []
    run: _Run | None = None
    pending: Command | None = None  # a command line waiting for the run it starts
    continued = ""  # a command line split with trailing backslashes
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _unwrap(raw)
        if not line:
            continue
        commented = line.startswith("#")
        body = line.lstrip("#").strip() if commented else line
        if _opens_run(body, run) or (not commented and _opens_bare_table(body, run)):
            run = _Run(line=number, command=pending)
            pending = None
            runs.append(run)
        if run is not None:
            run.last_line = number
            if _read_line(run, body, commented, number, source):
                continue
        if body.endswith("\\"):
            continued += body[:-1] + " "
            continue
        command = parse_command(continued + body)
        continued = ""
        if command is not None:
            pending = _attach(run, command)
    if not runs:
        raise _fail(
            source,
            "not nccl-tests output: no '# nThread ...' header and no '#  size  count  type' "
            "table header",
        )
    return runs


def _unwrap(raw: str) -> str:
    """A line without what a launcher or a markdown quote put before nccl-tests' text."""
    line = QUOTE.sub("", raw.strip())
    prefix = PREFIX.match(line)
    return line[prefix.end() :].strip() if prefix else line


def _attach(run: _Run | None, command: Command) -> Command | None:
    """A command line belongs to the run still printing its header (no table header, no
    failure yet), else to the next one: returns the command left pending."""
    open_header = run is not None and run.layout is None and run.failure is None
    if run is not None and open_header and not run.ended and run.command is None:
        run.command = command
        return None
    return command


def _opens_run(body: str, run: _Run | None) -> bool:
    """A header line that belongs to a new run: the current one already printed its own."""
    if body.startswith("nThread ") or VERSION.search(body) or STARTING.search(body):
        return run is None or bool(run.settings) or run.layout is not None
    if body.split()[:3] == ["size", "count", "type"]:
        return run is None or run.ended or bool(run.rows)
    return False


def _opens_bare_table(body: str, run: _Run | None) -> bool:
    """A table row where no run is open (or the last one ended): a table pasted without
    nccl-tests' header lines, its own run."""
    return (run is None or run.ended) and bare_layout(body.split()) is not None


def bare_layout(tokens: list[str]) -> _Layout | None:
    """The columns of a table row printed without its column header, from the row itself:
    13 columns are nccl-tests 2.x's `size count type redop root`, 12 an older table with a
    redop (a word) or a root (an integer) but not both, 11 the oldest `size count type`; then
    `time algbw busbw` and `#wrong` (an integer or N/A) or the older `error` (a deviation) per
    placement, out-of-place and in-place. None when the row is none of these (in-place-only
    rows, of trace replay, cannot be told from a cut-off row: they need their header)."""
    if len(tokens) not in (11, 12, 13) or not (tokens[0].isdigit() and tokens[1].isdigit()):
        return None
    if not DTYPE.fullmatch(tokens[2]):
        return None
    lead: tuple[str, ...] = ("size", "count", "type")
    if len(tokens) == 13:
        lead += ("redop", "root")
    elif len(tokens) == 12:
        lead += ("root",) if INT.fullmatch(tokens[3]) else ("redop",)
    wrong = tokens[len(lead) + 3]
    group = ("time", "algbw", "busbw", "#wrong" if wrong == "N/A" or wrong.isdigit() else "error")
    return _Layout(lead=lead, group=group, timestamp=False)


def _read_line(run: _Run, body: str, commented: bool, number: int, source: str) -> bool:
    """Read one line into the run; False when it is none of nccl-tests' own lines."""
    if FAILURE.search(body):
        if run.failure is None:
            run.failure = f"line {number}: {_clip(body)}"
        return True
    tokens = body.split()
    is_row = not commented and len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit()
    if is_row and run.layout is None and not run.ended and (bare := bare_layout(tokens)):
        run.layout = bare
        run.notes.append(
            f"line {number}: no column header: read the table's {len(tokens)} columns as "
            f"{' '.join(bare.lead)}, then {' '.join(bare.group)} out-of-place and in-place"
        )
    if is_row and run.layout is not None and not run.ended:
        _add_row(run, tokens, run.layout, f"{number}", source)
        return True
    if _read_comment(run, body, number, source):
        return True
    if "NCCL WARN" in body:
        run.notes.append(f"line {number}: {_clip(body)}")
        return True
    return False


def _add_row(run: _Run, tokens: list[str], layout: _Layout, loc: str, source: str) -> None:
    """A table line; one that cannot be read is held: the last line of a cut-off table is
    dropped with a warning, any other is refused."""
    if run.bad_row is not None:
        raise run.bad_row
    try:
        run.rows.append(_text_row(tokens, layout, loc, source))
    except NcclTestsFormatError as error:
        run.bad_row = error


def _read_comment(run: _Run, body: str, number: int, source: str) -> bool:
    """The header and footer lines: version, test name, settings, ranks, the table header,
    the footer (with or without their '#'); False for any other line."""
    if (rank := RANK.match(body)) is not None:
        run.ranks.append(_text_rank(rank))
    elif body.startswith("nThread "):
        run.settings = {k: int(m.group(1)) for k, p in SETTINGS.items() if (m := p.search(body))}
    elif (version := VERSION.search(body)) is not None:
        run.environment["nccl_tests_version"] = version.group(1)
        if version.group(2):
            run.environment["nccl_version"] = int(version.group(2))
    elif (starting := STARTING.search(body)) is not None:
        run.program = starting.group(1)
    elif body.split()[:3] == ["size", "count", "type"]:
        run.layout = _layout(body.split(), f"{source}:{number}")
        run.cputime = "cputime" in run.layout.group
    elif (avg := AVG_FOOTER.search(body)) is not None:
        if run.bad_row is not None:
            raise run.bad_row
        run.footer_busbw = _footer_value(avg.group(1))
        run.ended = True
    elif (oob := WRONG_FOOTER.search(body)) is not None:
        run.footer_wrong = int(oob.group(1))
    else:
        return False
    return True


def _text_rank(match: re.Match[str]) -> _Rank:
    rank, group, pid, host, _device, name = match.groups()
    return _Rank(int(rank), int(group or 0), int(pid), host, name.strip())


def _footer_value(token: str) -> tuple[float, float] | None:
    try:
        value, _ = _printed(token)
    except ValueError:
        return None
    # %g: six significant digits
    return (value, abs(value) * 5e-6) if math.isfinite(value) else None


def _layout(tokens: list[str], where: str) -> _Layout:
    """Columns from the header line `size count type redop root time algbw busbw #wrong ...`."""
    starts = [i for i, name in enumerate(tokens) if name in ("time", "cputime")]
    if len(starts) != 2:
        raise _fail(where, "a table header without one time column per placement")
    lead = tuple(tokens[: starts[0]])
    first = tuple(tokens[starts[0] : starts[1]])
    second = tokens[starts[1] :]
    timestamp = bool(second) and second[-1] == "timestamp"
    if timestamp:
        second = second[:-1]
    known = lead[:2] == ("size", "count") and {"algbw", "busbw"} <= set(first)
    if tuple(second) != first or not known:
        raise _fail(where, f"an unknown table header: {_clip(' '.join(tokens))}")
    return _Layout(lead=lead, group=first, timestamp=timestamp)


def _text_row(tokens: list[str], layout: _Layout, loc: str, source: str) -> _RawRow:
    """One table line: the lead columns, then each placement's figures."""
    where = _at(source, loc)
    tokens = _fill_empty_redop(tokens, layout)
    lead_n, group_n = len(layout.lead), len(layout.group)
    tail = 2 if layout.timestamp else 0
    if len(tokens) == lead_n + 2 * group_n + tail:
        spans: list[tuple[Placement, int]] = [
            ("out-of-place", lead_n),
            ("in-place", lead_n + group_n),
        ]
    elif len(tokens) == lead_n + group_n + tail:  # trace replay prints in-place only
        spans = [("in-place", lead_n)]
    else:
        expected = lead_n + 2 * group_n + tail
        raise _fail(
            where, f"a table row with {len(tokens)} columns where the header has {expected}"
        )
    lead = dict(zip(layout.lead, tokens, strict=False))
    try:
        placements = tuple(
            (
                placement,
                _text_figures(dict(zip(layout.group, tokens[at : at + group_n], strict=True))),
            )
            for placement, at in spans
        )
        return _RawRow(
            loc=loc,
            size=int(lead["size"]),
            count=int(lead["count"]),
            type_name=lead["type"],
            redop=_redop(lead.get("redop")),
            root=_root(lead.get("root")),
            placements=placements,
        )
    except ValueError:
        raise _fail(
            where, f"a table row with a value that is not a number: {_clip(' '.join(tokens))}"
        ) from None


def _fill_empty_redop(tokens: list[str], layout: _Layout) -> list[str]:
    """Some versions print an empty redop for ops without one: the row then lacks a column,
    and the root (an integer) sits where the redop should be."""
    if "redop" not in layout.lead:
        return tokens
    at = layout.lead.index("redop")
    group_n, tail = len(layout.group), 2 if layout.timestamp else 0
    short = {len(layout.lead) - 1 + n * group_n + tail for n in (1, 2)}
    if len(tokens) in short and len(tokens) > at and INT.fullmatch(tokens[at]):
        return [*tokens[:at], "", *tokens[at:]]
    return tokens


def _text_figures(columns: Mapping[str, str]) -> _Figures:
    time_us, time_res = _printed(columns.get("time") or columns["cputime"])
    algbw, algbw_res = _printed(columns["algbw"])
    busbw, busbw_res = _printed(columns["busbw"])
    # older versions print `error` instead: the largest deviation, not a count (not imported)
    wrong_text = columns.get("#wrong", "N/A")
    wrong = None if wrong_text == "N/A" else _wrong(float(wrong_text))
    return _Figures(
        _finite(time_us), _finite(algbw), _finite(busbw), wrong, time_res, algbw_res, busbw_res
    )


def _redop(text: str | None) -> str | None:
    if text is None or text.strip() in NO_REDOP:
        return None
    return text.strip()


def _root(text: str | None) -> int | None:
    """The root column as printed (-1 for ops without a root); None where there is none."""
    if text is None or not text.strip():
        return None
    return int(text)


# --- JSON ---------------------------------------------------------------------------------------


def _scan_json(text: str, source: str) -> _Run:
    """The `-J` document as a run: the same fields the text carries, from their JSON keys."""
    doc = _json_document(text, source)
    config: dict[str, Any] = doc["config"]
    run = _Run(line=1, ranks_are_processes=True)
    args = [a for a in doc.get("args", []) if isinstance(a, str)]
    run.program = PurePosixPath(args[0]).name if args else None
    run.settings = _json_settings(config)
    run.ranks = [_json_rank(d) for d in config.get("devices", []) if isinstance(d, dict)]
    run.ended = isinstance(doc.get("average_bus_bandwidth"), dict)
    run.rows = _json_rows(doc["results"], run.ended, source)
    run.cputime = any(
        isinstance(r.get(p), dict) and "cpu_time" in r[p]
        for r in doc["results"]
        if isinstance(r, dict)
        for p, _ in JSON_PLACEMENTS
    )
    _json_footer(run, doc)
    _json_context(run, doc, args)
    return run


def _json_document(text: str, source: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(
            f"{source}:{exc.lineno}:{exc.colno}",
            f"not valid JSON ({exc.msg}); nccl-tests leaves its -J file like this when the run "
            "is killed: import its text output instead",
        ) from None
    if isinstance(doc, dict) and doc.get("kind") == "torchscale.comm":
        raise _fail(source, "a torchscale comm result, not nccl-tests output: nothing to import")
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("config"), dict)
        or not isinstance(doc.get("results"), list)
    ):
        raise _fail(
            source, "not nccl-tests JSON: no 'config' object and 'results' list (as -J writes)"
        )
    return doc


def _json_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _json_float(value: Any) -> float | None:
    """util.cu writes NaN as the string "nan"; anything not a finite number is None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return _finite(float(value))
    except ValueError:
        return None


def _json_settings(config: Mapping[str, Any]) -> dict[str, int]:
    keys = {
        "nthreads": "nthreads",
        "ngpus": "ngpus",
        "warmup": "warmup_iters",
        "iters": "iterations",
        "agg": "aggregated_iterations",
        "validation": "validation",
        "graph": "graph",
    }
    found = {name: _json_int(config.get(key)) for name, key in keys.items()}
    return {name: value for name, value in found.items() if value is not None}


def _json_rank(device: Mapping[str, Any]) -> _Rank:
    return _Rank(
        rank=_json_int(device.get("rank")) or 0,
        group=_json_int(device.get("group")) or 0,
        pid=_json_int(device.get("pid")) or 0,
        host=str(device.get("hostname", "")),
        device_name=str(device.get("device_info", "")).strip(),
    )


def _json_rows(results: Sequence[Any], ended: bool, source: str) -> list[_RawRow]:
    """Every complete record; a run that died leaves its last record half written."""
    rows = []
    for index, record in enumerate(results):
        loc = f"results[{index}]"
        last = index == len(results) - 1
        if not isinstance(record, dict) or not isinstance(record.get("in_place"), dict):
            if last and not ended:
                break
            raise _fail(_at(source, loc), "a result without its in_place figures")
        rows.append(_json_row(record, loc, source))
    return rows


def _json_row(record: Mapping[str, Any], loc: str, source: str) -> _RawRow:
    size, count = _json_int(record.get("size")), _json_int(record.get("count"))
    if size is None or count is None or not isinstance(record.get("type"), str):
        raise _fail(_at(source, loc), "a result without its size, count and type")
    placements: list[tuple[Placement, _Figures]] = []
    for key, placement in JSON_PLACEMENTS:
        figures = record.get(key)
        if isinstance(figures, dict):  # out_of_place is null in trace replay
            placements.append((placement, _json_figures(figures)))
    return _RawRow(
        loc=loc,
        size=size,
        count=count,
        type_name=record["type"],
        redop=_redop(str(record.get("redop", ""))),
        root=_json_int(record.get("root")),
        placements=tuple(placements),
    )


def _json_figures(figures: Mapping[str, Any]) -> _Figures:
    time_us = _json_float(figures.get("time", figures.get("cpu_time")))
    wrong = _json_float(figures.get("nwrong"))
    return _Figures(
        time_us=time_us,
        algbw=_json_float(figures.get("alg_bw")),
        busbw=_json_float(figures.get("bus_bw")),
        wrong=_wrong(wrong),
        time_res=JSON_RESOLUTION,
        algbw_res=JSON_RESOLUTION,
        busbw_res=JSON_RESOLUTION,
    )


def _json_footer(run: _Run, doc: Mapping[str, Any]) -> None:
    average = doc.get("average_bus_bandwidth")
    if isinstance(average, dict) and (value := _json_float(average.get("bandwidth"))) is not None:
        run.footer_busbw = (value, JSON_RESOLUTION)
    bounds = doc.get("out_of_bounds")
    if isinstance(bounds, dict):
        run.footer_wrong = _json_int(bounds.get("count"))
    errors = [e for e in doc.get("errors", []) if isinstance(e, str) and e.strip()]
    if errors:
        run.failure = f"errors: {_clip('; '.join(errors))}"
    elif not run.ended:
        run.failure = "the JSON ends before nccl-tests' footer (average_bus_bandwidth)"


def _json_context(run: _Run, doc: Mapping[str, Any], args: list[str]) -> None:
    """argv (-a, the program), the NCCL version, the start and end times."""
    run.launch = {"args": args}
    average = _average_setting(args)
    if average is not None:
        across = AVERAGE_SETTINGS.get(average)
        if across is None:
            run.notes.append(
                f"nccl-tests ran with -a {average}: its times are rank 0's, not an average over "
                "ranks; recorded as avg"
            )
        else:
            run.across_ranks = across
    version = _json_int(doc.get("nccl_version"))
    if version is not None:
        run.environment["nccl_version"] = version
    run.started_at, run.wall_s = _json_times(doc.get("start_time"), doc.get("end_time"))


def _average_setting(args: list[str]) -> int | None:
    """The value of -a / --average in argv, in any of getopt's spellings (the last wins)."""
    value: str | None = None
    for index, arg in enumerate(args):
        if arg in ("-a", "--average") and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith("--average="):
            value = arg.partition("=")[2]
        elif arg.startswith("-a") and len(arg) > 2 and not arg.startswith("--"):
            value = arg[2:]
    return _json_int(value) if value is not None else None


def _json_times(start: Any, end: Any) -> tuple[str | None, float | None]:
    """util.cu's "%Y-%m-%d %H:%M:%S" in the machine's local time (no zone is recorded)."""

    def parse(value: Any) -> datetime | None:
        try:
            return datetime.strptime(str(value), "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None

    began, ended = parse(start), parse(end)
    started_at = began.isoformat() if began else None
    wall_s = (ended - began).total_seconds() if began and ended else None
    return started_at, wall_s


# --- from runs to a result ----------------------------------------------------------------------


def _usable_runs(runs: list[_Run], source: str) -> tuple[list[_Run], list[str]]:
    """Runs with rows. When others have rows, a run that died before its table, whose output
    stops right after its table header, or, last in the text, before its table, is skipped
    with a warning."""
    usable: list[_Run] = []
    skipped: list[str] = []
    others = any(run.rows for run in runs)
    for index, run in enumerate(runs):
        if run.rows:
            _check_ended(run)
            usable.append(run)
        elif run.failure and len(runs) > 1:
            skipped.append(f"a run at line {run.line} failed before its table ({run.failure})")
        elif run.layout is not None and others:
            skipped.append(
                f"a run at line {run.line} stops after its table header, before any row "
                "(output cut short?)"
            )
        elif others and index == len(runs) - 1:  # the output ends in its header lines
            skipped.append(f"a run at line {run.line} stops before its table (output cut short?)")
        else:
            raise _no_rows(run, runs[index + 1] if index + 1 < len(runs) else None, source)
    return usable, skipped


def _no_rows(run: _Run, following: _Run | None, source: str) -> NcclTestsFormatError:
    where = _where(run, source)
    if run.failure:
        return _fail(where, f"nccl-tests failed before its first row ({run.failure})")
    if run.bad_row is not None:
        return run.bad_row
    if following is not None:
        return _fail(
            where,
            f"this run printed no table before another began at line {following.line}: several "
            "processes ran nccl-tests on their own (was it built with MPI=1?)",
        )
    if run.layout is None:
        return _fail(where, "nccl-tests' header but no table (no '#  size  count  type' line)")
    return _fail(where, "the table has no rows")


def _check_ended(run: _Run) -> None:
    """How the table ended: the footer, a failure, or neither (output cut short: a warning,
    and a last line that cannot be read is dropped)."""
    if run.bad_row is not None:
        run.notes.append(f"dropped the last table line, cut short: {run.bad_row}")
    if run.ended:
        if run.failure:
            run.notes.append(f"the run reported a failure but finished its table ({run.failure})")
        return
    if run.failure:
        # the failure itself becomes CommResult.error
        run.notes.append(
            f"the run stopped early: imported the {len(run.rows)} table lines before it"
        )
        return
    run.notes.append(
        f"no footer ('# Avg bus bandwidth') after the {len(run.rows)} table lines: the output "
        "may be cut short"
    )


def _where(run: _Run, source: str) -> str:
    return _at(source, str(run.line)) if not run.ranks_are_processes else source


# --- the op and the ranks: stated, or inferred ----------------------------------------------------


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
class _Identity:
    op: str
    world: int
    legacy: bool
    notes: list[str]
    inferred: dict[str, str]


def _identify(run: _Run, op: str | None, source: str) -> _Identity:
    """The run's op and rank count: as the output states them, else as the caller says, else
    inferred, each inference recorded; refused when two answers fit."""
    where = _where(run, source)
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
    return _Identity(fit.op, world, fit.legacy, [*notes, *world_notes], inferred)


def _stated_op(run: _Run, op: str | None, source: str) -> tuple[str | None, str, list[str]]:
    """The op as the output names it, else the caller, else a command line or the file name
    (how it was inferred, '' when stated); None when only the table can tell."""
    where = _where(run, source)
    if run.program:
        found = _program_op(run.program, where)
        if op is not None and _program_op(op, where) != found:
            return found, "", [f"the file says {run.program}: imported as {found}, not {op}"]
        return found, "", []
    command = run.command
    if op is not None:
        chosen = _program_op(op, where)
        if command is None or PROGRAM_OPS.get(command.program.split("_perf")[0]) == chosen:
            return chosen, "", []
        return chosen, "", [f"the command line runs {command.program}: imported as {chosen}"]
    if command is not None:
        how = f"from the {command.kind} '{_clip(command.text, 100)}'"
        return _program_op(command.program, where), how, []
    return _file_name_op(run, source)


def _file_name_op(run: _Run, source: str) -> tuple[str | None, str, list[str]]:
    """The op the file's name spells, when the table's columns allow it."""
    name = Path(source).name
    named = file_name_op(name)
    if named is None:
        return None, "", []
    if any(_column_problem(named, raw, strict=True) for raw in run.rows):
        return None, "", [f"the file name {name} suggests {named}, but the table does not fit it"]
    return named, f"from the file name {name}", []


def _listed_world(run: _Run, where: str) -> tuple[int | None, list[str]]:
    """Ranks in one communicator as the output lists them: text lists every rank, JSON each
    process's first (nThread x nGpus ranks each); NCCL_TESTS_SPLIT makes several equal
    communicators. None when nothing lists them."""
    per_process = run.settings.get("nthreads", 0) * run.settings.get("ngpus", 0) or None
    notes: list[str] = []
    processes = len({(r.host, r.pid) for r in run.ranks})
    if not run.ranks:
        return None, notes
    if run.ranks_are_processes:
        if per_process is None:
            raise _fail(where, "config lacks nthreads and ngpus: cannot tell how many ranks ran")
        total = processes * per_process
    else:
        total = _text_world(run, per_process, processes, where, notes)
    groups = len({r.group for r in run.ranks}) or 1
    if groups > 1:
        if total % groups:
            raise _fail(where, f"{total} ranks do not split into {groups} equal groups")
        notes.append(f"ranks split into {groups} communicators of {total // groups} ranks each")
    return total // groups, notes


def _text_world(
    run: _Run, per_process: int | None, processes: int, where: str, notes: list[str]
) -> int:
    numbers = [r.rank for r in run.ranks]
    repeated = sorted({n for n in numbers if numbers.count(n) > 1})
    if repeated:
        raise _fail(
            where,
            f"rank {repeated[0]} is listed {numbers.count(repeated[0])} times: several processes "
            "ran nccl-tests on their own (was it built with MPI=1?)",
        )
    if per_process is not None and processes * per_process != len(numbers):
        notes.append(
            f"{len(numbers)} rank lines, but {processes} processes x {per_process} ranks each: "
            f"used {processes * per_process}"
        )
        return processes * per_process
    return len(numbers)


def _fit(run: _Run, op: str, listed: int | None) -> _Fit:
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
    how = f"busbw/algbw = {estimate.ratio:.5g} -> {estimate.lo} ({facts.busbw_factor})"
    if estimate.exact:
        return _best(run, op, (estimate.lo,), how)
    return _ambiguous(run, op, estimate)


def _best(run: _Run, op: str, worlds: Sequence[int], how: str) -> _Fit:
    """The world (and bandwidth convention) with the fewest disagreeing rows."""
    scored = []
    for world in worlds:
        scored.append((_problems(run, op, world, legacy=False), world, False))
        if op in LEGACY_OPS and world > 1:
            scored.append((_problems(run, op, world, legacy=True), world, True))
    problems, world, legacy = min(scored)
    return _Fit(op, world, problems, legacy, how)


def _unknown(run: _Run, op: str, why: str) -> _Fit:
    """A fit whose rank count the table cannot give; its rows are checked where n does not
    matter (not at all for ops whose S counts the ranks: then every row is 0 bytes)."""
    problems = 0 if sweep_facts(op).ranks_in_size else _problems(run, op, 2, legacy=False)
    return _Fit(op, None, problems, False, "", why)


def _ambiguous(run: _Run, op: str, estimate: RankRange) -> _Fit:
    why = (
        f"busbw/algbw = {estimate.ratio:.5g} fits {estimate.lo} to {estimate.hi} ranks alike "
        f"({sweep_facts(op).busbw_factor}, printed to 2 decimals)"
    )
    problems = _problems(run, op, estimate.lo, legacy=False)
    return _Fit(op, None, problems, False, "", why, (estimate.lo, estimate.hi))


def _size_ratio(run: _Run) -> int | None:
    """size / (count x type size), when every row with elements gives the same integer."""
    ratios = set()
    for raw in run.rows:
        itemsize = TYPES.get(raw.type_name, ("", 0))[1]
        if raw.count <= 0 or itemsize <= 0:
            continue
        ratio, rest = divmod(raw.size, raw.count * itemsize)
        ratios.add(ratio if rest == 0 and ratio >= 1 else -1)
    return ratios.pop() if len(ratios) == 1 and -1 not in ratios else None


def _bandwidths(run: _Run) -> list[tuple[float, float, float, float]]:
    return [
        (fig.algbw, fig.algbw_res, fig.busbw, fig.busbw_res)
        for raw in run.rows
        for _, fig in raw.placements
        if fig.algbw is not None and fig.busbw is not None
    ]


def _problems(run: _Run, op: str, world: int, legacy: bool) -> int:
    rows = _legacy_rows(run.rows, world) if legacy else run.rows
    return sum(
        1
        for raw in rows
        if raw.type_name not in TYPES
        or _row_problem(op, world, raw, TYPES[raw.type_name][1], run.cputime)
    )


def _table_op(run: _Run, listed: int | None, where: str) -> _Fit:
    """The one op whose columns, sizes and busbw/algbw explain the table; refused when none
    does, or when several do alike."""
    fits = [
        fit
        for op in COLLECTIVES
        if not any(_column_problem(op, raw, strict=True) for raw in run.rows)
        and 2 * (fit := _fit(run, op, listed)).problems <= len(run.rows)
    ]
    shape = _shape(run)
    if not fits:
        raise _fail(
            where,
            f"the output does not name its test and no op fits its table ({shape}): pass the "
            f"op, one of {', '.join(COLLECTIVES)}",
        )
    fewest = min(fit.problems for fit in fits)
    tied = [fit for fit in fits if fit.problems == fewest]
    if len(tied) > 1:
        alike = " and ".join(_fit_text(fit) for fit in tied)
        raise _fail(
            where,
            f"the output does not name its test and {alike} fit its table alike ({shape}): "
            "pass the op",
        )
    return tied[0]


def _fit_text(fit: _Fit) -> str:
    return f"{fit.op} on {fit.world} ranks" if fit.world is not None else fit.op


def _shape(run: _Run) -> str:
    """The table's columns in a few words: what tells the ops apart."""
    first = run.rows[0] if run.rows else None
    lead = run.layout.lead if run.layout else ()
    redop = f"redop {first.redop}" if first and first.redop else "no redop"
    root = f"root {first.root}" if first and first.root is not None else "no root"
    ratio = _size_ratio(run)
    size = f"size = count x type size x {ratio}" if ratio else "sizes without a common ratio"
    columns = "" if "redop" in lead and "root" in lead else "older columns, "
    return f"{columns}{redop}, {root}, {size}"


def _resolve_world(run: _Run, fit: _Fit, where: str) -> tuple[int, str]:
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
    raise _fail(
        where,
        f"cannot tell how many ranks ran: {fit.why}, and the output has no '#  Rank' lines "
        "and no command line with -np/-g",
    )


def _also(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _per_process(run: _Run) -> int:
    return run.settings.get("nthreads", 0) * run.settings.get("ngpus", 0)


def _world_checks(run: _Run, world: int) -> list[str]:
    """An inferred rank count against what the header and a command line say."""
    notes = []
    per_process = _per_process(run)
    if per_process and world % per_process:
        notes.append(f"{world} ranks, but the header's nThread x nGpus is {per_process} a process")
    command = run.command
    if command is not None and command.ranks is not None and command.ranks != world:
        asked = f"{command.ranks} ranks ({command.how})"
        notes.append(f"the command line asks for {asked}: the table says {world}")
    return notes


def _legacy_rows(rows: Sequence[_RawRow], world: int) -> list[_RawRow]:
    """Rows of the oldest all_gather/reduce_scatter, whose printed algbw is S (n-1)/n / t (and
    busbw the same), with algbw rescaled to nccl-tests' S / t."""
    scale = world / (world - 1)

    def rescaled(fig: _Figures) -> _Figures:
        if fig.algbw is None:
            return fig
        return replace(fig, algbw=fig.algbw * scale, algbw_res=fig.algbw_res * scale)

    return [
        replace(raw, placements=tuple((p, rescaled(fig)) for p, fig in raw.placements))
        for raw in rows
    ]


def _check_columns(run: _Run, op: str, source: str) -> None:
    """The redop and root columns are a quick test of the op: reductions print a redop (sum...),
    all_gather, broadcast and alltoall none (send_recv prints whatever -o says); broadcast and
    reduce print their root, the other ops -1."""
    for raw in run.rows:
        problem = _column_problem(op, raw, strict=False)
        if problem:
            raise _fail(_at(source, raw.loc), f"the table shows {problem}: is the op right?")


def _column_problem(op: str, raw: _RawRow, *, strict: bool) -> str | None:
    """How a row's redop and root contradict `op`. `strict` (inferring the op): a table
    without a root column is not a rooted op's, as older versions print it for those only."""
    if op in REDUCING_OPS and raw.redop is None:
        return f"no redop, which {op} needs"
    if op in NON_REDUCING_OPS and raw.redop is not None:
        return f"redop {raw.redop!r}, which {op} does not have"
    if op in ROOTED_OPS and raw.root is not None and raw.root < 0:
        return f"root {raw.root}, but {op} has a root rank"
    if op in ROOTED_OPS and raw.root is None and strict:
        return f"no root column, which {op} prints"
    if op not in ROOTED_OPS and raw.root is not None and raw.root >= 0:
        return f"root {raw.root}, which {op} does not have"
    return None


def _dtype(raw: _RawRow, source: str) -> tuple[str, int]:
    if raw.type_name not in TYPES:
        raise _fail(_at(source, raw.loc), f"an unknown nccl-tests type {raw.type_name!r}")
    return TYPES[raw.type_name]


def _within(value: float, low: float, high: float) -> bool:
    slack = RELATIVE_SLACK * max(abs(low), abs(high))
    return low - slack <= value <= high + slack


def _algbw_problem(size: int, fig: _Figures) -> str | None:
    """algbw = S / t, t printed to a few digits: the bounds S / (t +- half a digit)."""
    if fig.time_us is None or fig.algbw is None or fig.time_us <= 0:
        return None
    slow = size / (fig.time_us + fig.time_res) / 1e3
    fast_time = fig.time_us - fig.time_res
    fast = size / fast_time / 1e3 if fast_time > 0 else math.inf
    if _within(fig.algbw, slow - fig.algbw_res, fast + fig.algbw_res):
        return None
    derived = size / fig.time_us / 1e3
    return f"algbw {fig.algbw:g} GB/s, but {size} B in {fig.time_us:g} us is {derived:.4g}"


def _busbw_problem(op: str, world: int, fig: _Figures) -> str | None:
    if fig.algbw is None or fig.busbw is None:
        return None
    factor = busbw_factor(op, world)
    low = (fig.algbw - fig.algbw_res) * factor - fig.busbw_res
    high = (fig.algbw + fig.algbw_res) * factor + fig.busbw_res
    if _within(fig.busbw, low, high):
        return None
    return (
        f"busbw {fig.busbw:g} GB/s, but algbw {fig.algbw:g} x {factor:.4g} ({op}, {world} ranks) "
        f"is {fig.algbw * factor:.4g}"
    )


def _row_problem(op: str, world: int, raw: _RawRow, itemsize: int, cputime: bool) -> str | None:
    """The first way a row disagrees with nccl-tests' own definitions, or None."""
    expected = size_bytes(op, raw.count, itemsize, world)
    if raw.size != expected:
        shape = f"{op} of {raw.count} x {itemsize} B on {world} ranks"
        return f"size {raw.size} B, but {shape} is {expected} B"
    for placement, fig in raw.placements:
        # with -C 1 the time column is the CPU's launch time, not the one algbw comes from
        problem = (None if cputime else _algbw_problem(raw.size, fig)) or _busbw_problem(
            op, world, fig
        )
        if problem:
            return f"{placement}: {problem}"
    return None


def _consistency(run: _Run, rows: Sequence[_RawRow], op: str, world: int, source: str) -> list[str]:
    """A warning per disagreeing row; refused when most disagree (the op or n is wrong)."""
    problems = [
        (raw, p)
        for raw in rows
        if (p := _row_problem(op, world, raw, _dtype(raw, source)[1], run.cputime))
    ]
    if problems and 2 * len(problems) > len(rows):
        raw, problem = problems[0]
        raise _fail(
            _at(source, raw.loc),
            f"{len(problems)} of {len(rows)} rows disagree with nccl-tests' formulas for "
            f"{op} on {world} ranks ({problem}): is the op or the rank count wrong?",
        )
    notes = [f"{_label(raw.loc)} ({raw.size} B): {problem}" for raw, problem in problems]
    if len(notes) > ROW_WARNINGS:
        notes = [*notes[:ROW_WARNINGS], f"{len(notes) - ROW_WARNINGS} more rows disagree"]
    return notes


def _footer_notes(run: _Run) -> list[str]:
    """The footer against the rows: Avg bus bandwidth is the mean busbw of every row."""
    notes = []
    figures = [fig for raw in run.rows for _, fig in raw.placements if fig.busbw is not None]
    if run.footer_busbw is not None and figures:
        footer, footer_res = run.footer_busbw
        mean = statistics.fmean(f.busbw for f in figures if f.busbw is not None)
        tolerance = max(f.busbw_res for f in figures) + footer_res + RELATIVE_SLACK * abs(footer)
        if abs(mean - footer) > tolerance:
            notes.append(
                f"the footer's Avg bus bandwidth {footer:g} GB/s is not the mean busbw of the "
                f"rows ({mean:.4g})"
            )
    wrong_rows = any(fig.wrong for raw in run.rows for _, fig in raw.placements)
    if run.footer_wrong and _error_column(run):
        notes.append(
            f"the footer counts {run.footer_wrong} results out of bounds (rows whose largest "
            "error passed nccl-tests' threshold)"
        )
    elif run.footer_wrong and not wrong_rows:
        notes.append(f"the footer counts {run.footer_wrong} out-of-bounds results; no row does")
    return notes


def _error_column(run: _Run) -> bool:
    return run.layout is not None and "error" in run.layout.group


def _comm_rows(run: _Run, raws: Sequence[_RawRow], op: str, source: str) -> list[CommRow]:
    rows = []
    for raw in raws:
        dtype, _ = _dtype(raw, source)
        for placement, fig in raw.placements:
            rows.append(
                CommRow(
                    op=op,
                    size_bytes=raw.size,
                    count=raw.count,
                    dtype=dtype,
                    redop=raw.redop if op in REDUCING_OPS else None,
                    root=raw.root if op in ROOTED_OPS else None,
                    placement=placement,
                    time_us=None if run.cputime else fig.time_us,
                    algbw_gbps=fig.algbw,
                    busbw_gbps=fig.busbw,
                    wrong=fig.wrong,
                )
            )
    return rows


def _extra_column_notes(run: _Run) -> list[str]:
    if run.cputime:
        return ["times are CPU launch times (-C 1), not op times: time_us left empty"]
    if _error_column(run):
        return [
            "this older nccl-tests prints 'error', the largest deviation of a result, not a "
            "count of wrong elements: #wrong left empty"
        ]
    extra = [c for c in (run.layout.group if run.layout else ()) if c.startswith("i_")]
    if extra:
        return [
            f"per-iteration columns ({', '.join(extra)}) not imported: nccl-tests takes the "
            "slowest process per iteration, torchscale pools every rank's iterations"
        ]
    return []


def _convert(run: _Run, op: str | None, source: str) -> _Converted:
    """One run's rows, checked, with its rank count and the warnings it earned."""
    identity = _identify(run, op, source)
    the_op, world = identity.op, identity.world
    _check_columns(run, the_op, source)
    rows = _legacy_rows(run.rows, world) if identity.legacy else run.rows
    warnings = [
        *(
            f"inferred {_inferred_text(k, the_op, world)}: {v}"
            for k, v in identity.inferred.items()
        ),
        *identity.notes,
        *run.notes,
        *_legacy_notes(identity),
        *_extra_column_notes(run),
        *_consistency(run, rows, the_op, world, source),
        *_footer_notes(run),
    ]
    return _Converted(
        rows=_comm_rows(run, rows, the_op, source),
        world_size=world,
        hosts=frozenset(r.host for r in run.ranks),
        device_names=frozenset(r.device_name for r in run.ranks if r.device_name),
        warnings=warnings,
        inferred=identity.inferred,
    )


def _inferred_text(key: str, op: str, world: int) -> str:
    return f"the op, {op}" if key == "op" else f"{world} ranks"


def _legacy_notes(identity: _Identity) -> list[str]:
    if not identity.legacy:
        return []
    n = identity.world
    return [
        f"this older nccl-tests printed {identity.op}'s algbw as S x (n-1)/n / t and busbw = "
        f"algbw: algbw_gbps rescaled to S / t (x {n}/{n - 1}), busbw kept as printed"
    ]


def _same(values: Sequence[Any]) -> Any:
    """The value every run agrees on, else None."""
    return values[0] if values and all(v == values[0] for v in values) else None


def _stopped(runs: list[_Run]) -> tuple[RunStatus, str | None]:
    """How the launch ended, as torchscale records its own: the first run that died early."""
    failure = next((r.failure for r in runs if r.failure and not r.ended), None)
    if failure is None:
        return "ok", None
    text = failure.lower()
    if "timeout" in text:
        return "timeout", failure
    return ("oom", failure) if "out of memory" in text else ("failed", failure)


def _result(
    every: list[_Run],
    runs: list[_Run],
    converted: list[_Converted],
    skipped: list[str],
    source: str,
    run_id: str,
) -> CommResult:
    """`every` run in the file, the `runs` with rows and their `converted` rows."""
    worlds = sorted({c.world_size for c in converted})
    if len(worlds) > 1:
        raise _fail(source, f"runs over different rank counts ({worlds}): import them one by one")
    rows = [row for c in converted for row in c.rows]
    prefix = len(runs) > 1
    warnings = [
        *skipped,
        *(
            f"run at line {r.line}: {w}" if prefix else w
            for r, c in zip(runs, converted, strict=True)
            for w in c.warnings
        ),
    ]
    dtypes = list(dict.fromkeys(row.dtype for row in rows))
    if len(dtypes) > 1:
        warnings.append(f"rows of several dtypes ({', '.join(dtypes)}): dtype names the first")
    names = frozenset().union(*(c.device_names for c in converted))
    status, error = _stopped(every)
    return CommResult(
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
        unavailable=_unavailable(converted),
        summaries=summarize(rows, worlds[0]),
        avg_busbw_gbps=average_busbw(rows),
        wrong_total=wrong_total(rows),
        status=status,
        error=error,
        warnings=warnings,
        environment=runs[0].environment,
        launch=_launch(runs, converted),
        started_at=runs[0].started_at,
        wall_s=runs[0].wall_s if len(runs) == 1 else None,
    )


def _unavailable(converted: list[_Converted]) -> dict[str, str]:
    """Fields the output does not give (CommResult.nodes must hold a number all the same)."""
    if any(c.hosts for c in converted):
        return {}
    return {"nodes": "the output lists no hosts (no '#  Rank' lines): nodes is not known"}


def _launch(runs: list[_Run], converted: list[_Converted]) -> dict[str, Any]:
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
