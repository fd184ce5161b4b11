"""What throughput costs at a price per GPU-hour (pure functions, no I/O).

A job holds every one of its GPUs for its whole run, so the GPU-hours a million samples (or
tokens) take are `world_size x time`, with time = 1e6 / global rate. On CPU cells a "GPU" is one
rank (one process), the unit the price is then given for.
"""

from __future__ import annotations

import math

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.cell_reasons import coded

SECONDS_PER_HOUR = 3600.0
MILLION = 1e6


def gpu_hours_per_million(rate_per_s: float, world_size: int) -> float:
    """GPU-hours to process one million items at `rate_per_s` items/s over all `world_size`
    GPUs (each GPU is paid for the whole time)."""
    if not rate_per_s > 0 or world_size <= 0:
        raise ValueError("the rate and the world size must be positive")
    return MILLION / rate_per_s / SECONDS_PER_HOUR * world_size


def cost_per_million(rate_per_s: float, world_size: int, price_per_gpu_hour: float) -> float:
    """Money for one million items: GPU-hours per million x the price of one GPU-hour."""
    check_price(price_per_gpu_hour)
    return gpu_hours_per_million(rate_per_s, world_size) * price_per_gpu_hour


def check_price(price_per_gpu_hour: float) -> None:
    """A price must be a finite number >= 0 (0: free hardware, every cost is 0)."""
    if not math.isfinite(price_per_gpu_hour) or price_per_gpu_hour < 0:
        raise ValueError(f"a price per GPU-hour must be >= 0, not {price_per_gpu_hour}")


def cost_table(cells: pd.DataFrame, price_per_gpu_hour: float | pd.Series) -> pd.DataFrame:
    """The ok cells that have a throughput and a price, with `price_per_gpu_hour` and
    COST_COLUMNS added: GPU-hours and cost per million samples, and cost per million tokens
    (NaN where the model has no tokens/s). The price is one for every cell, or a Series aligned
    with `cells` (one per result set: machines at different prices); NaN prices are dropped."""
    if isinstance(price_per_gpu_hour, pd.Series):
        prices = pd.to_numeric(price_per_gpu_hour, errors="coerce").astype(float)
        for value in prices.dropna().unique():
            check_price(float(value))
    else:
        check_price(price_per_gpu_hour)
        prices = pd.Series(float(price_per_gpu_hour), index=cells.index)
    rate = pd.to_numeric(cells["samples_per_s"], errors="coerce")
    out = cells[(cells["status"] == "ok") & (rate > 0) & prices.notna()].copy()
    out["price_per_gpu_hour"] = prices[out.index]
    world = pd.to_numeric(out["world_size"]).astype(float)
    samples = pd.to_numeric(out["samples_per_s"]).astype(float)
    tokens = pd.to_numeric(out["tokens_per_s"], errors="coerce").astype(float)
    hours_per_sample = world / SECONDS_PER_HOUR / samples
    out["gpu_hours_per_m_samples"] = MILLION * hours_per_sample
    out["cost_per_m_samples"] = out["gpu_hours_per_m_samples"] * out["price_per_gpu_hour"]
    tokens = tokens.where(tokens > 0)
    out["cost_per_m_tokens"] = (
        MILLION * world / SECONDS_PER_HOUR / tokens * out["price_per_gpu_hour"]
    )
    return out


NO_PRICE = coded("unavailable.no_price")
NO_TOKENS = coded("unavailable.no_tokens")


def cell_cost(
    samples_per_s: float | None,
    tokens_per_s: float | None,
    world_size: int,
    price_per_gpu_hour: float | None,
) -> tuple[dict[str, float | None], dict[str, Finding]]:
    """The `cost` fields of one cell result and the reasons for the null ones.

    GPU-hours per million samples need only the throughput; the money figures need a price.
    """
    unavailable: dict[str, Finding] = {}
    if price_per_gpu_hour is not None:
        check_price(price_per_gpu_hour)
    hours: float | None = None
    if samples_per_s is not None and samples_per_s > 0 and world_size > 0:
        hours = gpu_hours_per_million(samples_per_s, world_size)
    per_samples = per_tokens = None
    if price_per_gpu_hour is None:
        unavailable["cost.cost_per_m_samples"] = NO_PRICE
        unavailable["cost.cost_per_m_tokens"] = NO_PRICE
    else:
        if hours is not None:
            per_samples = hours * price_per_gpu_hour
        if tokens_per_s is not None and tokens_per_s > 0:
            per_tokens = cost_per_million(tokens_per_s, world_size, price_per_gpu_hour)
        else:
            unavailable["cost.cost_per_m_tokens"] = NO_TOKENS
    fields = {
        "per_gpu_hour": price_per_gpu_hour,
        "gpu_hours_per_m_samples": hours,
        "cost_per_m_samples": per_samples,
        "cost_per_m_tokens": per_tokens,
    }
    return fields, unavailable
