"""A result of schema 18 or older, its GPU telemetry re-judged by today's rules
(contracts/gpu_clocks.py) from what it stored.

Schemas 16 to 18 recorded the power limits and the draw but called SwPowerCap with the clocks
below 90 % of the top throttled at any draw: a GPU held at its default limit read as an action
(the second H100 run's GPT-2 b16, 676 W of 700). Those verdicts are judged again from the
stored share of capped samples, the mean SM clock, the limits and the mean draw; every other
verdict of those schemas was judged as today's rule judges it and keeps its stored words.

Those results counted SwPowerCap as throttling, took every sample (the window edges' too) and
kept NVML's ~1 s averages over windows of a fraction of a second. What they stored still decides
most of it: the samples' count and share with a slowdown bit, the SM clock's mean and max (the
lowest sample was at least `samples x mean - (samples - 1) x max`), the GPU's name (its top SM
clock from the SKU table) and the seconds from each window's first edge to its last. The power
limits were not recorded: a site cap cannot be seen, and the basis says so.
"""

from __future__ import annotations

from torchscale.contracts.gpu_clocks import (
    EDGES_INCLUDED,
    IN_WINDOW,
    POWER_CAP,
    RankVerdict,
    averaged_too_short,
    cell_verdict,
    counter_too_coarse,
    judge_clocks,
    sku_max_sm_mhz,
    throttle_warning,
)
from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.rank_reasons import several
from torchscale.contracts.schema.cell_result import CellResult, CellWarning, Reason
from torchscale.contracts.schema.cell_telemetry import FieldStats, RankTelemetry
from torchscale.contracts.wording.unavailable import why
from torchscale.offline.results.upgrades.stored_words import THROTTLED

NOT_RECORDED = "not recorded by results of schema 15 or older"


def rejudged_rank(rank: RankTelemetry, windows: int) -> RankTelemetry:
    """One rank's figures and clock verdict by today's rules, from what it stored."""
    window_s = rank.load.window_s if rank.load is not None and rank.load.window_s > 0 else None
    seconds = window_s if window_s is not None else rank.sampled_s
    unavailable = dict(rank.unavailable)
    update: dict[str, object] = {}
    short = averaged_too_short(seconds)
    for name in ("gpu_util_pct", "power_w"):
        if short is not None and getattr(rank, name) is not None:
            update[name] = None
            unavailable[name] = short
    energy = rank.energy_j
    if energy is not None and rank.energy_method == "counter":
        coarse = counter_too_coarse(seconds, max(windows, 1))
        if coarse is not None:
            update |= {"energy_j": None, "energy_method": None}
            unavailable["energy_j"] = coarse
        elif seconds > 0:  # one definition of power: the counter's where it measured
            watts = energy / seconds
            top = rank.power_w.max if rank.power_w is not None and short is None else watts
            update |= {"power_w": FieldStats(mean=watts, max=max(watts, top))}
            update["power_method"] = "counter"
            unavailable.pop("power_w", None)
    elif energy is not None and short is not None:
        update |= {"energy_j": None, "energy_method": None}
        unavailable["energy_j"] = short
    if "power_w" not in update and rank.power_w is not None:
        update["power_method"] = "samples"
    if rank.throttled_fraction is not None:
        flagged_samples = round(rank.throttled_fraction * rank.samples)
        flagged = dict.fromkeys(rank.throttle_reasons, flagged_samples)
        judged = judge_clocks(
            flagged,
            rank.samples,
            rank.sm_clock_mhz.mean if rank.sm_clock_mhz is not None else None,
            sku_max_sm_mhz(rank.gpu_name),
            f"{NOT_RECORDED}, and the SKU table has no {rank.gpu_name or 'name for it'}",
            PowerLimit(unavailable=NOT_RECORDED),
            where=EDGES_INCLUDED,
            max_from_sku=True,
        )
        update |= {
            "clock_verdict": judged.verdict,
            "clock_finding": judged.finding,
            "clock_basis": None,
            "throttle_reasons": list(judged.reasons) if judged.verdict == "throttled" else [],
        }
    else:
        unavailable.setdefault("clock_verdict", unavailable.get("throttled_fraction", NOT_RECORDED))
    return rank.model_copy(update=update | {"unavailable": unavailable})


def rejudged_telemetry(result: CellResult) -> CellResult:
    """The result with its ranks' telemetry re-judged and the cell's totals, throttled verdict
    and throttling warning following them; a result judged by today's rules is returned as
    it is."""
    telemetry = result.telemetry
    if (
        telemetry is None
        or all(r.device == "cpu" for r in telemetry.ranks)  # no GPU: nothing to re-judge
        or any(r.clock_verdict is not None for r in telemetry.ranks)
    ):
        return result
    ranks = [rejudged_rank(r, telemetry.windows) for r in telemetry.ranks]
    unavailable = dict(result.unavailable)
    update: dict[str, object] = {}

    def total(key: str, values: list[float | None], mean: bool) -> float | None:
        if not ranks or any(v is None for v in values):
            reasons = [r.unavailable.get(key.removesuffix("_mean")) for r in ranks]
            named = sorted((r for r in reasons if r), key=lambda r: str(why(r)))
            unavailable[f"telemetry.{key}"] = several(named) if named else ""
            return None
        present = [v for v in values if v is not None]
        return sum(present) / len(present) if mean else sum(present)

    if telemetry.gpu_util_pct_mean is not None:
        util = [r.gpu_util_pct.mean if r.gpu_util_pct else None for r in ranks]
        update["gpu_util_pct_mean"] = total("gpu_util_pct_mean", util, True)
    if telemetry.power_w_mean is not None:
        power = [r.power_w.mean if r.power_w else None for r in ranks]
        update["power_w_mean"] = total("power_w_mean", power, True)
        methods = {r.power_method for r in ranks}
        if update["power_w_mean"] is not None:
            update["power_method"] = methods.pop() if len(methods) == 1 else "mixed"
    if telemetry.energy_j is not None:
        energy = total("energy_j", [r.energy_j for r in ranks], False)
        if energy is None:
            update |= {"energy_j": None, "energy_method": None}
            for key in ("samples_per_joule", "tokens_per_joule"):
                if getattr(telemetry, key) is not None:
                    update[key] = None
                    unavailable[f"telemetry.{key}"] = unavailable["telemetry.energy_j"]
    return with_verdicts(result, ranks, update, unavailable)


def _throttle_warning(warning: CellWarning) -> bool:
    """The cell's throttling warning, judged again with the verdicts: as a finding, or in the
    words of a version that judged no verdict to rebuild it from."""
    if warning.finding is not None:
        return warning.finding.code == "warning.throttled"
    return (warning.text or "").startswith(THROTTLED)


def with_verdicts(
    result: CellResult,
    ranks: list[RankTelemetry],
    update: dict[str, object],
    unavailable: dict[str, Reason],
) -> CellResult:
    """The result with `ranks` and the cell's clock verdict, throttled flag and throttling
    warning following their verdicts (`update`, `unavailable`: the re-judged totals so far)."""
    assert result.telemetry is not None
    verdicts = [
        RankVerdict(
            r.rank,
            r.gpu_name or r.device,
            r.clock_verdict,
            tuple(r.throttle_reasons),
            r.clock_finding or r.clock_basis or r.unavailable.get("clock_verdict", NOT_RECORDED),
        )
        for r in ranks
    ]
    verdict, throttled, reasons, why_not = cell_verdict(verdicts)
    update |= {"ranks": ranks, "clock_verdict": verdict, "throttled": throttled}
    update["throttle_reasons"] = reasons
    if throttled is None:
        unavailable["telemetry.throttled"] = why_not or NOT_RECORDED
    else:
        unavailable.pop("telemetry.throttled", None)
    warnings = [w for w in result.warnings if not _throttle_warning(w)]
    if hot := throttle_warning(verdicts):
        warnings.append(CellWarning.of("throttling", "warning.throttled", hot))
    telemetry = result.telemetry.model_copy(update=update)
    return result.model_copy(
        update={"telemetry": telemetry, "warnings": warnings, "unavailable": unavailable}
    )


def _power_capped_low(rank: RankTelemetry) -> bool:
    """A verdict of schemas 16-18 today's rule may judge otherwise: throttled by SwPowerCap
    alone at lowered clocks, with the limits recorded."""
    return (
        rank.clock_finding is None
        and rank.clock_verdict == "throttled"
        and rank.throttle_reasons == [POWER_CAP]
        and rank.power_limit is not None
        and rank.power_limit.capped is False
    )


def rejudged_power_cap(result: CellResult) -> CellResult:
    """A result of schema 16 to 18 whose GPU was called throttled by SwPowerCap at its default
    limit, judged again by today's rule (the draw beside the clocks); any other result as it
    is."""
    telemetry = result.telemetry
    if telemetry is None or not any(_power_capped_low(r) for r in telemetry.ranks):
        return result
    ranks = [_rejudged_power_cap(r) if _power_capped_low(r) else r for r in telemetry.ranks]
    return with_verdicts(result, ranks, {}, dict(result.unavailable))


def _rejudged_power_cap(rank: RankTelemetry) -> RankTelemetry:
    samples = rank.window_samples or rank.samples
    capped = round((rank.throttled_fraction or 0.0) * samples)
    top = rank.sm_clock_max_mhz or sku_max_sm_mhz(rank.gpu_name)
    judged = judge_clocks(
        {POWER_CAP: capped},
        samples,
        rank.sm_clock_mhz.mean if rank.sm_clock_mhz is not None else None,
        top,
        None if top else f"not recorded, and the SKU table has no {rank.gpu_name}",
        rank.power_limit,
        rank.power_w.mean if rank.power_w is not None else None,
        where=IN_WINDOW,
        max_from_sku=rank.sm_clock_max_mhz is None,
    )
    return rank.model_copy(
        update={
            "clock_verdict": judged.verdict,
            "clock_finding": judged.finding,
            "clock_basis": None,
            "throttle_reasons": list(judged.reasons) if judged.verdict == "throttled" else [],
        }
    )
