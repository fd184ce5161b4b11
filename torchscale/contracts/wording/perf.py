"""Words for the findings of `validate --level perf`: a measured figure against its SKU's
expected one (orchestration/validate/reference.py judges; figures: ratio, expected, kind
('healthy': this search on a healthy GPU of the SKU, with its runs; 'spec': the sheet),
pass_at, fail_below)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases, render
from torchscale.contracts.wording.power_limit_reasons import limit_why
from torchscale.contracts.wording.spell import as_set, readable_unit


def _against(f: Mapping[str, Any]) -> str:
    if f.get("kind") == "healthy":
        runs = f.get("runs") or 0
        counted = f"{runs} run" if runs == 1 else f"{runs} runs"
        return f"this search's {f['expected']:g} on a healthy GPU of this SKU ({counted})"
    return f"the spec-sheet {f['expected']:g}"


def _judged(f: Mapping[str, Any]) -> str:
    return f"{f['ratio'] * 100:.0f} % of {_against(f)}"


def _bars(f: Mapping[str, Any]) -> str:
    return (
        f"{_judged(f)} (PASS from {f['pass_at'] * 100:.0f} %, "
        f"FAIL below {f['fail_below'] * 100:.0f} %)"
    )


def _inner(f: Mapping[str, Any]) -> str:
    """The words of the finding a summary carries (its worst GPU's evidence)."""
    from torchscale.contracts import wording  # the joined phrases, made after this module
    from torchscale.contracts.finding import Finding

    return wording.say(Finding.model_validate(f["finding"])) if f.get("finding") else ""


def _where(f: Mapping[str, Any]) -> str:
    return f"{f['units']} {f['gpu']}" if f.get("gpu") is not None else str(f.get("title"))


def _watts(values: list[float]) -> str:
    low, high = min(values), max(values)
    return as_set(low, "W") if low == high else f"{as_set(low)}-{as_set(high, 'W')}"


def power_words(f: Mapping[str, Any]) -> str:
    """A group of GPUs' power limits (contracts/power_limit.py `node_power_cap`'s figures)."""
    if "unread" in f:
        if not f["of"]:
            return "power limit not read"
        return (
            f"power limit unknown on {f['unread']} of {f['of']} GPUs ({limit_why(f.get('why'))})"
            ": a power cap can be neither seen nor ruled out"
        )
    enforced, default = f["enforced_w"], f["default_w"]
    if f["capped_gpus"] == f["of"]:
        return f"power limit {_watts(enforced)} of {_watts(default)} default: the node is capped"
    if not f["capped_gpus"]:
        return f"power limit {_watts(enforced)}, its default: not a power cap"
    return (
        f"{f['capped_gpus']} of {f['of']} GPUs capped below their default (limits "
        f"{_watts(enforced)}, median {statistics.median(enforced):g} W; default "
        f"{_watts(default)}): not the whole node"
    )


def _sku(f: Mapping[str, Any]) -> str:
    """The SKU verdict the peers' finding carries, in its own words."""
    sku = f.get("sku")
    phrase = PHRASES.get(sku["code"]) if sku else None
    return render(phrase, sku["figures"]) if phrase is not None and sku is not None else ""


def lags_peers(f: Mapping[str, Any]) -> str:
    sku = _sku(f)
    return (
        f"{f['peer_ratio'] * 100:.0f} % of the median of the node's other {f['peers']} GPUs "
        f"({f['peer_median']:.3g} {f['unit']}): this GPU lags its peers"
        + (f"; {sku}" if sku else "")
    )


def node_below_sku(f: Mapping[str, Any]) -> str:
    healthy = "; per GPU it is healthy" if f.get("power_capped") else ""
    return (
        f"{_sku(f)}; the whole node is below the SKU (its median {f['node_median']:.3g} "
        f"{f['unit']}, {f['node_ratio'] * 100:.0f} % of the SKU's {f['expected']:g}) and this "
        f"GPU is with its peers: not a per-GPU fault; {power_words(f['power'])}{healthy}"
    )


PHRASES: Phrases = {
    "perf.pass": _judged,
    "perf.warn": _bars,
    "perf.fail": _bars,
    "perf.above_spec": lambda f: (
        f"{_judged(f)}: above the spec sheet, a measurement bug, not a fast GPU"
    ),
    "perf.no_reference": "no reference for this device: the measured value alone",
    "perf.not_measured": "not measured",
    "perf.lags_peers": lags_peers,
    "perf.node_below_sku": node_below_sku,
    "perf.fix_power_unknown": "whole node below the SKU: power cap? check nvidia-smi -q -d POWER",
    "perf.fix_capped": (
        "the node's GPUs run under a power limit below their default (nvidia-smi -q -d POWER): "
        "its matmuls stay below the SKU's; raise the limit (nvidia-smi -pl) where the provider "
        "allows"
    ),
    "perf.fix_uncapped": (
        "whole node below the SKU at its default power limit: check its clocks and slowdown "
        "reasons (nvidia-smi -q -d CLOCK,PERFORMANCE: application clocks, thermal or power "
        "brake) and its cooling"
    ),
    "perf.fix_lagging": (
        "one GPU below its peers: check its clocks, power and temperature (nvidia-smi -q -d "
        "PERFORMANCE,POWER,TEMPERATURE), other processes on it and its ECC errors"
    ),
    "perf.fix_fail": "see docs/validate.md ('How to read a FAIL') for what to check on this node",
    "perf.fix_warn": "below what this SKU usually reaches: compare with its peers (fleet view)",
    "perf.busbw_not_measured": lambda f: (
        "; ".join(f["reasons"]) or f.get("error") or f"{f['op']} was not measured ({f['status']})"
    ),
    "perf.busbw_too_few_gpus": "needs 2 or more GPUs: this node has {count} (NCCL links no GPU)",
    "perf.busbw_not_run": "the collective sweep could not run: {error}",
    "perf.wrong_sums": "{wrong} wrong element(s) in the checked results ({comm_run})",
    "perf.one_figure": lambda f: f"{readable_unit(f['value'], f['unit'])}: {_inner(f)}",
    "perf.spread": lambda f: (
        f"{f['count']} {f['units']}s, {readable_unit(f['low'], f['unit'])} to "
        f"{readable_unit(f['high'], f['unit'])} (median {readable_unit(f['median'], f['unit'])}); "
        f"{_where(f)}: {_inner(f)}"
    ),
}
