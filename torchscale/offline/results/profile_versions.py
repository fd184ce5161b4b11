"""Reading a profiled run's trace analysis (`profile/<run>/analysis.json`) of every schema
version, beside the run's result.json.

`ProfileAnalysis` itself reads each older file's shape (its `_upgrade`); what an old analysis
cannot say alone comes from the profiled run's result, read here so that no reader has to know
the versions: an analysis without a diagnosis takes its run's, and a named straggler the
analysis did not judge as injected or not is judged off the run's recorded delays. The schema
versions and what each upgrade does are in docs/results.md ("Profile analysis versions").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult, Diagnosis
from torchscale.contracts.schema.profile_analysis import (
    ANALYSIS_SCHEMA_VERSION,
    BEFORE_SCHEMA_8,
    ProfileAnalysis,
)
from torchscale.contracts.versioned import read_json, validated, version_problem
from torchscale.contracts.wording.figures import as_written_before_schema_20
from torchscale.offline.analysis.diagnosis import marked_injected
from torchscale.offline.results.profile_windows import judged_against_windows
from torchscale.offline.results.upgrades.cross_check_words import coded_cross_checks
from torchscale.offline.results.upgrades.estimate_words import coded_estimates
from torchscale.offline.results.upgrades.mismatch_words import coded_mismatches
from torchscale.offline.results.upgrades.point_figures import is_point_figures
from torchscale.offline.results.upgrades.profile_note_words import coded_notes
from torchscale.offline.results.upgrades.profile_reasons import coded_reasons
from torchscale.offline.results.upgrades.stored_problems import coded_diagnosis as coded_problems
from torchscale.offline.results.upgrades.verdict_words import coded_diagnosis
from torchscale.offline.results.upgrades.verdicts import with_not_named

ANALYSIS_KIND = "torchscale.profile_analysis"


def with_run(analysis: ProfileAnalysis, result: CellResult | None) -> ProfileAnalysis:
    """The analysis as the current schema reads it, completed from its run's result: the run's
    diagnosis where the analysis has none (an analysis older than the diagnosis), and a named
    straggler marked injected or not (analyses before the verdict said so) from the run's
    `injected_delays`, and what a schema-1 exposed communication holds (`WAITS_INCLUDED`). A
    run diagnosis read from point figures is not taken: the analysis' own trace figures are
    better evidence than the no_sync window's point shares."""
    found, lines = coded_mismatches(analysis.stored_mismatches)
    update: dict[str, Any] = {"mismatches": [*analysis.mismatches, *found]}
    update["stored_mismatches"] = lines
    update |= {"diagnosis": with_not_named(_coded(analysis)), "notes": _notes(analysis)}
    update["unavailable"] = coded_reasons(analysis.unavailable)
    analysis = analysis.model_copy(update=update)
    diagnosis = analysis.diagnosis
    if result is None:
        return analysis
    if diagnosis is None:
        if result.diagnosis is None or is_point_figures(result.diagnosis):
            return analysis
        # the run's diagnosis answers what the analysis' own figures did
        kept = {k: v for k, v in analysis.unavailable.items() if k not in BEFORE_SCHEMA_8}
        return analysis.model_copy(
            update={"diagnosis": result.diagnosis, "before_diagnosis": None, "unavailable": kept}
        )
    verdict = diagnosis.straggler
    if verdict is None or verdict.injected is not None:
        return analysis
    delayed = frozenset(d.rank for d in result.injected_delays)
    marked = diagnosis.model_copy(update={"straggler": marked_injected(verdict, delayed)})
    return analysis.model_copy(update={"diagnosis": marked})


def _coded(analysis: ProfileAnalysis) -> Diagnosis | None:
    """An analysis of schema 9 or older: its verdict's and caveat's words as findings where
    recognised (upgrades/verdict_words.py)."""
    diagnosis = analysis.diagnosis
    if diagnosis is None or analysis.schema_version > 9:
        return diagnosis
    return Diagnosis.model_validate(coded_diagnosis(diagnosis.model_dump()))


# what a schema-1 analysis' exposed communication holds: it had no step model to split the
# waits for peers out of it (one of the analysis' notes, shown with its figures)
WAITS_INCLUDED = Finding(code="profile.waits_included")


def _notes(analysis: ProfileAnalysis) -> list[Finding | str]:
    """The analysis' notes (an older one's sentences coded where recognised), with what a
    schema-1 exposed communication holds."""
    notes = coded_notes(analysis.notes)
    before = analysis.before_diagnosis
    if analysis.schema_version == 1 and before is not None and before.exposed_comm_pct is not None:
        notes += [] if WAITS_INCLUDED in notes else [WAITS_INCLUDED]
    return notes


def compile_mode(result: CellResult) -> str:
    """'compiled' or 'eager': whether the run trained under torch.compile (training.compile),
    read off its compile record, which a compiled cell always writes (schema 11 on)."""
    return "compiled" if result.compile is not None else "eager"


def no_diagnosis(analysis: ProfileAnalysis) -> str:
    """Why a run has no diagnosis to show, in words beside the figures its analysis stored:
    neither the analysis nor its run's result holds one (the analysis predates it)."""
    return f"analysed before the diagnosis existed: schema {analysis.schema_version}"


@as_written_before_schema_20()  # older sentences are recognised by the words that wrote them
def read_analysis(
    path: Path, result: CellResult | None = None
) -> tuple[ProfileAnalysis | None, str | None]:
    """(analysis, None) or (None, why it cannot be used); never raises for a bad file. With
    the profiled run's `result`, what an older analysis lacks is taken from it (`with_run`)."""
    data, problem = read_json(path)
    if problem is None:
        problem = version_problem(data, ANALYSIS_KIND, "analysis", ANALYSIS_SCHEMA_VERSION)
    if problem is not None:
        return None, problem
    if isinstance(data, dict) and data.get("schema_version", 10) < 10:  # the same diagnosis
        data = {**data, "diagnosis": coded_cross_checks(coded_problems(data.get("diagnosis")))}
        data = coded_estimates(data)
    analysis, problem = validated(ProfileAnalysis, data, "profile analysis")
    if analysis is None:
        return None, problem
    return with_run(judged_against_windows(analysis, path.parent, result), result), None
