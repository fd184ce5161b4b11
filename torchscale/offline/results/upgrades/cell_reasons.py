"""Version 19 -> 20, the reasons of `unavailable` that carry figures: versions 16-19 wrote
them as a sentence with the figures inside (a FLOP count's error, why the launch time could
not be read, why there is no peak for MFU); 20 stores the code and the figures
(contracts/wording/unavailable.py, peak_reasons.py). A sentence becomes its finding only where
today's words for that finding are the stored sentence exactly; anything else stays as stored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.peak_reasons import RUN_PERF
from torchscale.contracts.wording.unavailable import META_COUNT_FAILED

Figures = dict[str, Any]

# (code, the sentence as versions 16-19 wrote it, its figures from the match)
FIGURED: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], Figures]], ...] = (
    (
        "unavailable.flop_count_failed",
        re.compile(re.escape(META_COUNT_FAILED) + r" \((.+)\)"),
        lambda m: {"error": m[1]},
    ),
    (
        "unavailable.parent_unreadable",
        re.compile(r"the parent process could not be read \((.+)\)"),
        lambda m: {"error": m[1]},
    ),
    (
        "peak.mig_slice",
        re.compile(
            r"'(.+)' is a MIG slice: its share of the GPU's peak FLOP/s is not in the "
            r"table, so no MFU"
        ),
        lambda m: {"device": m[1]},
    ),
    (
        "peak.not_in_table",
        re.compile(r"no peak FLOP/s table entry for '(.+)'"),
        lambda m: {"device": m[1]},
    ),
    (
        "peak.no_dtype",
        re.compile(r"no (\S+) peak known for (.+) \(read as (.+)\)"),
        lambda m: {"dtype": m[1], "device": m[2], "model": m[3]},
    ),
    (
        "peak.tf32_unknown",
        re.compile(
            r"cannot tell whether fp32 kernels may use TF32 \((.+) unreadable\), so "
            r"which peak applies is unknown"
        ),
        lambda m: {"unreadable": m[1].split(", ")},
    ),
    (
        "peak.not_measured",
        re.compile(r"no measured peak for host (\S+): " + re.escape(RUN_PERF)),
        lambda m: {"host": m[1]},
    ),
    (
        "peak.dtype_not_measured",
        re.compile(r"no measured (\S+) peak for host (\S+) in (.+)"),
        lambda m: {"dtype": m[1], "host": m[2], "path": m[3]},
    ),
    ("peak.not_looked_for", re.compile(r"not looked for"), lambda m: {}),
    (
        "peak.mfu_above_peak",
        re.compile(
            r"MFU above 100 % of the (\S+) peak \((\d+\.\d\d)\): a FLOP count or peak "
            r"bug, not reported"
        ),
        lambda m: {"mfu": float(m[2]), "which": m[1]},
    ),
)


def reason_finding(text: str) -> Figures | None:
    """The finding a stored reason's words say (today's words for it are those words), or
    None where they are no such sentence."""
    for code, sentence, figures_of in FIGURED:
        if (match := sentence.fullmatch(text)) is not None:
            found = Finding(code=code, figures=figures_of(match))
            if wording.say(found) == text:
                return found.model_dump()
    return None


def coded_figured(unavailable: Any) -> Any:
    """`unavailable` with a finding for each reason recognised above."""
    if not isinstance(unavailable, dict):
        return unavailable
    return {
        metric: (reason_finding(reason) or reason) if isinstance(reason, str) else reason
        for metric, reason in unavailable.items()
    }
