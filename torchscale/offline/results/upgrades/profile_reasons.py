"""An analysis of schema 9 or older stored why a figure is null as a sentence: read as stored
words (`profile.stored`, `ProfileAnalysis._upgrade`), turned back here into the code whose
words it is (contracts/wording/profile_notes.py), so today's words say it again."""

from __future__ import annotations

from collections.abc import Mapping

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.profile_notes import SAID

_BY_WORDS = {words: code for code, words in SAID.items()}


def coded_reasons(unavailable: Mapping[str, Finding]) -> dict[str, Finding]:
    """Each stored sentence a code says as that code; any other as it was stored."""
    return {key: _coded(reason) for key, reason in unavailable.items()}


def _coded(reason: Finding) -> Finding:
    words = reason.figures.get("words") if reason.code == "profile.stored" else None
    code = _BY_WORDS.get(words) if isinstance(words, str) else None
    return Finding(code=code) if code else reason
