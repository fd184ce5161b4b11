"""A diagnosis' words are written once (report/diagnosis_text.py `headline`): the terminal's lines
and the report's blocks are its sentences, in its order, at its levels, each surface adding
only its own tags (the terminal's [ANALYSIS]/[CAVEAT]/[NOTE], a report's 'Caveat:' and its
pointer to the appendix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import CrossCheck, Diagnosis
from torchscale.contracts.wording import say
from torchscale.interfaces.console.diagnosis import diagnosis_lines
from torchscale.interfaces.report.diagnosis_text import (
    REPORT_HINT,
    acted,
    headline,
)
from torchscale.interfaces.report.parts.diagnosis import diagnosis_blocks
from torchscale.offline.analysis.diagnosis.inflation import TERMINAL_HINT
from torchscale.offline.results.documents import read_cell

CELLS = Path(__file__).parents[1] / "fixtures" / "cpu_default_sweep" / "default_scaling" / "cells"
NAMED = "tiny-gpt2__b16__w2__fp32__ddp__3ce244dc.json"  # a named straggler and its what-if
UNNAMED = "tiny-mlp__b16__w2__fp32__ddp__ef11e49c.json"  # nobody named
CAVEAT = "busy machine (others used 1.5 cores on node-a): check the host first"
DISAGREE = f"cross-checks disagree: arrival order (last arriver) {TERMINAL_HINT}"


def _diagnosis(name: str, *, caveat: str | None, disagreement: str | None) -> Diagnosis:
    """The stored diagnosis with `caveat`, its cross-checks agreeing, and with `disagreement`
    an arrival-order check that disagrees (the line is read from the checks)."""
    read = read_cell(CELLS / name)
    result = read.doc
    assert result is not None and result.diagnosis is not None, read.problem
    arrival = CrossCheck(
        check="arrival_order",
        estimate=None,
        agrees=False,
        detail=Finding(code="cross_check.arrival_undecided"),
    )
    checks = [c for c in result.diagnosis.cross_checks if c.agrees is not False]
    checks += [arrival] if disagreement else []
    busy = Finding(code="caveat.busy_machine", figures={"cores": 1.5, "host": "node-a"})
    assert caveat in (None, say(busy))
    update = {"busy": busy if caveat else None, "cross_checks": checks}
    return result.diagnosis.model_copy(update=update)


CASES = [
    (NAMED, CAVEAT, DISAGREE),
    (NAMED, None, None),
    (UNNAMED, CAVEAT, None),
    (UNNAMED, None, DISAGREE),
]


@pytest.mark.parametrize(("name", "caveat", "disagreement"), CASES)
def test_the_terminal_prints_the_headline_with_its_tags(
    name: str, caveat: str | None, disagreement: str | None
) -> None:
    diagnosis = _diagnosis(name, caveat=caveat, disagreement=disagreement)
    sentences = headline(diagnosis)
    tags = {"caveat": "[CAVEAT]", "disagreement": "[NOTE]"}
    expected = [(s.level, f"> {tags.get(s.kind, '[ANALYSIS]')} {s.text}") for s in sentences]
    lines = diagnosis_lines(diagnosis, None, verbose=False)
    assert [(line.level, line.text) for line in lines] == expected
    # -v replaces the one disagreement line by every cross-check
    verbose = [line.text for line in diagnosis_lines(diagnosis, None, verbose=True)]
    shown = [t for _, t in expected if not t.startswith("> [NOTE]")]
    assert verbose[: len(shown)] == shown
    assert not any(t.startswith("> [NOTE]") for t in verbose)


@pytest.mark.parametrize(("name", "caveat", "disagreement"), CASES)
def test_a_report_shows_the_same_sentences(
    name: str, caveat: str | None, disagreement: str | None
) -> None:
    diagnosis = _diagnosis(name, caveat=caveat, disagreement=disagreement)
    sentences = headline(diagnosis)
    blocks = diagnosis_blocks(diagnosis)
    assert len(blocks) == len(sentences)
    for sentence, block in zip(sentences, blocks, strict=True):
        text = block.text
        if sentence.kind == "caveat":
            assert text == f"Caveat: {caveat}"
        elif sentence.kind == "disagreement":
            assert text == DISAGREE.replace(TERMINAL_HINT, REPORT_HINT)
        else:
            assert text == sentence.text
        assert block.severity == ("warn" if sentence.level == "warn" else "info")


def test_the_headline_says_each_thing_once_in_order() -> None:
    named = headline(_diagnosis(NAMED, caveat=CAVEAT, disagreement=DISAGREE))
    kinds = [s.kind for s in named]
    # a named straggler is the answer: it, its caveat and its what-if before the figures
    assert kinds == ["straggler", "caveat", "whatif", "stall", "split", "disagreement"]
    straggler = next(s for s in named if s.kind == "straggler")
    assert straggler.level == "warn" and straggler.text.startswith("Straggler: rank ")
    unnamed = _diagnosis(UNNAMED, caveat=None, disagreement=None)
    assert not acted(unnamed.straggler)
    quiet = headline(unnamed)
    assert [s.kind for s in quiet][:3] == ["stall", "split", "straggler"]
    assert all(s.level == "info" for s in quiet)
