"""Version 19 -> 20, the reasons of `unavailable` that carry a figure: versions 16-19 wrote
them as a sentence with the figure inside (a FLOP count's error, why the launch time could
not be read); 20 stores the code and the figure (contracts/wording/unavailable.py). A
sentence matched exactly becomes its finding; anything else stays as stored.
"""

from __future__ import annotations

import re
from typing import Any

from torchscale.contracts.wording.unavailable import META_COUNT_FAILED

# (code, the sentence as versions 16-19 wrote it, the name of its one figure)
FIGURED: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "unavailable.flop_count_failed",
        re.compile(re.escape(META_COUNT_FAILED) + r" \((.+)\)"),
        "error",
    ),
    (
        "unavailable.parent_unreadable",
        re.compile(r"the parent process could not be read \((.+)\)"),
        "error",
    ),
)


def reason_finding(text: str) -> dict[str, Any] | None:
    """The finding a stored reason's words say, or None where they are not such a sentence."""
    for code, sentence, name in FIGURED:
        if (match := sentence.fullmatch(text)) is not None:
            return {"code": code, "figures": {name: match[1]}}
    return None


def coded_figured(unavailable: Any) -> Any:
    """`unavailable` with a finding for each reason recognised above."""
    if not isinstance(unavailable, dict):
        return unavailable
    return {
        metric: (reason_finding(reason) or reason) if isinstance(reason, str) else reason
        for metric, reason in unavailable.items()
    }
