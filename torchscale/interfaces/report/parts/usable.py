"""Whether a report's numbers can be used, as a value (parts/usability.py decides it): apart from
the deciding code so that the report context can hold the verdict without importing it."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchscale.interfaces.report.model import Severity, Usable

# a model's figure under the headline's 'no': its cards and its headline line show no number,
# only this (a bare '63.33 %' under "cannot be used" reads as a clean figure)
UNUSABLE = "these numbers cannot be used"
NOT_USED = "not usable"

SEVERITY: dict[Usable, Severity] = {
    "yes": "good",
    "with care": "warn",
    "no": "bad",
    "nothing to judge": "bad",
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
        by other processes in every cell: rerun on an idle node.'"""
        remedy = f": {self.remedy}" if self.remedy else ""
        opening = {
            "no": "These numbers cannot be used",
            "nothing to judge": "No figures to use",
            "with care": "These numbers can be used with care",
            "yes": "These numbers can be used",
        }[self.usable]
        return f"{opening}: {self.reason}{remedy}."
