"""A verdict stored as what it is: a code from the catalogue (docs/results.md, 'Finding codes')
and the figures it rests on. Its words are made when it is shown, by contracts/wording, so a
wording rule changes in one place and an old result reads by today's words.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from torchscale.contracts.versioned import Record


class Finding(Record):
    """One finding: a stable code (dotted, e.g. 'clocks.at_power_limit') and its figures
    (numbers, names and lists of them, never a sentence)."""

    code: str = Field(description="stable code from the catalogue, e.g. 'clocks.site_cap'")
    figures: dict[str, Any] = Field(
        default_factory=dict, description="the figures the finding rests on, by name"
    )

    def figure(self, name: str, default: Any = None) -> Any:
        return self.figures.get(name, default)

    def key_without(self, *names: str) -> str:
        """Equal for findings that say the same thing but for the figures `names`."""
        return self.code + repr(sorted((k, v) for k, v in self.figures.items() if k not in names))
