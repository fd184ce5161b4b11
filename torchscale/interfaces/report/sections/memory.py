"""Memory and input pipeline: the largest batch per device of each searched cell group
(`memory.max_batch_search`), and how long each step waited for its data (`data:`), so a
storage or loader bottleneck shows next to the compute figures. None when the sweep has
neither (synthetic data and no search)."""

from __future__ import annotations

from torchscale.contracts.schema.max_batch import MaxBatchResult
from torchscale.contracts.wording import say
from torchscale.contracts.wording.figures import share_text
from torchscale.contracts.wording.max_batch import reason_words
from torchscale.contracts.wording.names import NAMES
from torchscale.contracts.wording.spell import group_label
from torchscale.interfaces.report.model import Block, Section, Table, Text
from torchscale.interfaces.report.parts.context import Context, col, fmt, records
from torchscale.offline.analysis.numbers import finite


def _answer(result: MaxBatchResult) -> str:
    if result.max_batch is None:
        reason = reason_words(result)
        return f"none ({reason})" if reason else "none"
    return f">= {result.max_batch}" if result.limit_reached else str(result.max_batch)


def _max_batch_table(ctx: Context) -> list[Block]:
    found = [(s.name, r) for s in ctx.sources.experiments for r in s.max_batch]
    if not found:
        return []
    rows = [
        {
            "config": group_label(r.label, r.world_size, r.precision, r.strategy)
            + (f" [{experiment}]" if ctx.multi else ""),
            "device": r.device,
            "max_batch": _answer(r),
            "utilisation": r.memory_utilisation,
            "peak": r.peak_bytes,
            "basis": NAMES[r.peak_basis] if r.peak_basis else "-",
            "probes": len(r.probes),
            "wall": r.wall_s,
        }
        for experiment, r in found
    ]
    blocks: list[Block] = [
        Table(
            id="memory-max-batch",
            title="Largest batch per device that fits",
            columns=[
                col("config", "Model, GPUs, precision, strategy"),
                col("device", "Device"),
                col("max_batch", "Max batch per device"),
                col("utilisation", "Memory utilisation", "ratio_pct"),
                col("peak", "Peak at max batch", "bytes"),
                col("basis", "Peak basis"),
                col("probes", "Probes", "int"),
                col("wall", "Search time", "seconds"),
            ],
            rows=rows,
            note="doubling, then bisection on out-of-memory, one fresh process per probe; "
            f"utilisation = {NAMES['reserved']} / GPU memory (CUDA only); '>= N': the search limit "
            "fitted",
        )
    ]
    blocks += [
        Text(text=f"{result.group} [{experiment}]: {say(warning)}", severity="warn")
        for experiment, result in found
        for warning in result.warnings
    ]
    return blocks


def _data_table(ctx: Context) -> list[Block]:
    ok = ctx.ok
    fed = ok[ok["data_source"].notna() & (ok["data_source"] != "synthetic")]
    if fed.empty:
        return []
    rows = []
    for row in records(fed):
        diagnosis = ctx.result(row).diagnosis
        part = diagnosis.part("data") if diagnosis is not None else None
        text: str | None
        held = part is not None and (part.share.value is not None or part.share.high is not None)
        if part is not None and held:  # the diagnosis' data part: mean over ranks, interval
            wait, share = part.seconds.value, part.share.value
            text = share_text(part.share)
        else:  # no data figure in a diagnosis: the slowest rank's median wait over the step
            wait, share = finite(row.get("data_wait_s")), finite(row.get("data_wait_share"))
            text = fmt(share, "ratio_pct") if share is not None else None
        rows.append(
            {
                "cell": ctx.label(row),
                "source": str(row["data_source"]),
                "wait": wait,
                "share": share,
                "share_text": text,
                "read": finite(row.get("data_read_mb_per_s")),
                "step": finite(row.get("step_p50_s")),
            }
        )
    return [
        Table(
            id="memory-data-wait",
            title="Input pipeline: time each step waits for its batch",
            columns=[
                col("cell", "Cell"),
                col("source", "Source"),
                col("step", "Median step", "seconds"),
                col("wait", "Data wait per step", "seconds"),
                col("share_text", "Share of the step"),
                col("read", "Read, MB/s", "float"),
            ],
            rows=rows,
            note="data wait: the run's diagnosis' data part, the mean over ranks of the time "
            "in next(batch) and the copy to the device, its share of the mean step with the 95 "
            "% interval (a finding when the diagnosis reports one); where the diagnosis holds "
            "no data figure: the slowest rank's median wait over the median step (a finding "
            "where the diagnosis' own rule makes one)",
        )
    ]


def build(ctx: Context) -> Section | None:
    """The section, or None when there is neither a max-batch search nor a data pipeline."""
    blocks = _max_batch_table(ctx) + _data_table(ctx)
    if not blocks:
        return None
    return Section(id="memory", title="Memory and input pipeline", blocks=blocks)
