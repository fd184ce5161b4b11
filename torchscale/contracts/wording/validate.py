"""Words for `torchscale validate`: its checks' findings (codes and figures stored in the
validate report), the figures its tables and the measured peak spell, and the hints that say
how to fix a check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.validate_report import CheckResult, Measurement
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import sig, tenth_seconds, with_unit

F = Mapping[str, Any]


def _said(findings: Sequence[Finding]) -> str:
    """The findings in words, joined."""
    from torchscale.contracts import wording  # the joined phrases, made after this module

    return "; ".join(wording.say(f) for f in findings)


def detail(item: CheckResult | Measurement) -> str:
    """What a check found, or a measurement's evidence, in words."""
    if isinstance(item, CheckResult):
        return _said(item.findings)
    return _said([item.finding] if item.finding else [])


def hint(check: CheckResult) -> str:
    """How to fix a check, in words (empty on PASS)."""
    return _said(check.fix)


def unavailable(row: Measurement) -> str | None:
    """Why a measurement has no value, in words; None where it has one."""
    return (detail(row) or "not measured") if row.value is None else None


def _all(f: F) -> str:
    """Several findings that are one piece of evidence, in a row (each by its own phrase)."""
    from torchscale.contracts import wording  # the joined phrases, made after this module

    return "; ".join(wording.say(Finding.model_validate(one)) for one in f["findings"])


def all_of(findings: Sequence[Finding]) -> dict[str, Any]:
    """The figures of 'validate.all' for `findings` (Finding models)."""
    return {"findings": [one.model_dump() for one in findings]}


def _spread(values: Sequence[float], unit: str) -> str:
    low, high = min(values), max(values)
    if len(values) == 1:
        return with_unit(sig(low, 4), unit)
    return f"{sig(low, 4)} to {with_unit(sig(high, 4), unit)} over {len(values)} ranks"


def phase_words(
    title: str,
    values: Sequence[float] = (),
    unit: str = "",
    probes: int | None = None,
    elapsed_s: float | None = None,
    why: Any = None,
) -> str:
    """A finished perf phase in a line: its figure over the ranks (a matmul's with its
    probes and time), or why it has none (a finding)."""
    if not values:
        from torchscale.contracts import wording  # the joined phrases, made after this module

        return f"perf: {title}: not measured: {wording.say(why) if why else 'no figure'}"
    text = f"perf: {title}: {_spread(values, unit)}"
    if probes is None:
        return text
    took = f", {tenth_seconds(elapsed_s)}" if elapsed_s is not None else ""
    return text + f" ({probes} probe{'' if probes == 1 else 's'}{took})"


PHRASES: Phrases = {
    "validate.all": _all,
}
