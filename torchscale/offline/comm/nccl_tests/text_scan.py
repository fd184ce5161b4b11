"""The text scanner: nccl-tests' stdout, as printed or as pasted, read into runs of raw rows.

What the text holds (nccl-tests src/common.cu, src/util.cu, src/common.h): newer versions open
with `# nccl-tests version V ...` and `# Collective test starting: all_reduce_perf`; older ones
name the test nowhere, so the caller must say which op it was (all_reduce and reduce_scatter
both print `sum  -1`). Then `# nThread T nGpus G ... warmup iters: W iters: I ... validation:
V ...`, one `#  Rank r Group g Pid p on HOST device d [bus] NAME` line per rank (rank 0 gathers
every process's lines over MPI), a table whose two header lines name its columns (`size count
type redop root`, then per placement `time algbw busbw #wrong`, newer versions adding
`#bitdiff`, per-iteration columns and a timestamp), and the footer `# Out of bounds values : N
OK|FAILED` / `# Avg bus bandwidth : X`. `#wrong` reads N/A when validation is off. Nothing
prints the `-a` setting: the times are nccl-tests' default, the average over ranks.

Pasted output (docs, blogs, issues, acceptance reports) is read too: prefixes that launchers
add (`[1,0]<stdout>:`, SkyPilot's `(head, rank=0, pid=N)`), markdown quotes, '#' lost in a
paste, rows elided by hand, older versions (no `redop`/`root` columns, `Rank N Pid` lines, the
`error` column). A file may hold several runs, one after another; a command line printed
before a run is kept with it (comm/nccl_infer.py reads it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import Placement
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.comm.nccl_infer import Command, parse_command
from torchscale.offline.comm.nccl_tests.records import (
    Figures,
    Layout,
    NcclTestsFormatError,
    RankLine,
    RawRow,
    Run,
    clip,
    fail,
    location,
    read_redop,
    wrong_count,
)

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


def scan_text(text: str, source: str) -> list[Run]:
    """Every run in the text, each from its first header line to the next run's."""
    if not text.strip():
        raise fail(source, "the file is empty")
    runs: list[Run] = []
    run: Run | None = None
    pending: Command | None = None  # a command line waiting for the run it starts
    continued = ""  # a command line split with trailing backslashes
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _unwrap(raw)
        if not line:
            continue
        commented = line.startswith("#")
        body = line.lstrip("#").strip() if commented else line
        if _opens_run(body, run) or (not commented and _opens_bare_table(body, run)):
            run = Run(line=number, command=pending)
            pending = None
            runs.append(run)
        if run is not None and _read_line(run, body, commented, number, source):
            continue
        if body.endswith("\\"):
            continued += body[:-1] + " "
            continue
        command = parse_command(continued + body)
        continued = ""
        if command is not None:
            pending = _attach(run, command)
    if not runs:
        raise fail(
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


def _attach(run: Run | None, command: Command) -> Command | None:
    """A command line belongs to the run still printing its header (no table header, no
    failure yet), else to the next one: returns the command left pending."""
    open_header = run is not None and run.layout is None and run.failure is None
    if run is not None and open_header and not run.ended and run.command is None:
        run.command = command
        return None
    return command


def _opens_run(body: str, run: Run | None) -> bool:
    """A header line that belongs to a new run: the current one already printed its own."""
    if body.startswith("nThread ") or VERSION.search(body) or STARTING.search(body):
        return run is None or bool(run.settings) or run.layout is not None
    if body.split()[:3] == ["size", "count", "type"]:
        return run is None or run.ended or bool(run.rows)
    return False


def _opens_bare_table(body: str, run: Run | None) -> bool:
    """A table row where no run is open (or the last one ended): a table pasted without
    nccl-tests' header lines, its own run."""
    return (run is None or run.ended) and bare_layout(body.split()) is not None


def bare_layout(tokens: list[str]) -> Layout | None:
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
    return Layout(lead=lead, group=group, timestamp=False)


def _read_line(run: Run, body: str, commented: bool, number: int, source: str) -> bool:
    """Read one line into the run; False when it is none of nccl-tests' own lines."""
    if FAILURE.search(body):
        if run.failure is None:
            run.failure = f"line {number}: {clip(body)}"
        return True
    tokens = body.split()
    is_row = not commented and len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit()
    if is_row and run.layout is None and not run.ended and (bare := bare_layout(tokens)):
        run.layout = bare
        header = {"line": number, "columns": len(tokens), "lead": list(bare.lead)}
        header["group"] = list(bare.group)
        run.notes.append(Finding(code="comm.import.no_column_header", figures=header))
    if is_row and run.layout is not None and not run.ended:
        _add_row(run, tokens, run.layout, f"{number}", source)
        return True
    if _read_comment(run, body, number, source):
        return True
    if "NCCL WARN" in body:
        warned = {"line": number, "text": clip(body)}
        run.notes.append(Finding(code="comm.import.nccl_warn", figures=warned))
        return True
    return False


def _add_row(run: Run, tokens: list[str], layout: Layout, loc: str, source: str) -> None:
    """A table line; one that cannot be read is held: the last line of a cut-off table is
    dropped with a warning, any other is refused."""
    if run.bad_row is not None:
        raise run.bad_row
    try:
        run.rows.append(_text_row(tokens, layout, loc, source))
    except NcclTestsFormatError as error:
        run.bad_row = error


def _read_comment(run: Run, body: str, number: int, source: str) -> bool:
    """The header and footer lines: version, test name, settings, ranks, the table header,
    the footer (with or without their '#'); False for any other line."""
    if (rank := RANK.match(body)) is not None:
        index, group, pid, host, _device, name = rank.groups()
        run.ranks.append(RankLine(int(index), int(group or 0), int(pid), host, name.strip()))
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


def _footer_value(token: str) -> tuple[float, float] | None:
    try:
        value, _ = _printed(token)
    except ValueError:
        return None
    # %g: six significant digits
    return (value, abs(value) * 5e-6) if math.isfinite(value) else None


def _layout(tokens: list[str], where: str) -> Layout:
    """Columns from the header line `size count type redop root time algbw busbw #wrong ...`."""
    starts = [i for i, name in enumerate(tokens) if name in ("time", "cputime")]
    if len(starts) != 2:
        raise fail(where, "a table header without one time column per placement")
    lead = tuple(tokens[: starts[0]])
    first = tuple(tokens[starts[0] : starts[1]])
    second = tokens[starts[1] :]
    timestamp = bool(second) and second[-1] == "timestamp"
    if timestamp:
        second = second[:-1]
    known = lead[:2] == ("size", "count") and {"algbw", "busbw"} <= set(first)
    if tuple(second) != first or not known:
        raise fail(where, f"an unknown table header: {clip(' '.join(tokens))}")
    return Layout(lead=lead, group=first, timestamp=timestamp)


def _text_row(tokens: list[str], layout: Layout, loc: str, source: str) -> RawRow:
    """One table line: the lead columns, then each placement's figures."""
    where = location(source, loc)
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
        raise fail(where, f"a table row with {len(tokens)} columns where the header has {expected}")
    lead = dict(zip(layout.lead, tokens, strict=False))
    try:
        placements = tuple(
            (placement, _text_figures(layout.group, tokens[at : at + group_n]))
            for placement, at in spans
        )
        return RawRow(
            loc=loc,
            size=int(lead["size"]),
            count=int(lead["count"]),
            type_name=lead["type"],
            redop=read_redop(lead.get("redop")),
            root=_root(lead.get("root")),
            placements=placements,
        )
    except ValueError:
        raise fail(
            where, f"a table row with a value that is not a number: {clip(' '.join(tokens))}"
        ) from None


def _fill_empty_redop(tokens: list[str], layout: Layout) -> list[str]:
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


def _text_figures(names: Sequence[str], values: Sequence[str]) -> Figures:
    columns = dict(zip(names, values, strict=True))
    time_us, time_res = _printed(columns.get("time") or columns["cputime"])
    algbw, algbw_res = _printed(columns["algbw"])
    busbw, busbw_res = _printed(columns["busbw"])
    # older versions print `error` instead: the largest deviation, not a count (not imported)
    wrong_text = columns.get("#wrong", "N/A")
    wrong = None if wrong_text == "N/A" else wrong_count(float(wrong_text))
    return Figures(
        finite(time_us), finite(algbw), finite(busbw), wrong, time_res, algbw_res, busbw_res
    )


def _printed(token: str) -> tuple[float, float]:
    """A number as printf wrote it, and half a unit of its last digit ("1.2e+04" -> 50)."""
    value = float(token)
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    scale = 10.0 ** int(exponent) if exponent else 1.0
    return value, 0.5 * 10.0**-decimals * scale


def _root(text: str | None) -> int | None:
    """The root column as printed (-1 for ops without a root); None where there is none."""
    return None if text is None or not text.strip() else int(text)
