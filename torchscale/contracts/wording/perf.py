"""Words for the findings of `validate --level perf`: a measured figure against its SKU's
expected one (orchestration/validate/reference.py judges; figures: ratio, expected, kind
('healthy': this search on a healthy GPU of the SKU, with its runs; 'spec': the sheet),
pass_at, fail_below)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


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


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "perf.pass": _judged,
    "perf.warn": _bars,
    "perf.fail": _bars,
    "perf.above_spec": lambda f: (
        f"{_judged(f)}: above the spec sheet, a measurement bug, not a fast GPU"
    ),
    "perf.no_reference": lambda f: "no reference for this device: the measured value alone",
    "perf.not_measured": lambda f: "not measured",
}
