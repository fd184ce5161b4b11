"""A comm result as the text table nccl-tests users read every day (plain lines, no markup).

Same columns in the same order as nccl-tests (size, count, type, redop, root, time, algbw, busbw,
#wrong), '#' before every line that is not a row, one table per op, then the footer (`Out of
bounds values`, `Avg bus bandwidth`). Our extra columns come after #wrong: per-iteration p50 and
p99, the CV, and the slowest rank with its time relative to the fastest, so a slow rank or node
shows. Fixed-width text is never cut to the terminal's width, and diffs against nccl-tests.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from torchscale.comm.comm_result import CommPair, CommResult, CommRow

MAX_MATRIX_RANKS = 16  # above this, the pairs are listed slowest first instead of a matrix
SLOW_PAIR = 0.5  # a pair below half the median pair bandwidth is called out


def _number(value: float | None, width: int) -> str:
    """nccl-tests prints 2 decimals; tiny CPU bandwidths keep 3 significant digits instead."""
    if value is None:
        return "-".rjust(width)
    text = f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.3g}"
    return text.rjust(width)


def _slowest(row: CommRow) -> str:
    if len(row.ranks) < 2:
        return "-"
    slow = max(row.ranks, key=lambda r: r.time_us)
    fast = min(r.time_us for r in row.ranks)
    ratio = slow.time_us / fast if fast > 0 else float("inf")
    return f"r{slow.rank} {ratio:.2f}x"


HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    "    p50      p99     cv  slowest",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
    "   (us)     (us)         rank/fastest",
)


def row_line(row: CommRow) -> str:
    """One row, nccl-tests' columns first."""
    head = (
        f"{row.size_bytes:>12} {row.count:>13} {row.dtype:>9} {row.redop or 'none':>7} "
        f"{row.root if row.root is not None else -1:>7}"
    )
    if row.status != "ok":
        return f"{head}   {row.status}: {row.reason or 'no reason recorded'}"
    wrong = "N/A" if row.wrong is None else str(row.wrong)
    cv = "-" if row.iter_cv is None else f"{row.iter_cv:.2f}"
    return (
        f"{head} {_number(row.time_us, 8)} {_number(row.algbw_gbps, 7)} "
        f"{_number(row.busbw_gbps, 7)} {wrong:>7} {_number(row.iter_p50_us, 8)} "
        f"{_number(row.iter_p99_us, 8)} {cv:>6}  {_slowest(row)}"
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
    lines += [f"# note: {text}" for text in result.skipped]
    return lines


def op_lines(result: CommResult) -> list[str]:
    lines: list[str] = []
    for op in dict.fromkeys(r.op for r in result.rows):
        rows = [r for r in result.rows if r.op == op]
        placements = ", ".join(dict.fromkeys(r.placement for r in rows))
        lines += ["#", f"# {op} ({placements})", *HEADER]
        lines += [row_line(r) for r in rows]
    return lines


def footer_lines(result: CommResult) -> list[str]:
    lines = ["#"]
    if result.wrong_total is None:
        lines.append("# Out of bounds values : N/A (not checked)")
    else:
        verdict = "OK" if result.wrong_total == 0 else "FAILED"
        lines.append(f"# Out of bounds values : {result.wrong_total} {verdict}")
    avg = result.avg_busbw_gbps
    lines.append(f"# Avg bus bandwidth    : {'-' if avg is None else f'{avg:.4g}'} GB/s")
    if len(result.summaries) > 1 or any(s.busbw_factor == 0 for s in result.summaries):
        parts = []
        for s in result.summaries:
            value = "-" if s.avg_busbw_gbps is None else f"{s.avg_busbw_gbps:.4g}"
            zero = " (busbw 0 by definition on one rank)" if s.busbw_factor == 0 else ""
            parts.append(f"{s.op} {value}{zero}")
        lines.append(f"#   per op (GB/s)      : {', '.join(parts)}")
    if result.gate is not None:
        lines.append(
            f"# Gate --min-busbw {result.min_busbw_gbps:g}: {result.gate}: {result.gate_reason}"
        )
    if result.error:
        lines.append(f"# Stopped early ({result.status}): {result.error}")
    lines += [f"# warning: {w}" for w in result.warnings]
    lines += [f"# unavailable: {k}: {v}" for k, v in result.unavailable.items()]
    return lines


def _pair_bw(pairs: Iterable[CommPair], a: int, b: int) -> float | None:
    for p in pairs:
        if {p.a, p.b} == {a, b}:
            return p.bandwidth_gbps
    return None


def pair_lines(result: CommResult) -> list[str]:
    """The pairs as a matrix (small worlds) or slowest first, and the pairs that stand out."""
    if not result.pairs:
        return []
    measured = [p for p in result.pairs if p.bandwidth_gbps is not None]
    size = result.pairs[0].size_bytes
    lines = ["#", f"# Point-to-point bandwidth (GB/s per direction, {size} B each way)"]
    n = result.world_size
    if n <= MAX_MATRIX_RANKS:
        lines.append("#     " + "".join(f"{'r' + str(b):>9}" for b in range(n)))
        for a in range(n):
            cells = []
            for b in range(n):
                value = None if a == b else _pair_bw(result.pairs, a, b)
                cells.append(_number(value, 9))
            lines.append(f"# {'r' + str(a):>4}" + "".join(cells))
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
                    f"# slow link: r{p.a} <-> r{p.b}{where} {_number(p.bandwidth_gbps, 0)} GB/s, "
                    f"under half the median pair ({median:.3g} GB/s)"
                )
    return lines


def comm_lines(result: CommResult) -> list[str]:
    """The whole printout: header, one table per op, pairs, footer."""
    return header_lines(result) + op_lines(result) + pair_lines(result) + footer_lines(result)
