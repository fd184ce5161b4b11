"""Failures: every cell (and profiled run) that did not succeed, with its status and root cause,
one line each, the planned cells a stopped sweep never finished included. Log tails stay in the
results (`error.log_tail`, logs/<cell>/): only their last line is shown, never the tail in full."""

from __future__ import annotations

from collections import Counter
from typing import Any

from torchscale.contracts.schema.cell_result import CellError
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_errors import place_line
from torchscale.contracts.wording.sweep import cells_text
from torchscale.interfaces.report.model import Block, Section, Table, Text
from torchscale.interfaces.report.parts.context import Context, col, records, text

MAX_LINE = 300  # characters of one shown line


def _short(line: str | None) -> str | None:
    if not line:
        return None
    line = " ".join(line.split())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def last_log_line(error: CellError | None) -> str | None:
    """The last non-empty line of the log tail (often the exception), or None."""
    if error is None or not error.log_tail:
        return None
    lines = [line.strip() for line in error.log_tail.splitlines() if line.strip("= \t")]
    return _short(lines[-1]) if lines else None


def _row(label: str, status: str, error: CellError | None, fallback: str) -> dict[str, Any]:
    failed = status in ("failed", "oom", "timeout")
    reason = _short(say(error.finding)) if error else fallback
    last = last_log_line(error)
    if last and error and error.exception and last.split(": ", 1)[-1] in error.exception:
        last = None  # the exception line the reason already quotes
    return {
        "cell": label,
        "status": status,
        "reason": reason,
        "rank": error.root_cause_rank if error else None,
        "signal": error.exit_signal if error else None,
        "diagnosis": _short(place_line(error.places[0].model_dump()))
        if error and error.places
        else None,
        "last_line": last,
        "_severity": "bad" if failed else "warn" if status != "skipped" else "info",
    }


def build(ctx: Context) -> Section:
    """Every run that did not succeed, one line of root cause each."""
    rows = []
    for row in records(ctx.cells[ctx.cells["status"] != "ok"]):
        result = ctx.result(row)
        fallback = text(row["error"]) or "no reason recorded"
        rows.append(_row(ctx.label(row), str(row["status"]), result.error, fallback))
    unreached = ctx.unreached()
    # planned, no result (cut short, never reached, skipped): a row per model and why, so a
    # stopped 500-cell sweep is a few rows, its cells named and collapsed by the wording
    groups: dict[tuple[str, str, str | None, str], list[tuple[str, str]]] = {}
    for experiment, cell in unreached:
        key = (experiment, cell.state, cell.why, cell.model)
        groups.setdefault(key, []).append((cell.model, cell.label))
    for (experiment, state, why, _), cells in groups.items():
        label = f"{cells_text(cells)} [{experiment}]" if ctx.multi else cells_text(cells)
        rows.append(_row(label, state, None, why or "no result"))
    for experiment, unanalysed in ctx.unanalysed:
        run = unanalysed.result
        label = (
            f"{ctx.result_label(experiment, run)} (profiled run {unanalysed.name})"
            if run is not None
            else f"profile {unanalysed.name}"
        )
        status = run.status.value if run is not None else "unknown"
        status = status if status != "ok" else "not analysed"
        rows.append(_row(label, status, None, unanalysed.reason))
    blocks: list[Block] = []
    total = len(ctx.cells) + len(unreached)
    if rows:
        failed = sum(r["status"] in ("failed", "oom", "timeout") for r in rows)
        statuses = Counter(str(s) for s in ctx.cells["status"] if s != "ok")
        statuses.update(cell.state for _, cell in unreached)
        parts = [f"{n} {status}" for status, n in sorted(statuses.items())]
        line = f"{sum(statuses.values())} of {total} cells did not succeed" if total else ""
        line += f" ({', '.join(parts)})" if parts else ""
        if ctx.unanalysed:
            line += "; " if line else ""
            line += f"{len(ctx.unanalysed)} profiled run(s) have no analysis"
        blocks.append(Text(text=line + ".", severity="bad" if failed else "warn"))
        blocks.append(
            Table(
                id="failures-cells",
                title="Runs that did not succeed",
                columns=[
                    col("cell", "Cell"),
                    col("status", "Status"),
                    col("reason", "Root cause"),
                    col("rank", "Root-cause rank", "int"),
                    col("signal", "Signal"),
                    col("diagnosis", "Diagnosis"),
                    col("last_line", "Last log line"),
                ],
                rows=rows,
                note="full logs: logs/<cell>/ in the experiment directory, and the result's "
                "error.log_tail",
            )
        )
    elif total:
        blocks.append(Text(text=f"All {total} cells finished ok.", severity="good"))
    else:
        blocks.append(Text(text=f"No sweep cells in the sources ({ctx.other_contents()} only)."))
    skipped = len(ctx.sources.skipped)
    if skipped:
        blocks.append(
            Text(
                text=f"{skipped} input(s) could not be used and are left out of this report "
                "(listed with their reasons among the skipped inputs).",
                severity="warn",
            )
        )
    return Section(id="failures", title="Failures", blocks=blocks)
