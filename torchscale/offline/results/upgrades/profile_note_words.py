"""The notes of a profiled run (`profile.notes`, result schema 16-19) and of its analysis
(`notes`, analysis schema 9 or older) were stored as sentences; today's writers store a code
and its figures (contracts/wording/profile_notes.py, trace_notes.py). A sentence becomes its
finding only where today's words for that finding are the stored sentence exactly ('rank <r>: '
before it: that rank's), and only from whole figures (counts, ranks, names): a note whose figures
were rounded (a partial step's, the capture overhead) stays as stored, as does any other."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import profile_notes, trace_notes

Figures = dict[str, Any]


def _figure_less() -> dict[str, str]:
    """Today's words -> the code, for every note code that takes no figure."""
    said: dict[str, str] = {}
    for code in [*profile_notes.NOTES, *trace_notes.NOTES]:
        try:
            said[wording.say(Finding(code=code))] = code
        except KeyError:
            continue  # a note with figures: FIGURED below, or left as stored
    return said


_BY_WORDS = _figure_less()
_RANKED = re.compile(r"rank (\d+): (.+)")

# (code, the sentence as older versions wrote it, its figures from the match)
FIGURED: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], Figures]], ...] = (
    (
        "trace.duplicate_steps",
        re.compile(r"(\d+) duplicate step .+"),
        lambda m: {"count": int(m[1])},
    ),
    ("trace.dropped_events", re.compile(r"dropped (\d+) event.+"), lambda m: {"count": int(m[1])}),
    (
        "trace.rank_given",
        re.compile(r"no (\S+): rank (\d+) as given .+"),
        lambda m: {"field": m[1], "rank": int(m[2])},
    ),
    (
        "trace.rank_from_file_name",
        re.compile(r"no (\S+): rank (\d+) taken .+"),
        lambda m: {"field": m[1], "rank": int(m[2])},
    ),
    (
        "trace.captures_start_apart",
        re.compile(r"group (\S+): captures begin .+ from step (\d+) on"),
        lambda m: {"group": m[1], "step": int(m[2])},
    ),
    (
        "trace.group_one_rank",
        re.compile(r"group (\S+): only rank (\d+) is .+"),
        lambda m: {"group": m[1], "rank": int(m[2])},
    ),
    (
        "trace.clock_unaligned",
        re.compile(r"rank (\d+) shares no collective .+"),
        lambda m: {"rank": int(m[1])},
    ),
    (
        "profile.steps_left_out",
        re.compile(r"step model: (\d+) step.+"),
        lambda m: {"count": int(m[1])},
    ),
)


def _recognised(text: str) -> Finding | None:
    ranked = _RANKED.fullmatch(text)
    inner = ranked[2] if ranked else text
    found = Finding(code=_BY_WORDS[inner]) if inner in _BY_WORDS else None
    for code, sentence, figures_of in () if found else FIGURED:
        if (match := sentence.fullmatch(inner)) is not None:
            found = Finding(code=code, figures=figures_of(match))
            break
    if found is not None and ranked:
        found = profile_notes.on_rank(found, int(ranked[1]))
    return found if found is not None and wording.say(found) == text else None


def coded_notes(notes: Iterable[Any]) -> list[Any]:
    """Each stored sentence today's words say exactly as its finding; any other as stored."""
    return [(_recognised(n) or n) if isinstance(n, str) else n for n in notes]


def coded_profile_notes(profile: Any) -> Any:
    """A version 19 result's `profile` block with its notes coded where recognised."""
    if not isinstance(profile, dict) or not isinstance(profile.get("notes"), list):
        return profile
    return {**profile, "notes": [_dumped(n) for n in coded_notes(profile["notes"])]}


def _dumped(note: Any) -> Any:
    return note.model_dump() if isinstance(note, Finding) else note
