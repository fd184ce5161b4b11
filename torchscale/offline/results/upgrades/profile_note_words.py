"""The notes of a profiled run (`profile.notes`, result schema 16-19) and of its analysis
(`notes`, analysis schema 9 or older) were stored as sentences; today's writers store a code
and its figures (contracts/wording/profile_notes.py, trace_notes.py). A sentence becomes its
finding only where today's words for that finding are the stored sentence exactly ('rank <r>: '
before it: that rank's), and only for the notes whose words hold their figures whole
(`SAID`, `NOTE_SAID`): a note whose figures were rounded (a partial step's, the capture
overhead) stays as stored, as does any other."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import profile_notes, trace_notes

_RANKED = re.compile(r"rank (\d+): (.+)")
_FIGURE = re.compile(r"\\\{(\w+)\\\}")  # a figure's name in the escaped words
# figures that are counts, ranks and steps (the others are names: a group, a file, an error)
WHOLE = frozenset({"count", "rank", "expected", "tid", "step", "via", "ref"})


def _pattern(words: str) -> re.Pattern[str]:
    return re.compile(_FIGURE.sub(r"(?P<\1>.+?)", re.escape(words)))


_SENTENCES = {
    code: _pattern(words) for code, words in {**trace_notes.SAID, **profile_notes.NOTE_SAID}.items()
}


def _figures(match: re.Match[str]) -> dict[str, Any]:
    return {k: int(v) if k in WHOLE and v.isdigit() else v for k, v in match.groupdict().items()}


def _recognised(text: str) -> Finding | None:
    ranked = _RANKED.fullmatch(text)
    for inner, rank in ((ranked[2], int(ranked[1])), (text, None)) if ranked else ((text, None),):
        for code, sentence in _SENTENCES.items():
            if (match := sentence.fullmatch(inner)) is not None:
                found = Finding(code=code, figures=_figures(match))
                found = found if rank is None else profile_notes.on_rank(found, rank)
                if wording.say(found) == text:
                    return found
    return None


def coded_notes(notes: Iterable[Any]) -> list[Any]:
    """Each stored sentence today's words say exactly as its finding; any other as stored."""
    return [(_recognised(n) or n) if isinstance(n, str) else n for n in notes]


def coded_profile_notes(profile: Any) -> Any:
    """A version 19 result's `profile` block with its notes coded where recognised."""
    if not isinstance(profile, dict) or not isinstance(profile.get("notes"), list):
        return profile
    notes = coded_notes(profile["notes"])
    return {**profile, "notes": [n.model_dump() if isinstance(n, Finding) else n for n in notes]}
