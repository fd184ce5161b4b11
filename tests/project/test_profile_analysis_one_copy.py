"""A profile analysis stores each figure once: the headline figures that its diagnosis holds
(sync stall, exposed communication, straggler, what-if, the cycle) are never fields beside it
again; `offline/results/profile_figures.py` computes them from the diagnosis for every surface."""

from __future__ import annotations

import pytest

from torchscale.contracts.schema.profile_analysis import ProfileAnalysis, RankFigures

# figures the diagnosis holds, by the names their copies had (analyses before schema 8 stored
# the first four beside it; the one before it kept its own, apart)
MIRRORED = (
    "sync_stall_pct",
    "exposed_comm_pct",
    "straggler",
    "whatif",
    "cycle_us",
    "attribution",
    "before_diagnosis",
)


def test_no_mirrored_field_reappears_in_the_profile_analysis() -> None:
    assert sorted(set(ProfileAnalysis.model_fields) & set(MIRRORED)) == []


def test_the_per_rank_figures_hold_no_copy_of_the_diagnosis() -> None:
    # a rank's parts are its own step model (the diagnosis keeps only the mean over ranks)
    assert sorted(set(RankFigures.model_fields) & {"straggler", "whatif", "diagnosis"}) == []


@pytest.mark.slow  # over 2 s on 2 cores: parses every module of the package
def test_a_ranks_phase_record_has_one_reader() -> None:
    """`rank<k>.phases.json` is read by one function (`profile_windows.read_phase_record`),
    for the traced step times and the waits for a CPU alike: no other module names the file
    (by `phases_name` or by its spelling) outside its definition and its writer."""
    import ast

    from tests.conftest import REPO_ROOT

    package = REPO_ROOT / "torchscale"
    allowed = {
        "contracts/worker_spec.py",  # the name, once
        "rank/worker/capture.py",  # the writer
        "offline/results/profile_windows.py",  # the reader
    }
    naming = set()
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            called = node.func if isinstance(node, ast.Call) else None
            by_name = getattr(called, "id", getattr(called, "attr", None)) == "phases_name"
            # a file name built in place (f"rank{rank}.phases.json"), not words about it
            spelled = isinstance(node, ast.JoinedStr) and any(
                isinstance(part, ast.Constant) and str(part.value).startswith(".phases.json")
                for part in node.values
            )
            if by_name or spelled:
                naming.add(str(path.relative_to(package)))
    assert naming - allowed == set()
    reader = (package / "offline/results/profile_windows.py").read_text(encoding="utf-8")
    assert reader.count("phases_name(") == 1


def _copies(document: object) -> dict[str, list[str]]:
    """Each object or list stored at two places under different names (list members of one
    list count as one place), by value: {its JSON: the paths}. Intervals (`Estimate`s: every
    zero share reads alike), their reasons with them, are left out; they are figures, not
    facts a second field mirrors; so is a converted file's "not recorded", a marker."""
    import json
    from collections import defaultdict

    seen: dict[str, set[str]] = defaultdict(set)

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict) and node.get("code") == "unavailable.not_recorded":
            return
        if isinstance(node, dict):
            if node and path and "measurable" not in node:
                seen[json.dumps(node, sort_keys=True)].add(path)
            for key, value in node.items():
                if "measurable" not in node or key != "reason":  # an interval's, with it
                    walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            if node and path:
                seen[json.dumps(node, sort_keys=True)].add(path)
            for value in node:
                walk(value, f"{path}[*]")

    walk(document, "")
    return {value: sorted(paths) for value, paths in seen.items() if len(paths) > 1}


def _kept_analyses() -> list[tuple[str, ProfileAnalysis]]:
    from tests.conftest import REPO_ROOT
    from torchscale.offline.results.documents import read_profile_analysis

    found = []
    for path in sorted((REPO_ROOT / "tests" / "fixtures").rglob("analysis.json")):
        read = read_profile_analysis(path)
        assert read.doc is not None, (path, read.problem)
        found.append((str(path), read.doc))
    return found


def test_a_kept_analysis_stores_each_finding_once() -> None:
    """By value, over every kept analysis as today's schema stores it: no finding (nor any
    other object) is held under two names; the target's findings are the diagnosis', split
    when read."""
    kept = _kept_analyses()
    if not kept:
        pytest.skip("no kept profile analysis under tests/fixtures")
    with_findings = 0
    for path, analysis in kept:
        assert _copies(analysis.model_dump(mode="json")) == {}, path
        with_findings += bool(analysis.findings or analysis.other_findings)
    assert with_findings  # the check saw findings to compare
