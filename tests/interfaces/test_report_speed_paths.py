"""The report's fast paths give what the plain ones gave: the glossary's substring test before
its regex finds the same terms (look-alike letters included), pooling finds each definition's
runs once and keeps the rows' order; and the cyclic garbage collector is paused while a report
is built, then left as the caller had it."""

from __future__ import annotations

import gc
import random
import re
from pathlib import Path

import pandas as pd
import pytest

from torchscale.interfaces.api.report_generate import ReportRequest, generate
from torchscale.interfaces.report.parts.words import GLOSSARY
from torchscale.interfaces.report.progress import Step
from torchscale.interfaces.report.sections.glossary import LOOK_ALIKES, THEIR_LETTERS, used_terms
from torchscale.offline.analysis.regressions import RUN_COLUMN, pool_runs


def regex_only(texts: list[str]) -> list[str]:
    """The glossary's rule with no shortcut: a whole-word, case-blind regex per term."""
    joined = "\n".join(texts)
    return [
        term
        for term in GLOSSARY
        if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", joined, re.IGNORECASE)
    ]


@pytest.mark.parametrize(
    "texts",
    [
        ["Sync STALL 8 %, the straggler, p95 and MFU"],
        ["no term at all", "pre-noisy", "noisy-ish", "xCV"],
        ["the \u017ftraggler (long s)", "\u212aelvin", "MF\u0130", "CV\u0131"],
        ["\u00b1 95 % interval, not measurable \u2014 welch's t on the log ratio", "ddp, FSDP."],
        ["cv_x xcv -cv cv- then CV at last", "noisy"],  # a whole word after parts of words
        ["\u0130\u0130\u0130 mfu", "MF\u0130"],
        [],
    ],
)
def test_the_glossary_finds_what_its_regex_finds(texts: list[str]) -> None:
    assert used_terms(texts) == regex_only(texts)


def test_the_glossary_agrees_with_its_regex_on_random_text() -> None:
    rng = random.Random(7)
    pieces = [*GLOSSARY, *LOOK_ALIKES, " ", "-", "_", "x", "\u00e9", "\n", "S", "K", "i"]
    for _ in range(300):
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))]
        texts = [t.lower() if rng.random() < 0.3 else t for t in texts]
        assert used_terms(texts) == regex_only(texts), texts


def test_every_look_alike_is_one_the_regex_takes_for_its_letter() -> None:
    for char, letter in zip(LOOK_ALIKES, THEIR_LETTERS, strict=True):
        assert re.fullmatch(letter, char, re.IGNORECASE)
        assert not char.isascii()


def cells(rows: list[tuple[str, str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "cell_id": cell,
                "experiment": experiment,
                "definition_sha256": sha,
                "status": "ok",
                "samples_per_s": value,
            }
            for cell, experiment, sha, value in rows
        ]
    )


def test_runs_of_one_definition_pool_in_the_order_of_their_first_row() -> None:
    table = cells(
        [
            ("a", "run1", "sha-a", 10.0),
            ("b", "run1", "sha-b", 20.0),
            ("a", "run2", "sha-a", 14.0),
            ("c", "run1", None, 30.0),  # type: ignore[list-item]
            ("a", "run3", "sha-a", 12.0),
        ]
    )
    pooled = pool_runs(table)
    assert list(pooled["cell_id"]) == ["a", "b", "c"]
    assert list(pooled[RUN_COLUMN]) == [3, 1, 1]
    assert pooled.loc[0, "samples_per_s"] == pytest.approx(12.0)
    assert pooled.loc[0, "experiment"] == "run1, run2, run3"


def test_a_definition_twice_in_one_experiment_is_not_pooled() -> None:
    table = cells([("a", "run1", "sha-a", 10.0), ("a2", "run1", "sha-a", 14.0)])
    pooled = pool_runs(table)
    assert list(pooled["cell_id"]) == ["a", "a2"]
    assert list(pooled[RUN_COLUMN]) == [1, 1]
    assert list(pooled["samples_per_s"]) == [10.0, 14.0]


FIXTURE = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture"


@pytest.mark.parametrize("enabled_before", [True, False])
def test_the_collector_is_paused_for_the_build_and_left_as_it_was(
    tmp_path: Path, enabled_before: bool
) -> None:
    seen: list[tuple[str, int, bool]] = []

    def on_step(step: Step) -> None:
        seen.append((step.stage, step.done, gc.isenabled()))

    was = gc.isenabled()
    try:
        (gc.enable if enabled_before else gc.disable)()
        request = ReportRequest(source=FIXTURE, fmt="md", output=tmp_path, generated_at="fixed")
        generate(request, on_step=on_step)
        assert gc.isenabled() is enabled_before
    finally:
        (gc.enable if was else gc.disable)()
    assert seen[0] == ("build", 0, enabled_before)  # the read runs as the caller had it
    assert seen[-1] == ("build", 1, False)  # the build's end: paused
