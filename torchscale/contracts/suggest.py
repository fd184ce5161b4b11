"""Did-you-mean hints for misspelt keys and names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """A ` (did you mean 'x'?)` suffix, or a list of what is valid when nothing is close."""
    options = sorted(set(candidates))
    lowered = {c.lower(): c for c in options}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    if close:
        return f" (did you mean '{lowered[close[0]]}'?)"
    if not options:
        return ""
    return " (valid: " + ", ".join(options) + ")"
