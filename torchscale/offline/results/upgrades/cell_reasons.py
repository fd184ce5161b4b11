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

Table = tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], Figures]], ...]

# (code, the sentence as versions 16-19 wrote it, its figures from the match)
FIGURED: Table = (
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
        "unavailable.compile_counters_failed",
        re.compile(r"torch\._dynamo's counters could not be read \((.+)\)"),
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
        "data.plugin_not_read",
        re.compile(r"plug-in batches: their bytes are the plug-in's own, not counted"),
        lambda m: {},
    ),
    (
        "peak.mfu_above_peak",
        re.compile(
            r"MFU above 100 % of the (\S+) peak \((\d+\.\d\d)\): a FLOP count or peak "
            r"bug, not reported"
        ),
        lambda m: {"mfu": float(m[2]), "which": m[1]},
    ),
)


def _fixed(code: str) -> tuple[str, re.Pattern[str], Callable[[re.Match[str]], Figures]]:
    """A figure-less code, recognised by today's words for it."""
    return (code, re.compile(re.escape(wording.say(Finding(code=code)))), lambda m: {})


# the notes of an input pipeline (`data.notes`), and why a plug-in's batches count no bytes
DATA_NOTES: Table = (
    *(
        _fixed(code)
        for code in (
            "data.plugin_drawn",
            "data.plugin_not_model_parallel",
            "data.cifar_in_memory",
            "data.no_fadvise",
        )
    ),
    (
        "data.labels_mod",
        re.compile(r"labels taken mod (\d+) \(the model has \d+ classes, CIFAR-100 (\d+)\).*"),
        lambda m: {"classes": int(m[1]), "dataset_classes": int(m[2])},
    ),
    (
        "data.cache_not_dropped",
        re.compile(r"page cache not dropped for (.+)"),
        lambda m: {"failed": m[1].split("; ")},
    ),
)


# why the busy trace measured nothing (`host_bound.reason`, schemas 18-19)
BUSY_REASONS: Table = (
    *(
        _fixed(code)
        for code in ("host_bound.pipeline", "host_bound.peer_failed", "host_bound.none_traced")
    ),
    (
        "host_bound.trace_failed",
        re.compile(r"the CUDA trace of the busy share failed \((.+)\)"),
        lambda m: {"error": m[1]},
    ),
)


def _recognised(text: str, table: Table) -> Figures | None:
    for code, sentence, figures_of in table:
        if (match := sentence.fullmatch(text)) is not None:
            found = Finding(code=code, figures=figures_of(match))
            if wording.say(found) == text:
                return found.model_dump()
    return None


def reason_finding(text: str) -> Figures | None:
    """The finding a stored reason's words say (today's words for it are those words), or
    None where they are no such sentence."""
    return _recognised(text, FIGURED)


def coded_data_notes(data: Any) -> Any:
    """An input pipeline's block with a finding for each note recognised above."""
    if not isinstance(data, dict) or not isinstance(data.get("notes"), list):
        return data
    notes = [(_recognised(n, DATA_NOTES) or n) if isinstance(n, str) else n for n in data["notes"]]
    return {**data, "notes": notes}


def coded_reasons(result: dict[str, Any]) -> dict[str, Any]:
    """A version 19 result with its reasons, its input pipeline's notes and its busy trace's
    reason coded."""
    out = dict(result)
    if "unavailable" in out:
        out["unavailable"] = coded_figured(out["unavailable"])
    if "data" in out:
        out["data"] = coded_data_notes(out["data"])
    bound = out.get("host_bound")
    if isinstance(bound, dict) and isinstance(bound.get("reason"), str):
        found = _recognised(bound["reason"], BUSY_REASONS)
        out["host_bound"] = {**bound, "reason": found} if found else bound
    return out


def coded_figured(unavailable: Any) -> Any:
    """`unavailable` with a finding for each reason recognised above."""
    if not isinstance(unavailable, dict):
        return unavailable
    return {
        metric: (reason_finding(reason) or reason) if isinstance(reason, str) else reason
        for metric, reason in unavailable.items()
    }
