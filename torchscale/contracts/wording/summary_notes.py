"""Figures in the notes of the report's key figures: a rate of tokens, the smallest change a
baseline comparison can see."""

from __future__ import annotations

from torchscale.contracts.wording.figures import readable


def tokens_per_s(value: float) -> str:
    """'2,886 tokens/s'."""
    return f"{readable(value)} tokens/s"


def blind_below(note: str | None, blind: float) -> str:
    """A regression count's note with the throughput drop it may miss (a share)."""
    return (
        f"{note + '; ' if note else ''}'no significant change' here may miss throughput drops "
        "smaller than about "
        f"{blind * 100:.0f} % (the rule finds one that large 95 % of the time at the spread "
        "measured; more runs a side see smaller ones)"
    )
