"""Words for why a profile analysis' figure is null (`ProfileAnalysis.unavailable`, schema 10:
figure -> a code and its figures). The words of each figure-less code are those analyses before
schema 10 stored, so the reader turns such a sentence back into its code
(offline/results/upgrades/profile_reasons.py); any other stays as stored (`profile.stored`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding

SAID: dict[str, str] = {
    "profile.no_step_model": "no step model",
    "profile.no_complete_step": "no complete step on any rank",
    "profile.no_step_on_every_rank": "no step complete on every rank",
    "profile.no_communication": "no communication in the traced steps",
    "profile.no_memory_events": "no allocator figures in these traces: torchscale's profiled "
    "steps do not record memory events (torch.profiler profile_memory) and the trace reader "
    "does not read them; the peaks of the measured windows are in the run's result.json "
    "(memory)",
    "profile.v1_attribution": "analysis of schema 1: no step model (attribution); its stall, "
    "exposed communication, straggler and what-if figures come from separate methods and may "
    "disagree with each other",
}


def _said(code: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda figures: SAID[code]


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {code: _said(code) for code in SAID} | {
    "profile.stored": lambda f: str(f["words"]),
}


def coded(code: str) -> Finding:
    """The finding of a figure-less reason: `coded('profile.no_step_model')`."""
    assert code in SAID, code
    return Finding(code=code)
