"""The report's last section: the technical terms its text uses, each explained once in plain
words (`words.GLOSSARY`), so the first screen can stay in plain words. HTML shows the same
meanings as tooltips where a renderer marks a term (`Column.term`).

Layer 4 (presentation) of docs/architecture.md: the report's sections.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchscale.interfaces.report.model import Block, Section, Table, Text
from torchscale.interfaces.report.sections.context import col
from torchscale.interfaces.report.sections.words import GLOSSARY


def texts_of(blocks: Iterable[Block]) -> Iterable[str]:
    """Every piece of prose and every table cell and heading of these blocks."""
    for block in blocks:
        yield block.model_dump_json()


# the only characters a case-blind regex takes for an ASCII letter besides ASCII's own, and
# the letters they are taken for
LOOK_ALIKES, THEIR_LETTERS = "\u0130\u0131\u017f\u212a", "iisk"


def used_terms(texts: Iterable[str]) -> list[str]:
    """The glossary's terms that appear in `texts` (whole words, any case), in its order."""
    joined = "\n".join(texts)
    # a term the regex finds is in the lower-cased text (look-alikes made ASCII): testing
    # that first skips the regex of the terms that cannot match (~6 ms a term over the text
    # of a 500-cell report)
    folded = joined
    if any(c in joined for c in LOOK_ALIKES):
        folded = joined.translate(str.maketrans(LOOK_ALIKES, THEIR_LETTERS))
    lowered = folded.lower()
    return [
        term
        for term in GLOSSARY
        if term.lower() in lowered
        and re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", joined, re.IGNORECASE)
    ]


def build(sections: list[Section], lead: Iterable[Text | None]) -> Section | None:
    """The glossary of the terms used in `sections` and the headline's lines (`lead`); None
    when none is used."""
    texts = [t.text for t in lead if t is not None]
    for section in sections:
        texts += texts_of(section.blocks)
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
