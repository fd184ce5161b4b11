"""Version 19 -> 20, why a figure has no interval: versions 16-19 stored an Estimate's reason
as a sentence (and so the copy a null share of the split gave `unavailable`, and the tp comm
probe's and the CPU wait clock's reasons); 20 stores the code and its figures
(contracts/wording/estimates.py, unavailable.py). A sentence becomes its finding only where
today's words for that finding are the stored sentence exactly; anything else stays as stored.
"""

from __future__ import annotations

import re
from typing import Any

from torchscale.contracts.wording.estimates import SAID
from torchscale.offline.results.upgrades.cell_reasons import Table, _fixed, _recognised

SEPARABLE = r"; the wait is inside exposed transfer \(collective time with nothing computing\)"
SENTENCES: Table = (
    *(_fixed(code) for code in SAID),
    ("estimate.one_unit", re.compile(r"one (\w+): spread unknown"), lambda m: {"unit": m[1]}),
    (
        "estimate.inside_noise",
        re.compile(r"not measurable above noise: its 95 % interval reaches (-?[\d.e+-]+)"),
        lambda m: {"edge": float(m[1])},
    ),
    (
        "estimate.inside_noise",
        re.compile(r"not measurable above noise: its 95 % interval reaches above (\S+)"),
        lambda m: {"above": float(m[1])},
    ),
    (
        "estimate.range_only",
        re.compile(r"range of (\d+) (\w+)s, no interval"),
        lambda m: {"n": int(m[1]), "unit": m[2]},
    ),
    (
        "estimate.wait_not_separable",
        re.compile(r"not separable: one rank of (\d+) in the input" + SEPARABLE),
        lambda m: {"world_size": int(m[1])},
    ),
    (
        "estimate.wait_not_separable",
        re.compile(r"not separable: no collective matched across the ranks" + SEPARABLE),
        lambda m: {"world_size": None},
    ),
    (
        "estimate.rest_after",
        re.compile(r"rest after (exposed comm|waiting): (.+)"),
        lambda m: {"label": m[1], "reason": reason_of_words(m[2])},
    ),
    (
        "unavailable.probe_failed",
        re.compile(r"rank (\d+): profiled steps failed: (.+)"),
        lambda m: {"rank": int(m[1]), "error": m[2]},
    ),
    (
        "unavailable.probe_no_trace",
        re.compile(r"the profiled steps left no trace"),
        lambda m: {"notes": []},
    ),
    (
        "unavailable.schedstat_unreadable",
        re.compile(
            r"(\S+) unreadable \((.+)\): the CPU wait and CPU time are measured on Linux only "
            r"\(run_delay of CONFIG_SCHED_INFO\)"
        ),
        lambda m: {"path": m[1], "error": m[2]},
    ),
)
ESTIMATE_KEYS = frozenset({"value", "low", "high", "n", "method", "measurable"})


def reason_of_words(text: str) -> Any:
    """The finding a stored reason's words say (as stored JSON), or the words themselves."""
    return _recognised(text, SENTENCES) or text


def _coded(node: Any) -> Any:
    """`node` with every Estimate's stored reason recognised, at any depth."""
    if isinstance(node, list):
        return [_coded(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _coded(value) for key, value in node.items()}
    if out.keys() >= ESTIMATE_KEYS and isinstance(out.get("reason"), str):
        out["reason"] = reason_of_words(out["reason"])
    return out


def coded_estimates(data: dict[str, Any]) -> dict[str, Any]:
    """A version 19 document with its Estimates' reasons, and the reasons of `unavailable`
    they and the probes gave, coded where today's words say them exactly."""
    out: dict[str, Any] = _coded(data)
    unavailable = out.get("unavailable")
    if isinstance(unavailable, dict):
        out["unavailable"] = {
            metric: reason_of_words(reason) if isinstance(reason, str) else reason
            for metric, reason in unavailable.items()
        }
    return out
