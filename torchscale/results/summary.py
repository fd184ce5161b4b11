"""summary.csv: one row per cell, flat columns, pandas-friendly."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from torchscale.analysis.scaling import add_scaling_efficiency
from torchscale.atomic import write_text_atomic
from torchscale.results.schema import CellResult
from torchscale.results.store import ResultStore

COLUMNS = [
    "cell_id",
    "status",
    "model",
    "model_label",
    "batch_size",
    "world_size",
    "precision",
    "strategy",
    "device",
    "backend",
    "global_batch",
    "samples_per_s",
    "samples_per_s_per_device",
    "tokens_per_s",
    "throughput_spread",
    "step_p50_s",
    "step_p95_s",
    "step_p99_s",
    "step_cv",
    "straggler_rank",
    "scaling_efficiency",
    "comm_overhead",
    "flops_per_step",
    "tflops_per_device",
    "mfu",
    "peak_allocated_bytes",
    "peak_reserved_bytes",
    "peak_rss_bytes",
    "parameters",
    "warnings",
    "error",
]


def summary_row(result: CellResult) -> dict[str, Any]:
    thr, steps, mem = result.throughput, result.step_time, result.memory
    comp, comm = result.compute, result.communication
    return {
        "cell_id": result.cell_id,
        "status": result.status,
        "model": result.model,
        "model_label": result.model_label,
        "batch_size": result.batch_size,
        "world_size": result.world_size,
        "precision": result.precision,
        "strategy": result.strategy,
        "device": result.device,
        "backend": result.backend,
        "global_batch": result.global_batch,
        "samples_per_s": thr.samples_per_s if thr else None,
        "samples_per_s_per_device": thr.samples_per_s_per_device if thr else None,
        "tokens_per_s": thr.tokens_per_s if thr else None,
        "throughput_spread": thr.spread if thr else None,
        "step_p50_s": steps.p50 if steps else None,
        "step_p95_s": steps.p95 if steps else None,
        "step_p99_s": steps.p99 if steps else None,
        "step_cv": steps.cv if steps else None,
        "straggler_rank": result.straggler_rank,
        "comm_overhead": comm.comm_overhead if comm else None,
        "flops_per_step": comp.flops_per_step if comp else None,
        "tflops_per_device": comp.achieved_tflops_per_device if comp else None,
        "mfu": comp.mfu if comp else None,
        "peak_allocated_bytes": mem.peak_allocated_bytes if mem else None,
        "peak_reserved_bytes": mem.peak_reserved_bytes if mem else None,
        "peak_rss_bytes": mem.peak_rss_bytes if mem else None,
        "parameters": result.parameters,
        "warnings": "; ".join(result.warnings),
        "error": (result.error or {}).get("reason"),
    }


def summary_table(results: Sequence[CellResult]) -> pd.DataFrame:
    table = pd.DataFrame(
        [summary_row(r) for r in results], columns=[c for c in COLUMNS if c != "scaling_efficiency"]
    )
    table["samples_per_s"] = pd.to_numeric(table["samples_per_s"])
    table = add_scaling_efficiency(table)
    return table[COLUMNS]


def write_summary(store: ResultStore, results: Sequence[CellResult]) -> pd.DataFrame:
    table = summary_table(results)
    write_text_atomic(store.summary_path, table.to_csv(index=False))
    return table
