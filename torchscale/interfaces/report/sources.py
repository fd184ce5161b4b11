"""What `torchscale report --source DIR` reads: one experiment directory (`cells/` or only its
`sweep.json`, `profile/<run>/`, `comm/<run>.json`, or any of them together), or a directory of
them. All is read here, once, so that building the report is pure; a file that cannot be used
is left out with a one-line reason in `Sources.skipped`, never a traceback; only a path that
holds nothing usable at all raises `ResultsError` (docs/reporting.md, "How a report is made")."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from torchscale.contracts.errors import ResultsError, describe_os_error
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.schema.max_batch import MaxBatchResult
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.schema.sweep_state import PlannedCell
from torchscale.contracts.schema.validate_report import ValidateReport
from torchscale.contracts.wording import say
from torchscale.interfaces.report.model import Skipped
from torchscale.interfaces.report.replan import config_plan
from torchscale.offline.results.directory_layout import ProfileRun, ResultLayout
from torchscale.offline.results.documents import (
    Read,
    read_cell,
    read_comm,
    read_folder,
    read_max_batch,
    read_profile_analysis,
    read_validate_report,
)
from torchscale.offline.results.experiment import Experiment, holds_sweep, load
from torchscale.offline.results.forecast_store import (
    StoredForecasts,
    read_forecasts,
    utc_now,
    with_pending,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
NOT_AN_EXPERIMENT = (
    "not a torchscale experiment (no cells/, no profile/<run>/analysis.json, no comm/<run>.json)"
)


@dataclass(frozen=True)
class ProfileEntry:
    """One analysed `torchscale profile` run: `name` is its folder (the cell id)."""

    name: str
    path: Path
    analysis: ProfileAnalysis
    result: CellResult | None


@dataclass(frozen=True)
class UnanalysedProfile:
    """A profiled run without an analysis (the run failed, or its traces were not analysed):
    reported with the failures, with why."""

    name: str
    path: Path
    result: CellResult | None
    reason: str


@dataclass
class ExperimentSource:
    """One experiment directory: its sweep (None for a profile-only directory) and profiles."""

    name: str
    path: Path
    experiment: Experiment | None
    profiles: list[ProfileEntry] = field(default_factory=list)
    unanalysed: list[UnanalysedProfile] = field(default_factory=list)
    comm: list[CommResult] = field(default_factory=list)
    max_batch: list[MaxBatchResult] = field(default_factory=list)
    acceptance: list[ValidateReport] = field(default_factory=list)  # validate perf/burn
    forecasts: StoredForecasts = field(default_factory=StoredForecasts)  # predict, its scores
    plan: list[PlannedCell] | None = None  # no sweep.json: its config's cells (replan.py)


@dataclass
class Sources:
    """Everything read under one --source (or --baseline) path, and what was left out."""

    path: Path
    experiments: list[ExperimentSource]
    skipped: list[Skipped] = field(default_factory=list)


def _skip(skipped: list[Skipped], path: Path, reason: str) -> None:
    log.info("report: skipping %s: %s", path, reason)
    skipped.append(Skipped(path=str(path), reason=" ".join(reason.split())))


def _read_each(folder: Path, read: Callable[[Path], Read[T]], skipped: list[Skipped]) -> list[T]:
    """Every document of `folder` that `read` can use; the others are skipped with why."""
    docs, bad = read_folder(folder, read)
    for path, reason in bad:
        _skip(skipped, path, reason)
    return docs


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _children(path: Path) -> list[Path]:
    """The entries of a directory, hidden ones left out, sorted by name."""
    try:
        return sorted(p for p in path.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {describe_os_error(exc)}") from None


def _is_profile_run(path: Path) -> bool:
    run = ProfileRun(path)
    return _is_dir(path) and (run.analysis_path.is_file() or run.result_path.is_file())


def _json_files(folder: Path) -> list[Path]:
    """The visible *.json files of `folder`, sorted; none when it cannot be listed."""
    try:
        return sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))
    except OSError:
        return []


def is_experiment_dir(path: Path) -> bool:
    """A sweep (`holds_sweep`), a directory of profiled runs (`profile/<run>/`), of comm runs
    or of validate reports."""
    layout = ResultLayout(path)
    if holds_sweep(path) or _json_files(layout.comm_dir) or _json_files(layout.acceptance_dir):
        return True
    profile = layout.profiles_dir
    try:
        return _is_dir(profile) and any(_is_profile_run(p) for p in profile.iterdir())
    except OSError:
        return False


def _read_profiles(
    directory: Path, skipped: list[Skipped]
) -> tuple[list[ProfileEntry], list[UnanalysedProfile]]:
    return _read_profile_runs(_children(directory) if _is_dir(directory) else [], skipped)


def _read_profile_runs(
    runs: list[Path], skipped: list[Skipped]
) -> tuple[list[ProfileEntry], list[UnanalysedProfile]]:
    entries, unanalysed = [], []
    for run in runs:
        if not _is_profile_run(run):
            _skip(skipped, run, "not a profiled run (no analysis.json or result.json)")
            continue
        paths = ProfileRun(run)
        result = None
        if paths.result_path.is_file():
            read = read_cell(paths.result_path)
            if read.problem is not None:
                _skip(skipped, paths.result_path, read.problem)
            result = read.doc
        if paths.analysis_path.is_file():
            analysis = read_profile_analysis(paths.analysis_path)
            if analysis.doc is None:
                _skip(skipped, paths.analysis_path, analysis.problem or "unreadable")
                continue
            entries.append(ProfileEntry(run.name, run, analysis.doc, result))
        elif result is not None:
            reason = (
                f"the profiled run ended {result.status.value}: {say(result.error.finding)}"
                if result.error is not None
                else "no analysis.json: its traces were not analysed "
                f"(`torchscale profile analyze {run}` analyses them)"
            )
            unanalysed.append(UnanalysedProfile(run.name, run, result, reason))
    return entries, unanalysed


def _read_experiment(root: Path, skipped: list[Skipped]) -> ExperimentSource | None:
    """One experiment directory, or None when nothing in it can be used (reasons skipped)."""
    layout = ResultLayout(root)
    experiment, plan = None, None
    if holds_sweep(root):
        problems: list[str] = []  # a corrupt config.yaml or env.json: the cells still count
        experiment = load(root, problems)
        for problem in problems:
            _skip(skipped, root, problem)
        # the lazy tables read steps/ now: a torn step file is found here, not mid-report
        _ = experiment.cells, experiment.ranks, experiment.steps
        for path, reason in experiment.skipped:
            _skip(skipped, path, reason)
        plan = config_plan(experiment)  # no sweep.json: the cells its config plans
        # a plan and no result yet (a Kubernetes run before its first pod ends, a sweep stopped
        # in its first cell) is reported: each planned cell with its state
        planned = experiment.sweep.planned if experiment.sweep else plan
        if not experiment.results and not planned:
            experiment = None
    profiles, unanalysed = _read_profiles(layout.profiles_dir, skipped)
    comm = _read_each(layout.comm_dir, read_comm, skipped)
    acceptance = _read_each(layout.acceptance_dir, read_validate_report, skipped)
    if experiment is None and not profiles and not unanalysed and not comm and not acceptance:
        _skip(skipped, root, "no readable cell result, profile, comm run or validate report")
        return None
    name = experiment.name if experiment is not None else root.name
    max_batch = (
        _read_each(layout.max_batch_dir, read_max_batch, skipped) if experiment is not None else []
    )
    forecasts = read_forecasts(root) if experiment is not None else StoredForecasts()
    for path, reason in forecasts.skipped:
        _skip(skipped, path, reason)
    if experiment is not None and forecasts.forecasts:
        forecasts = with_pending(forecasts, experiment.results, utc_now())
    return ExperimentSource(
        name, root, experiment, profiles, unanalysed, comm, max_batch, acceptance, forecasts, plan
    )


def _unique_names(experiments: list[ExperimentSource]) -> None:
    """Two experiments of the same name (copied results) get their folder in the name."""
    seen: set[str] = set()
    for source in experiments:
        name = source.name
        if name in seen:
            name = f"{source.name} ({source.path.name})"
        number = 2
        while name in seen:
            name = f"{source.name} ({source.path.name} {number})"
            number += 1
        source.name = name
        seen.add(name)


def read_sources(path: Path) -> Sources:
    """Read every experiment under `path` (one experiment directory, or a directory whose
    sub-directories are experiments). Raises ResultsError, one line, when `path` is missing,
    not a directory, empty, or holds nothing usable."""
    root = Path(path)
    if not root.exists():
        raise ResultsError(f"{root} does not exist")
    if not _is_dir(root):
        raise ResultsError(f"{root} is not a directory: pass a results directory")
    entries = _children(root)
    if not entries:
        raise ResultsError(f"{root} is empty: no results to report on")
    skipped: list[Skipped] = []
    experiments: list[ExperimentSource] = []
    if is_experiment_dir(root):
        found = _read_experiment(root, skipped)
        experiments = [found] if found else []
    else:
        for entry in entries:
            if _is_dir(entry) and is_experiment_dir(entry):
                if found := _read_experiment(entry, skipped):
                    experiments.append(found)
            elif _is_dir(entry):
                _skip(skipped, entry, NOT_AN_EXPERIMENT)
            # a plain file beside experiments (a config, an earlier report) is no result
    if not experiments and (kept := _profiles_kept_apart(root, entries, skipped)):
        experiments = [kept]
    if not experiments:
        raise ResultsError(_nothing_usable(root, entries, skipped))
    _unique_names(experiments)
    return Sources(root, experiments, skipped)


def _profiles_kept_apart(
    root: Path, entries: list[Path], skipped: list[Skipped]
) -> ExperimentSource | None:
    """One profiled run, or a folder of them (an experiment's profile/, copied or kept on its
    own): reported as an experiment of its profiles alone, named after the folder."""
    runs = [root] if _is_profile_run(root) else [e for e in entries if _is_profile_run(e)]
    if not runs:
        return None
    read: list[Skipped] = []
    profiles, unanalysed = _read_profile_runs(runs, read)
    named = {str(run) for run in runs}  # no longer "not an experiment": read as profiled runs
    skipped[:] = [s for s in skipped if s.path not in named] + read
    if not profiles and not unanalysed:
        return None
    return ExperimentSource(
        root.name, root, None, profiles, unanalysed, [], [], [], StoredForecasts(), None
    )


def _nothing_usable(root: Path, entries: list[Path], skipped: list[Skipped]) -> str:
    problems = [s for s in skipped if s.reason != NOT_AN_EXPERIMENT]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return (
            f"{root} holds no usable torchscale results: {problems[0].path}: "
            f"{problems[0].reason}{more}"
        )
    return (
        f"{root} holds no torchscale results: no experiment directory (cells/ or "
        "profile/<run>/analysis.json) in it or one level below"
    )
