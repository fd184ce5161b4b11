"""A comm result as the text table nccl-tests users read every day (plain lines, no markup):
nccl-tests' columns in its order, '#' before every line that is not a row, one table per op,
then the footer; our extra columns after #wrong. The full layout (about 120 columns) diffs
against nccl-tests; a narrower width drops what another column gives, the pair matrix becomes
the slowest pairs, and comment lines wrap between words, no figure cut (docs/comm.md, "Width").
"""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Callable

from torchscale.contracts.schema.comm_result import CommResult, CommRow
from torchscale.contracts.wording import say
from torchscale.contracts.wording.comm import gate_words
from torchscale.contracts.wording.spell import as_set, cv, gbps_derived, nccl_column, sig, times
from torchscale.offline.comm.nccl_footer import inside_noise

NOISE_LISTED = 12  # sizes named in the footer's noise line; the JSON has every row

MAX_MATRIX_RANKS = 16  # above this, the pairs are listed slowest first instead of a matrix
SLOW_PAIR = 0.5  # a pair below half the median pair bandwidth is called out


def _number(value: float | None, width: int) -> str:
    """nccl-tests prints 2 decimals; tiny CPU bandwidths keep 3 significant digits instead."""
    if value is None:
        return "-".rjust(width)
    return nccl_column(value).rjust(width)


def _slowest(row: CommRow) -> str:
    if len(row.ranks) < 2:
        return "-"
    slow = max(row.ranks, key=lambda r: r.time_us)
    fast = min(r.time_us for r in row.ranks)
    ratio = slow.time_us / fast if fast > 0 else float("inf")
    return f"r{slow.rank} {times(ratio, 2)}"


HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    "    p50      p99     cv  slowest",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
    "   (us)     (us)         rank/fastest",
)


_LEAD = (12, 13, 9, 7, 7)  # nccl-tests' widths of size, count, type, redop, root


def _root(row: CommRow) -> int:
    return row.root if row.root is not None else -1


def row_line(row: CommRow) -> str:
    """One row, nccl-tests' columns first."""
    lead = (row.size_bytes, row.count, row.dtype, row.redop or "none", _root(row))
    head = " ".join(str(text).rjust(width) for text, width in zip(lead, _LEAD, strict=True))
    if row.status != "ok":
        return f"{head}   {row.status}: {row.reason or 'no reason recorded'}"
    wrong = "N/A" if row.wrong is None else str(row.wrong)
    spread = "-" if row.iter_cv is None else cv(row.iter_cv)
    return (
        f"{head} {_number(row.time_us, 8)} {_number(row.algbw_gbps, 7)} "
        f"{_number(row.busbw_gbps, 7)} {wrong.rjust(7)} {_number(row.iter_p50_us, 8)} "
        f"{_number(row.iter_p99_us, 8)} {spread.rjust(6)}  {_slowest(row)}"
    )


def header_lines(result: CommResult) -> list[str]:
    source = (
        f"nccl-tests output imported from {result.imported_from}"
        if result.source == "nccl-tests"
        else "torchscale comm"
    )
    iters = (
        f"{result.warmup_iters} warm-up + {result.iters} timed iterations"
        if result.iters is not None
        else "iterations not recorded"
    )
    check = "check on" if result.check else "check off"
    lines = [
        f"# {source}: {result.world_size} rank(s), {result.backend} on {result.device}"
        f" ({result.device_name or 'device unknown'}), {result.dtype}",
        f"# {iters}, {check}; time: {result.across_ranks} over ranks of each rank's "
        "window / iterations",
    ]
    lines += [f"# note: {say(note)}" for note in result.skipped]
    return lines


FULL_WIDTH = max(len(line) for line in HEADER)


# the narrow table: (name, unit, cell); nccl-tests' own columns, less what another column gives
_Column = tuple[str, str, Callable[[CommRow], str]]
NARROW_COLUMNS: tuple[_Column, ...] = (
    ("size", "(B)", lambda r: str(r.size_bytes)),
    ("type", "", lambda r: r.dtype),
    ("redop", "", lambda r: r.redop or "none"),
    ("root", "", lambda r: str(_root(r))),
    ("time", "(us)", lambda r: _number(r.time_us, 0)),
    ("algbw", "(GB/s)", lambda r: _number(r.algbw_gbps, 0)),
    ("busbw", "(GB/s)", lambda r: _number(r.busbw_gbps, 0)),
    ("#wrong", "", lambda r: "N/A" if r.wrong is None else str(r.wrong)),
    ("p99", "(us)", lambda r: _number(r.iter_p99_us, 0)),
    ("slowest", "rank/fast", _slowest),
)
FIGURES_FROM = 4  # columns from "time" on are figures, absent from a row that did not run
PLACEMENT_COLUMN: _Column = ("place", "", lambda r: "in" if r.placement == "in-place" else "out")


def narrow_table(rows: list[CommRow]) -> list[str]:
    """One op's rows in the columns nccl-tests users read first, each column as wide as what it
    holds (header included); "root" only for an op that has one."""
    rooted = any(r.root is not None and r.root >= 0 for r in rows)
    columns = [c for c in NARROW_COLUMNS if rooted or c[0] != "root"]
    figures_from = FIGURES_FROM - (0 if rooted else 1)
    if len({r.placement for r in rows}) > 1:  # nccl-tests' two column groups, as two rows
        columns.insert(1, PLACEMENT_COLUMN)
        figures_from += 1
    cells = [[cell(r) for _, _, cell in columns] for r in rows]
    shown = [  # a row that did not run shows its lead columns, then its reason
        texts if row.status == "ok" else texts[:figures_from]
        for row, texts in zip(rows, cells, strict=True)
    ]
    widths = [
        max([len(name), len(unit)] + [len(texts[i]) for texts in shown if i < len(texts)])
        for i, (name, unit, _) in enumerate(columns)
    ]
    widths[0] = max(widths[0], len("size") + 2)  # room for the header lines' leading "# "

    def line(texts: list[str]) -> str:
        return " ".join(text.rjust(width) for text, width in zip(texts, widths, strict=False))

    header = [
        "#" + line([name for name, _, _ in columns])[1:],
        "#" + line([unit for _, unit, _ in columns])[1:],
    ]
    body = [
        line(texts)
        if row.status == "ok"
        else f"{line(texts[:figures_from])}   {row.status}: {row.reason or 'no reason recorded'}"
        for row, texts in zip(rows, cells, strict=True)
    ]
    return header + body


def op_lines(result: CommResult, width: int | None = None) -> list[str]:
    """One table per op: nccl-tests' full layout, or the narrow one when `width` is narrower."""
    lines: list[str] = []
    narrow = width is not None and width < FULL_WIDTH
    for op in dict.fromkeys(r.op for r in result.rows):
        rows = [r for r in result.rows if r.op == op]
        placements = ", ".join(dict.fromkeys(r.placement for r in rows))
        lines += ["#", f"# {op} ({placements})"]
        lines += narrow_table(rows) if narrow else [*HEADER, *(row_line(r) for r in rows)]
    return lines


def footer_lines(result: CommResult) -> list[str]:
    lines = ["#"]
    if result.wrong_total is None:
        lines.append("# Out of bounds values : N/A (not checked)")
    else:
        verdict = "OK" if result.wrong_total == 0 else "FAILED"
        lines.append(f"# Out of bounds values : {result.wrong_total} {verdict}")
    avg = result.avg_busbw_gbps
    lines.append(f"# Avg bus bandwidth    : {'-' if avg is None else gbps_derived(avg)}")
    if len(result.summaries) > 1 or any(s.busbw_factor == 0 for s in result.summaries):
        parts = []
        for s in result.summaries:
            value = "-" if s.avg_busbw_gbps is None else sig(s.avg_busbw_gbps, 4)
            zero = " (busbw 0 by definition on one rank)" if s.busbw_factor == 0 else ""
            parts.append(f"{s.op} {value}{zero}")
        lines.append(f"#   per op (GB/s)      : {', '.join(parts)}")
    noisy = inside_noise(result.rows)
    if noisy:
        by_op: dict[str, list[str]] = {}
        for row in noisy[:NOISE_LISTED]:
            by_op.setdefault(row.op, []).append(str(row.size_bytes))
        sizes = "; ".join(f"{op} {', '.join(found)}" for op, found in by_op.items())
        if len(noisy) > NOISE_LISTED:
            sizes += f" and {len(noisy) - NOISE_LISTED} more (--json has every row)"
        lines.append(
            f"# Inside the noise     : {len(noisy)} of {len(result.rows)} rows took longer than "
            f"a larger size, their bandwidth is not the link's (size B): {sizes}"
        )
    if result.gate is not None:
        lines.append(
            f"# Gate --min-busbw {as_set(result.min_busbw_gbps or 0.0)}: {result.gate}: "
            f"{gate_words(result)}"
        )
    if result.error:
        lines.append(f"# Stopped early ({result.status}): {result.error}")
    lines += [f"# warning: {say(w)}" for w in result.warnings]
    lines += [f"# unavailable: {k}: {say(v)}" for k, v in result.unavailable.items()]
    return lines


def pair_lines(result: CommResult, width: int | None = None) -> list[str]:
    """The pairs as a matrix (small worlds that fit `width`) or slowest first, and the pairs
    that stand out."""
    if not result.pairs:
        return []
    measured = [p for p in result.pairs if p.bandwidth_gbps is not None]
    size = result.pairs[0].size_bytes
    lines = ["#", f"# Point-to-point bandwidth (GB/s per direction, {size} B each way)"]
    n = result.world_size
    matrix_width = 6 + 9 * n
    if n <= MAX_MATRIX_RANKS and (width is None or matrix_width <= width):
        lines.append("#     " + "".join(f"r{b}".rjust(9) for b in range(n)))
        bandwidth = {frozenset((p.a, p.b)): p.bandwidth_gbps for p in reversed(result.pairs)}
        for a in range(n):
            cells = (None if a == b else bandwidth.get(frozenset((a, b))) for b in range(n))
            lines.append(f"# {f'r{a}'.rjust(4)}" + "".join(_number(v, 9) for v in cells))
    else:
        lines.append("# slowest pairs:")
        for p in sorted(measured, key=lambda p: p.bandwidth_gbps or 0.0)[:10]:
            lines.append(f"#   r{p.a} <-> r{p.b}: {_number(p.bandwidth_gbps, 0)}")
    if len(measured) >= 3:
        median = statistics.median(p.bandwidth_gbps or 0.0 for p in measured)
        for p in measured:
            if (p.bandwidth_gbps or 0.0) < SLOW_PAIR * median:
                where = f" ({p.host_a} <-> {p.host_b})" if p.host_a != p.host_b else ""
                lines.append(
                    f"# slow link: r{p.a} <-> r{p.b}{where} "
                    f"{gbps_derived(p.bandwidth_gbps or 0.0)}, under half the median pair "
                    f"({gbps_derived(median)})"
                )
    return lines


def _wrapped(line: str, width: int) -> list[str]:
    """A comment line ("# ...") broken between words, each piece still a comment; a table row
    (which fits by construction unless the width is tiny) broken the same way."""
    if len(line) <= width:
        return [line]
    comment = line.startswith("#")
    return textwrap.wrap(
        line,
        width=width,
        subsequent_indent="#   " if comment else "    ",
        break_long_words=True,
        break_on_hyphens=False,
    )


def comm_lines(result: CommResult, width: int | None = None) -> list[str]:
    """The whole printout: header, one table per op, pairs, footer. `width` None: nccl-tests'
    full layout, lines as long as they are; else the narrow layout, no line over `width`."""
    lines = header_lines(result) + op_lines(result, width) + pair_lines(result, width)
    lines += footer_lines(result)
    if width is None:
        return lines
    return [piece for line in lines for piece in _wrapped(line, width)]
