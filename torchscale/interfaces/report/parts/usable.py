"""Whether a report's numbers can be used, as a value (parts/usability.py decides it): apart from
the deciding code so that the report context can hold the verdict without importing it. Its
sentence is worded by the catalogue's `usable.*` (contracts/wording/report.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchscale.contracts.wording.report import words
from torchscale.interfaces.report.model import Severity, Usable

SEVERITY: dict[Usable, Severity] = {
    "yes": "good",
    "with care": "warn",
    "no": "bad",
    "nothing to judge": "bad",
}
# the catalogue's code of each verdict's opening words
OPENING: dict[Usable, str] = {
    "yes": "usable.yes",
    "with care": "usable.with_care",
    "no": "usable.no",
    "nothing to judge": "usable.nothing_to_judge",
}


@dataclass(frozen=True)
class Usability:
    """Whether the report's numbers can be used, why, and what to do first."""

    usable: Usable
    reason: str
    remedy: str | None = None
    host_first: bool = False  # the machine spoiled the numbers: workload tuning comes second
    busy: frozenset[tuple[str, str]] = field(default_factory=frozenset)  # (experiment, cell id)
    actions: tuple[str, ...] = ()  # what to do, most urgent first

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.usable]

    def sentence(self) -> str:
        """The headline's sentence: 'These numbers cannot be used: 1.4-1.8 of 2 cores taken
        by other processes in every cell: rerun on an idle node.' (`usable.*`)"""
        opening = words(OPENING[self.usable])
        sentence = "usable.sentence_remedy" if self.remedy else "usable.sentence"
        return words(sentence, opening=opening, reason=self.reason, remedy=self.remedy)
