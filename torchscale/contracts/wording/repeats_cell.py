"""How a table row holds the figure of each repeat (or run): ';'-joined at six significant
digits, the one spelling `offline/analysis/numbers.py::parse_repeats` reads back."""

from __future__ import annotations

from collections.abc import Iterable


def joined_repeats(values: Iterable[float]) -> str:
    """[0.1234567, 2.0] -> '0.123457;2'."""
    return ";".join(f"{v:.6g}" for v in values)
