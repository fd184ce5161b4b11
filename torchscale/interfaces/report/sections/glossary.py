"""The report's last section: the technical terms its text uses, each explained once in plain words
(`words.GLOSSARY`), so the first screen can stay in plain words. HTML shows the same meanings as
tooltips where a renderer marks a term (`Column.term`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchscale.interfaces.report.model import Section, Table, Text
from torchscale.interfaces.report.parts.context import col
from torchscale.interfaces.report.parts.words import GLOSSARY

# the only characters a case-blind regex takes for an ASCII letter besides ASCII's own, and
# the letters they are taken for
LOOK_ALIKES, THEIR_LETTERS = "\u0130\u0131\u017f\u212a", "iisk"
_WORD = re.compile(r"[\w-]")


def _pattern(term: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.IGNORECASE)


def used_terms(texts: Iterable[str]) -> list[str]:
    """The glossary's terms that appear in `texts` (whole words, any case), in its order."""
    joined = "\n".join(texts)
    # where the regex `_pattern` finds a term, the lower-cased text (look-alikes made ASCII)
    # holds the term's lower case at the same place: finding that and testing the characters
    # either side gives the regex' answer at a fraction of its time (~20 ms a term over the
    # text of a 500-cell report). Should lower-casing change the text's length (no character
    # but one look-alike does), positions differ and the regex decides.
    folded = joined
    if any(c in joined for c in LOOK_ALIKES):
        folded = joined.translate(str.maketrans(LOOK_ALIKES, THEIR_LETTERS))
    lowered = folded.lower()
    if len(lowered) != len(joined):
        return [term for term in GLOSSARY if _pattern(term).search(joined)]
    return [term for term in GLOSSARY if _whole_word(term.lower(), lowered, joined)]


def _whole_word(term: str, lowered: str, text: str) -> bool:
    """Whether `term` (lower case) is in `lowered` where `text` has no word character or
    hyphen on either side."""
    at = lowered.find(term)
    while at >= 0:
        end = at + len(term)
        if not (at and _WORD.match(text, at - 1)) and not _WORD.match(text, end):
            return True
        at = lowered.find(term, at + 1)
    return False


def build(sections: list[Section], lead: Iterable[Text | None]) -> Section | None:
    """The glossary of the terms used in `sections` and the headline's lines (`lead`); None
    when none is used."""
    texts = [t.text for t in lead if t is not None]
    for section in sections:
        # every piece of prose and every table cell and heading
        texts += (block.model_dump_json() for block in section.blocks)
    terms = used_terms(texts)
    if not terms:
        return None
    rows = [{"term": term, "meaning": GLOSSARY[term]} for term in terms]
    table = Table(
        id="glossary",
        title="Terms used in this report",
        columns=[col("term", "Term"), col("meaning", "Meaning")],
        rows=rows,
    )
    return Section(id="glossary", title="Glossary", blocks=[table])
