"""Cell results as flat table rows: one row per cell, one column per figure.

summary.csv and `torchscale.offline.results.load(...).cells` are built from the same rows, so a
column means the same thing wherever it is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.cell_telemetry import HostLoad
from torchscale.contracts.schema.diagnosis import PART_NAMES, Diagnosis, Estimate
from torchscale.contracts.step_phases import STEP_PHASES, seconds_column
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.wording.spell import joined_repeats
from torchscale.offline.analysis.reliability import add_reliability
from torchscale.offline.analysis.scaling_efficiency import add_scaling_efficiency
from torchscale.offline.analysis.uncertainty import in_proportion, median_of_repeats
from torchscale.offline.results.split_figures import split_figures

# the one model of the step: per part its share of the mean step with the 95 %
# interval; the share is empty where it is not measurable above noise (the interval stays)
ATTRIBUTION_COLUMNS = [
    f"{part}_{suffix}" for part in PART_NAMES for suffix in ("share", "share_low", "share_high")
]

STEP_QUANTILES = ("p50", "p95", "p99")
DIAGNOSIS_COLUMNS = [
    "straggler_rank",
    "straggler_phase",
    "straggler_kind",
    "straggler_gap_s",
    "straggler_phase_gap_s",
    "straggler_named",
    "straggler_p_value",
    "straggler_summary",
    "diagnosis_source",
    "caveat",
    "step_mean_s",
]
# computed over the whole table (a cell against its group), not from one result
DERIVED_COLUMNS = [
    "scaling_efficiency",
    "scaling_efficiency_low",
    "scaling_efficiency_high",
    "scaling_efficiency_reason",
    "reliability",
    "reliability_reason",
]
HOST_LOAD_COLUMNS = ["other_cpu_cores", "load_avg_1m", "other_gpu_processes", "busy_machine"]

COLUMNS = [
    "cell_id",
    "status",
    "model",
    "model_label",
    "batch_size",
    "world_size",
    "nodes",
    "precision",
    "strategy",
    "layout",
    "layout_family",
    "dp",
    "tp",
    "pp",
    "microbatches",
    "schedule",
    "device",
    "backend",
    "ranks_per_gpu",
    "global_batch",
    "samples_per_s",
    "samples_per_s_per_device",
    "tokens_per_s",
    "throughput_spread",
    *(f"step_{q}_s" for q in STEP_QUANTILES),
    "step_cv",
    "samples_per_s_low",
    "samples_per_s_high",
    "samples_per_s_repeats",
    *(f"step_{q}_{end}_s" for q in STEP_QUANTILES for end in ("low", "high")),
    *DIAGNOSIS_COLUMNS,
    *ATTRIBUTION_COLUMNS,
    *DERIVED_COLUMNS,
    "host_bound",
    "gpu_busy_share",
    "host_bound_method",
    "comm_overhead",
    "load_imbalance",
    "flops_per_step",
    "tflops_per_device",
    "mfu",
    "mfu_low",
    "mfu_high",
    "mfu_measured",
    "measured_peak_tflops",
    "peak_tflops_per_device",
    "peak_allocated_bytes",
    "peak_reserved_bytes",
    "non_static_peak_bytes",
    "peak_rss_bytes",
    "alloc_retries",
    "oom_count",
    "fragmentation",
    "gpu_util_mean",
    "power_w_mean",
    "temperature_c_max",
    "sm_clock_mhz_mean",
    "cpu_util_mean",
    "energy_j",
    "energy_method",
    "samples_per_joule",
    "tokens_per_joule",
    "throttled",
    "throttle_reasons",
    *HOST_LOAD_COLUMNS,
    "bubble_measured",
    "bubble_theoretical",
    "tp_comm",
    "tp_exposed_comm",
    "tp_waiting_for_peers",
    "tp_exposed_transfer",
    "parameter_bytes",
    "static_bytes",
    "compiled",
    "compile_s",
    "data_source",
    "data_wait_s",
    "data_wait_share",
    "data_read_mb_per_s",
    "cost_per_gpu_hour",
    "gpu_hours_per_m_samples",
    "cost_per_m_samples",
    "cost_per_m_tokens",
    "parameters",
    "measured_steps",
    "repeats",
    "wall_s",
    "definition_sha256",
    "warnings",
    "error",
]


def cell_row(result: CellResult) -> dict[str, Any]:
    """The flat row of one cell (None where a figure was not measured)."""
    cell = result.cell
    thr, steps, mem = result.throughput, result.step_time, result.memory
    comp, comm = result.compute, split_figures(result)
    tel, data, cost = result.telemetry, result.data, result.cost
    read = data.read_bytes_per_s if data else None
    shape, parallel, warmup = cell.parallel, result.parallel, result.warmup
    tp, bound = parallel.profiled_comm if parallel else None, result.host_bound
    return {
        "cell_id": cell.id,
        "status": result.status.value,
        "model": cell.model,
        "model_label": cell.label,
        **_same(cell, "batch_size", "world_size", "nodes", "precision", "strategy"),
        "layout": shape.slug(cell.strategy) if shape else cell.strategy,
        "layout_family": shape.family(cell.strategy) if shape else cell.strategy,
        "dp": shape.dp if shape else cell.world_size,
        "tp": shape.tp if shape else 1,
        "pp": shape.pp if shape else 1,
        **_same(shape, "microbatches", "schedule"),
        **_same(cell, "device", "backend", "ranks_per_gpu"),
        "global_batch": result.global_batch,
        **_same(thr, "samples_per_s", "samples_per_s_per_device", "tokens_per_s"),
        "throughput_spread": thr.spread if thr else None,
        **{f"step_{q}_s": getattr(steps, q) if steps else None for q in STEP_QUANTILES},
        "step_cv": steps.cv if steps else None,
        **_headline_intervals(result),
        **_diagnosis(result.diagnosis),
        **_same(comm, "comm_overhead", "load_imbalance"),
        **_same(comp, "flops_per_step", "mfu", "mfu_measured", "peak_tflops_per_device"),
        "tflops_per_device": comp.achieved_tflops_per_device if comp else None,
        "measured_peak_tflops": comp.measured_peak_tflops_per_device if comp else None,
        **_same(mem, "peak_allocated_bytes", "peak_reserved_bytes", "non_static_peak_bytes"),
        **_same(mem, "peak_rss_bytes", "alloc_retries", "oom_count", "fragmentation"),
        "gpu_util_mean": tel.gpu_util_pct_mean if tel else None,
        **_same(tel, "power_w_mean", "temperature_c_max", "sm_clock_mhz_mean"),
        "cpu_util_mean": tel.cpu_util_pct_mean if tel else None,
        **_same(tel, "energy_j", "energy_method", "samples_per_joule", "tokens_per_joule"),
        "throttled": tel.throttled if tel else None,
        "throttle_reasons": "; ".join(tel.throttle_reasons) if tel else None,
        **_host_load(tel.hosts if tel else None),
        **_same(parallel, "bubble_measured", "bubble_theoretical"),
        # a tensor-parallel cell's profiled communication shares (None elsewhere)
        **_same(tp, "comm", "waiting_for_peers", "exposed_transfer", prefix="tp_"),
        "tp_exposed_comm": tp.exposed if tp else None,
        "parameter_bytes": mem.parameter_bytes if mem else None,
        "static_bytes": (
            mem.parameter_bytes + mem.gradient_bytes + mem.optimizer_state_bytes if mem else None
        ),
        "compiled": _compiled(result),
        "compile_s": warmup.compile_s if warmup else None,
        **_same(data, "source", "wait_s", prefix="data_"),
        "data_wait_share": data.share if data else None,
        "data_read_mb_per_s": read / 1e6 if read is not None else None,
        "cost_per_gpu_hour": cost.per_gpu_hour if cost else None,
        **_same(cost, "gpu_hours_per_m_samples", "cost_per_m_samples", "cost_per_m_tokens"),
        **_same(result, "parameters", "measured_steps", "repeats", "wall_s"),
        "definition_sha256": cell.definition_sha256,
        "warnings": "; ".join(map(warning_words, result.warnings)),
        "error": say(result.error.finding) if result.error else None,
        # the host-bound verdict (GPU cells; None: not judged) and how it was judged
        **_same(bound, "host_bound", "gpu_busy_share"),
        "host_bound_method": bound.method if bound else None,
    }


def _compiled(result: CellResult) -> bool | None:
    """training.compile, as the result shows it (what a speed reference is matched on): a
    measured cell records what compiled or nothing; unknown for a cell that measured nothing and
    for a user's job (its own code may compile)."""
    if result.compile is not None:
        return True
    return False if result.status.value == "ok" and result.job is None else None


def _same(source: Any, *names: str, prefix: str = "") -> dict[str, Any]:
    """Columns named as `source`'s attributes (each None where there is no `source`)."""
    return {prefix + name: getattr(source, name) if source else None for name in names}


def _ends(estimate: Estimate | None, name: str, suffix: str = "") -> dict[str, float | None]:
    return {
        f"{name}_low{suffix}": estimate.low if estimate else None,
        f"{name}_high{suffix}": estimate.high if estimate else None,
    }


def _headline_intervals(result: CellResult) -> dict[str, Any]:
    """Throughput and latency intervals: the result's own, else the throughput's taken from
    its recorded repeats by the same rule (a cell that stored none); MFU is that throughput's
    estimate scaled (`in_proportion`): one estimator for both."""
    thr, intervals, comp = result.throughput, result.intervals, result.compute
    throughput = intervals.samples_per_s if intervals else None
    if throughput is None and thr is not None and thr.repeats:
        throughput = median_of_repeats(thr.repeats)
    mfu = None
    if throughput is not None and thr is not None and comp is not None:
        mfu = in_proportion(throughput, comp.mfu, thr.samples_per_s)
    return {
        **_ends(throughput, "samples_per_s"),
        "samples_per_s_repeats": joined_repeats(thr.repeats) if thr else None,
        **_ends(intervals.step_p50_s if intervals else None, "step_p50", "_s"),
        **_ends(intervals.step_p95_s if intervals else None, "step_p95", "_s"),
        **_ends(intervals.step_p99_s if intervals else None, "step_p99", "_s"),
        **_ends(mfu, "mfu"),
    }


def _value(estimate: Estimate | None) -> float | None:
    return estimate.value if estimate is not None else None


def _diagnosis(diagnosis: Diagnosis | None) -> dict[str, Any]:
    """The diagnosis' columns (None where there is none). Its verdict gives straggler_rank,
    straggler_phase, straggler_kind, straggler_gap_s (the gap every surface prints:
    `StragglerVerdict.headline_gap`) and straggler_phase_gap_s (the named phase's gap, its own
    column so that neither passes for the other), null unless it names a straggler."""
    row: dict[str, Any] = dict.fromkeys(DIAGNOSIS_COLUMNS)
    row.update(dict.fromkeys(ATTRIBUTION_COLUMNS))
    if diagnosis is None:
        return row
    verdict = diagnosis.straggler
    named = verdict if verdict is not None and verdict.named else None
    row.update(_same(named, "rank", "phase", "kind", prefix="straggler_"))
    row["straggler_gap_s"] = _value(named.headline_gap()) if named else None
    row["straggler_phase_gap_s"] = _value(named.phase_gap_s) if named and named.phase else None
    row.update(_same(verdict, "named", "p_value", prefix="straggler_"))
    row["straggler_summary"] = (
        verdict_words.straggler_text(verdict, diagnosis.ranks) if verdict else None
    )
    row["diagnosis_source"] = diagnosis.source
    row["caveat"] = verdict_words.caveat(diagnosis)
    row["step_mean_s"] = diagnosis.step_s.value
    for part in diagnosis.parts:
        row[f"{part.name}_share"] = part.share.value
        row[f"{part.name}_share_low"] = part.share.low
        row[f"{part.name}_share_high"] = part.share.high
    return row


def _host_load(hosts: list[HostLoad] | None) -> dict[str, Any]:
    """What else ran on the cell's hosts during its windows (docs/telemetry.md): the busiest
    host's other-process cores and load average, other compute processes on the cell's GPUs
    summed over hosts, and whether any host was busy. None unless every host has the figure
    (a figure over some hosts would be another figure)."""
    if not hosts:
        return dict.fromkeys(HOST_LOAD_COLUMNS)
    other = [h.other_cores for h in hosts]
    load = [h.load_avg_1m.max if h.load_avg_1m else None for h in hosts]
    gpu = [h.other_gpu_processes for h in hosts]
    busy = [h.busy for h in hosts]
    return {
        "other_cpu_cores": max(v for v in other if v is not None) if None not in other else None,
        "load_avg_1m": max(v for v in load if v is not None) if None not in load else None,
        "other_gpu_processes": sum(v for v in gpu if v is not None) if None not in gpu else None,
        "busy_machine": True if any(busy) else (False if None not in busy else None),
    }


def cells_table(results: Sequence[CellResult]) -> pd.DataFrame:
    """One row per cell in COLUMNS order, with scaling efficiency (and its interval) within
    each group and each cell's reliability."""
    table = pd.DataFrame(
        [cell_row(r) for r in results], columns=[c for c in COLUMNS if c not in DERIVED_COLUMNS]
    )
    table["samples_per_s"] = pd.to_numeric(table["samples_per_s"])
    table = add_scaling_efficiency(table)
    table = add_reliability(table)
    return table[COLUMNS]


def _rank_telemetry(result: CellResult, rank: int) -> dict[str, Any]:
    """A rank's telemetry columns (None where it was not sampled)."""
    tel = result.telemetry
    mine = next((r for r in tel.ranks if r.rank == rank), None) if tel else None
    if mine is None:
        return dict.fromkeys(RANK_TELEMETRY_COLUMNS)
    return {
        "gpu_util_mean": mine.gpu_util_pct.mean if mine.gpu_util_pct else None,
        "power_w_mean": mine.power_w.mean if mine.power_w else None,
        "temperature_c_max": mine.temperature_c.max if mine.temperature_c else None,
        "sm_clock_mhz_mean": mine.sm_clock_mhz.mean if mine.sm_clock_mhz else None,
        "cpu_util_mean": mine.cpu_util_pct.mean if mine.cpu_util_pct else None,
        "rss_max_bytes": mine.rss_bytes.max if mine.rss_bytes else None,
        "energy_j": mine.energy_j,
        "throttled_fraction": mine.throttled_fraction,
    }


def ranks_table(results: Sequence[CellResult]) -> pd.DataFrame:
    """One row per (cell, rank): each rank's step-time distribution, memory, compute time
    (median step under no_sync), phase medians and telemetry."""
    rows = [
        {
            "cell_id": r.cell.id,
            "rank": rank.rank,
            "host": rank.host,
            **{f"step_{stat}_s": getattr(rank.step_time, stat) for stat in RANK_STEP_STATS},
            "step_cv": rank.step_time.cv,
            "step_count": rank.step_time.count,
            **_same(rank, "peak_rss_bytes", "peak_allocated_bytes", "alloc_retries"),
            "compute_p50_s": rank.compute_time.p50 if rank.compute_time else None,
            **{
                seconds_column(phase): getattr(rank.phases, phase) if rank.phases else None
                for phase in STEP_PHASES
            },
            **_rank_telemetry(r, rank.rank),
        }
        for r in results
        for rank in r.ranks
    ]
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


RANK_STEP_STATS = ("mean", "p50", "p95", "p99", "min", "max", "std")
RANK_TELEMETRY_COLUMNS = [
    "gpu_util_mean",
    "power_w_mean",
    "temperature_c_max",
    "sm_clock_mhz_mean",
    "cpu_util_mean",
    "rss_max_bytes",
    "energy_j",
    "throttled_fraction",
]
RANK_COLUMNS = [
    "cell_id",
    "rank",
    "host",
    *(f"step_{stat}_s" for stat in RANK_STEP_STATS),
    "step_cv",
    "step_count",
    "peak_rss_bytes",
    "peak_allocated_bytes",
    "alloc_retries",
    "compute_p50_s",
    *(seconds_column(phase) for phase in STEP_PHASES),
    *RANK_TELEMETRY_COLUMNS,
]
