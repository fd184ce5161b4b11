"""The decision line: one buy-or-fix call per model, made only where the figures carry it
(docs/reporting.md, "The decision line"). Pure: the report's tables in, findings out.

The rule, in order, over a model's GPU cells (never a CPU run: a CPU rank's scaling says
nothing about buying GPUs), leaving out cells on a busy machine and FSDP on one device; the cell
decided on is the fastest at the largest world size measured (what would be bought):
1. fix first where the diagnosis says so: the GPU waits for the host (`host_bound`), the input
   pipeline holds the step (its data share, whole interval, at least FIX_SHARE), or a named
   straggler costs the others at least FIX_SHARE of the step (the wait for peers, whole
   interval); then MFU below LOW_MFU_FRACTION of the reference's band (the whole interval
   below; offline/analysis/references.py: a plain loop of the same model on the same GPU
   model, precision and compile);
2. else buy, or fix the scaling, where a measured scaling efficiency (else a forecast's, from a
   scored track record) has an interval no wider than MAX_WIDTH: buy where its low end is at
   least GOOD_EFFICIENCY, fix where its high end is below it, no call in between;
3. else the MFU against the reference where its interval is that narrow: on par where it
   reaches the reference's band, below or above it by the gap (points, with its interval);
4. else, where an interval was there but too wide, why no call; else, a cell with an MFU but
   no reference for it: no MFU call, and what would measure one; else nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.schema.forecast import Forecast
from torchscale.offline.analysis.cost import cost_per_million
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.prediction.score import TrackRecord
from torchscale.offline.analysis.ranking import comparable
from torchscale.offline.analysis.references import Reference, reference_for

# the models benchmarks/workload_reference.py has a plain loop of (its MODELS)
REFERENCE_LOOPS = (
    *("gpt2", "gpt2-large", "gpt2-medium", "tiny-gpt2"),
    *("bert-base", "bert-large", "resnet18", "resnet50", "tiny-bert", "vit-b16"),
)

MAX_WIDTH = 0.10  # an efficiency (or MFU) interval wider than 10 points of linear: no call
GOOD_EFFICIENCY = 0.80  # more GPUs pay from 80 % of linear kept; below it, fix the scaling
FIX_SHARE = 0.10  # a data wait or a straggler's cost of 10 % of the step: fix it first
LOW_MFU_FRACTION = 0.5  # MFU under half the reference's on the same GPU is low
MIN_SCORED = 3  # a forecast decides only from a track record of at least 3 scored forecasts
MIN_HELD = 0.9  # ... at least 90 % of which held their intervals


UNSCORED = TrackRecord(0, None, 0)  # no forecast scored: no forecast decides


def _width(low: Any, high: Any) -> float | None:
    low, high = finite(low), finite(high)
    return None if low is None or high is None else high - low


def _is_true(value: Any) -> bool:
    """A judged flag that is set (a table's True, numpy's, 1); unknown (None, NaN) is not."""
    return value is not None and not pd.isna(value) and bool(value)


def _gpu_rows(cells: pd.DataFrame, busy_too: bool = False) -> pd.DataFrame:
    """The measured GPU cells not on a busy machine (`busy_too`: on one too), that may be
    ranked (never FSDP on one device, which shards nothing)."""
    if cells.empty:
        return cells
    rows = cells[(cells["device"].astype(str) != "cpu") & cells["samples_per_s"].notna()]
    if "busy_machine" in rows and not busy_too:
        rows = rows[~rows["busy_machine"].map(_is_true)]
    return comparable(rows)


def _pick(rows: pd.DataFrame) -> dict[str, Any]:
    """The fastest cell at the largest world size: what would be bought."""
    largest = rows[rows["world_size"] == rows["world_size"].max()]
    return dict(largest.loc[pd.to_numeric(largest["samples_per_s"]).idxmax()])


def _share_at_least(row: Mapping[str, Any], part: str) -> tuple[float, float, float] | None:
    value, low, high = (finite(row.get(f"{part}_share{end}")) for end in ("", "_low", "_high"))
    if value is None or low is None or high is None or low < FIX_SHARE:
        return None
    return value, low, high


def _sized_for_tests(name: object) -> bool:
    """A zoo model of the tiny family: the real architectures at toy sizes, for tests and CPU
    demos. On a GPU it waits for the host by design: there is nothing to fix."""
    spec = BUILTIN.get(str(name))
    return spec is not None and spec.family == "tiny"


def _fix_first(model: str, row: Mapping[str, Any]) -> Finding | None:
    if _is_true(row.get("host_bound")):
        busy = finite(row.get("gpu_busy_share"))
        code = "decision.too_small" if _sized_for_tests(row.get("model")) else "decision.fix_host"
        return Finding(code=code, figures={"model": model, "busy_share": busy})
    data = _share_at_least(row, "data")
    if data is not None:
        share, low, high = data
        figures = {"model": model, "share": share, "low": low, "high": high}
        return Finding(code="decision.fix_input", figures=figures)
    wait = _share_at_least(row, "wait_for_peers")
    if wait is not None and _is_true(row.get("straggler_named")):
        share, low, high = wait
        rank = finite(row.get("straggler_rank"))
        figures = {
            "model": model,
            "rank": None if rank is None else int(rank),
            "share": share,
            "low": low,
            "high": high,
        }
        return Finding(code="decision.fix_straggler", figures=figures)
    return None


def _no_reference(model: str, row: Mapping[str, Any]) -> Finding:
    """No MFU call: what reference would judge this cell, and whether the benchmark can
    measure it."""
    name = str(row.get("model"))
    figures = {
        "model": model,
        "model_name": name,
        "gpu": str(row.get("gpu")),
        "batch": int(row["batch_size"]),
        "precision": str(row.get("precision")),
        "compiled": None if pd.isna(row.get("compiled")) else _is_true(row.get("compiled")),
        "measurable": name in REFERENCE_LOOPS,
    }
    return Finding(code="decision.no_reference", figures=figures)


def _reference_figures(reference: Reference) -> dict[str, Any]:
    return {
        "gpu": reference.gpu,
        "reference_model": reference.model,
        "reference_batch": reference.batch,
        "reference_mfu": statistics.median(reference.mfu),
        "reference_rounds": reference.rounds,
        "source": reference.source,
    }


def _no_interval(model: str, mfu: float, reference: Reference) -> Finding:
    """An MFU from one measured window (a profile's): no interval, so no place in the band."""
    figures = {"model": model, "mfu": mfu, **_reference_figures(reference)}
    return Finding(code="decision.no_interval", figures=figures)


def _against(reference: Reference, mfu: float, low: float, high: float) -> str:
    """Where the cell's MFU interval falls against the reference's band (its rounds' spread):
    under `LOW_MFU_FRACTION` of it, below it, reaching it, or above it."""
    if high < LOW_MFU_FRACTION * reference.low:
        return "decision.fix_mfu"
    if high < reference.low:
        return "decision.step_below"
    if low > reference.high:
        return "decision.step_above"
    return "decision.step_on_par"


def _mfu(model: str, row: Mapping[str, Any]) -> tuple[Finding | None, float | None]:
    """(the MFU call against the reference of the cell's model, GPU, precision and compile, or
    why there is none; None and the width of an MFU interval that was there but too wide to
    call)."""
    mfu, low, high = (finite(row.get(k)) for k in ("mfu", "mfu_low", "mfu_high"))
    if mfu is None:
        return None, None
    reference = reference_for(
        row.get("model"), row.get("gpu"), row.get("precision"), row.get("compiled")
    )
    if reference is None:
        return _no_reference(model, row), None
    if low is None or high is None:  # one window: nothing to set against the band
        return _no_interval(model, mfu, reference), None
    code = _against(reference, mfu, low, high)
    if code != "decision.fix_mfu" and high - low > MAX_WIDTH:
        return None, high - low
    figures = {
        "model": model,
        "mfu": mfu,
        "low": low,
        "high": high,
        **_reference_figures(reference),
        "gap": statistics.median(reference.mfu) - mfu,
        "gap_low": reference.low - high,
        "gap_high": reference.high - low,
        "fraction": LOW_MFU_FRACTION,
    }
    return Finding(code=code, figures=figures), None


def _scaling_call(figures: dict[str, Any]) -> Finding | None:
    """buy, fix the scaling, or (between the two) no call, by the efficiency's interval."""
    if figures["low"] >= GOOD_EFFICIENCY:
        return Finding(code="decision.buy", figures=figures)
    if figures["high"] < GOOD_EFFICIENCY:
        return Finding(code="decision.fix_scaling", figures=figures)
    return Finding(code="decision.scaling_borderline", figures=figures)


def _measured(model: str, scaling: pd.DataFrame) -> tuple[Finding | None, float | None]:
    """The call from the measured efficiency of the fastest configuration at the largest
    world size, and that interval's width (None: nothing measured at two sizes)."""
    rows = _gpu_rows(scaling)
    rows = rows[rows["world_size"] > rows["base_world_size"]] if len(rows) else rows
    if rows.empty:
        return None, None
    row = _pick(rows)
    width = _width(row.get("efficiency_low"), row.get("efficiency_high"))
    if width is None or width > MAX_WIDTH:
        return None, width
    figures = {
        "model": model,
        "basis": "measured",
        "base": int(row["base_world_size"]),
        "world": int(row["world_size"]),
        "efficiency": float(row["efficiency"]),
        "low": float(row["efficiency_low"]),
        "high": float(row["efficiency_high"]),
        "good": GOOD_EFFICIENCY,
        "cost_per_m_tokens": finite(row.get("cost_per_m_tokens")),
    }
    return _scaling_call(figures), width


def _forecast_cost(forecast: Forecast, base: Mapping[str, Any]) -> float | None:
    """The forecast cell's cost per million tokens: its rate in tokens (the measured cell's
    tokens per sample) at the measured cell's price per GPU-hour."""
    price = finite(base.get("price_per_gpu_hour"))
    tokens, samples = finite(base.get("tokens_per_s")), finite(base.get("samples_per_s"))
    rate = forecast.samples_per_s.value
    if price is None or not tokens or not samples or rate is None or rate <= 0:
        return None
    return cost_per_million(rate * tokens / samples, forecast.key.world_size, price)


def _same_group(rows: pd.DataFrame, forecast: Forecast) -> pd.DataFrame:
    key = forecast.key
    mask = (
        (rows["batch_size"] == key.batch_size)
        & (rows["precision"].astype(str) == key.precision)
        & (rows["strategy"].astype(str) == key.strategy)
        & (rows["device"].astype(str) == key.device)
    )
    return rows[mask]


def _forecast(
    model: str, rows: pd.DataFrame, forecasts: Sequence[Forecast], record: TrackRecord
) -> tuple[Finding | None, float | None]:
    """The call from the forecast of the largest world size beyond what was measured, where
    the track record is scored (MIN_SCORED, MIN_HELD), and its efficiency interval's width."""
    coverage = record.coverage
    if record.count < MIN_SCORED or coverage is None or coverage < MIN_HELD:
        return None, None
    found: list[tuple[Forecast, pd.DataFrame]] = []
    for forecast in forecasts:
        if forecast.key.label != model or forecast.key.device == "cpu":
            continue
        group = _same_group(rows, forecast)
        if len(group) and forecast.key.world_size > group["world_size"].max():
            found.append((forecast, group))
    usable = [(f, g) for f, g in found if f.scaling_efficiency is not None]
    if not usable:
        return None, None
    forecast, group = max(usable, key=lambda pair: pair[0].key.world_size)
    efficiency = forecast.scaling_efficiency
    assert efficiency is not None
    width = _width(efficiency.low, efficiency.high)
    if efficiency.value is None or width is None or width > MAX_WIDTH:
        return None, width
    base = dict(group.loc[group["world_size"].idxmin()])
    figures = {
        "model": model,
        "basis": "forecast",
        "base": int(base["world_size"]),
        "world": forecast.key.world_size,
        "efficiency": efficiency.value,
        "low": efficiency.low,
        "high": efficiency.high,
        "good": GOOD_EFFICIENCY,
        "measured_at": sorted(int(w) for w in set(group["world_size"])),
        "scored": record.count,
        "held": record.inside,
        "cost_per_m_tokens": _forecast_cost(forecast, base),
    }
    return _scaling_call(figures), width


def decide_model(
    model: str,
    cells: pd.DataFrame,
    scaling: pd.DataFrame,
    forecasts: Sequence[Forecast] = (),
    record: TrackRecord = UNSCORED,
) -> Finding | None:
    """One model's call (the rule in the module docstring), or None where the figures carry
    none. `cells`: its pooled measured cells (with `gpu`, the GPU's name, and the cost columns
    where priced); `scaling`: its weak-scaling rows (`scaling_efficiency.scaling_table`)."""
    rows = _gpu_rows(cells)
    if rows.empty:
        return None
    pick = _pick(rows)
    fix = _fix_first(model, pick)
    if fix is not None:
        return fix
    mfu, mfu_width = _mfu(model, pick)
    if mfu is not None and mfu.code == "decision.fix_mfu":
        return mfu
    call, width = _measured(model, scaling)
    if call is None:
        call, forecast_width = _forecast(model, rows, forecasts, record)
        width = width if forecast_width is None else forecast_width
    if call is not None:
        return call
    if mfu is not None and mfu.code not in ("decision.no_reference", "decision.no_interval"):
        return mfu
    if width is not None or mfu_width is not None:
        what = "scaling efficiency" if width is not None else "MFU"
        shown = width if width is not None else mfu_width
        figures = {"model": model, "what": what, "width": shown, "max_width": MAX_WIDTH}
        return Finding(code="decision.not_decidable", figures=figures)
    return mfu


def _models(cells: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """Each model's cells, in model order."""
    labels = cells["model_label"].astype(str) if len(cells) else pd.Series(dtype=str)
    for model in sorted(set(labels)):
        yield model, cells[labels == model]


def decide(
    cells: pd.DataFrame,
    scaling: pd.DataFrame,
    forecasts: Sequence[Forecast] = (),
    record: TrackRecord = UNSCORED,
) -> list[Finding]:
    """Every model's call, in model order (`decide_model`); none for a model without one."""
    calls = []
    for model, own in _models(cells):
        scaled = scaling[scaling["model_label"].astype(str) == model] if len(scaling) else scaling
        call = decide_model(model, own, scaled, forecasts, record)
        if call is not None:
            calls.append(call)
    return calls


def unreferenced(cells: pd.DataFrame) -> list[Finding]:
    """Each model whose MFU has no reference of its own on its GPU, whatever its numbers (a
    busy machine's too): a run whose numbers cannot be used is told that a rerun alone would
    still get no MFU call. Not where the GPU or the compile is unknown: that says nothing of
    what a rerun would get."""
    calls = []
    for model, own in _models(cells):
        rows = _gpu_rows(own, busy_too=True)
        pick = _pick(rows) if len(rows) else {}
        if pd.isna(pick.get("gpu")) or pd.isna(pick.get("compiled")):
            continue
        call = _mfu(model, pick)[0]
        if call is not None and call.code == "decision.no_reference":
            calls.append(call)
    return calls
