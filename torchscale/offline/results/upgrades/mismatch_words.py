"""A profile analysis' `mismatches` of schema 9 and older, stored as lines, read back into
their findings (contracts/wording/trace_mismatches.py) where today's words for the finding are
the stored line; any other line stays as stored (`stored_mismatches`)."""

from __future__ import annotations

import re

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say

UNEQUAL = re.compile(
    r"group (.+?): ranks recorded different numbers of collectives \((.+)\); matched the (\d+) "
    r"(common seq numbers|common prefix)"
)
DISAGREE = re.compile(
    r"group (.+?): (\d+) collective\(s\) disagree on ([a-z/]+) across ranks, left out of the "
    r"figures: (.+)"
)
EXAMPLE = re.compile(r"#(\d+) \((.+?)\)(?:, |$)")
RANK = re.compile(r"rank (\d+): (\S+) (\?|\d+) ?(?:elems)? ?(\S+)?")


def _rank(text: str) -> list[object]:
    match = RANK.fullmatch(text)
    if match is None:
        raise ValueError(text)
    nelems = None if match[3] == "?" else int(match[3])
    return [int(match[1]), match[2], nelems, match[4]]


def _finding(line: str) -> Finding | None:
    if unequal := UNEQUAL.fullmatch(line):
        counts = [[int(r), int(n)] for r, n in re.findall(r"rank (\d+): (\d+)", unequal[2])]
        figures = {"group": unequal[1], "counts": counts, "matched": int(unequal[3])}
        by_seq = unequal[4] == "common seq numbers"
        return Finding(code="trace.unequal_counts", figures={**figures, "by_seq": by_seq})
    if disagree := DISAGREE.fullmatch(line):
        try:
            examples = [
                {"index": int(i), "ranks": [_rank(r) for r in what.split("; ")]}
                for i, what in EXAMPLE.findall(disagree[4])
            ]
        except ValueError:
            return None
        figures = {"group": disagree[1], "count": int(disagree[2])}
        figures |= {"kinds": disagree[3].split("/"), "examples": examples}
        return Finding(code="trace.disagreeing_collectives", figures=figures)
    return None


def coded_mismatches(lines: list[str]) -> tuple[list[Finding], list[str]]:
    """(the findings recognised exactly, the lines kept as stored)."""
    found, kept = [], []
    for line in lines:
        finding = _finding(line)
        if finding is not None and say(finding) == line:
            found.append(finding)
        else:
            kept.append(line)
    return found, kept
