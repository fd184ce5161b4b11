"""How far one experiment's sweep got: every planned cell with its state, the sentence a
report's headline carries when the sweep did not run them all (stopped or killed), the cells it
did not measure and the command that finishes it (said under the headline and in its actions).

From `sweep.json` where the sweep wrote one; an older folder has only its cells and the specs of
the cells it started, so its plan is the one its config.yaml expands to today (`plan`, made by
the caller: planning is the host's), matched by label; without it a started cell with no
result is all it can tell."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.sweep_state import PlannedCell
from torchscale.contracts.signals import signal_name
from torchscale.contracts.wording import say
from torchscale.contracts.wording.sweep import (
    SWEEP_JSON_REPLANNED,
    SWEEP_JSON_UNKNOWN,
    not_measured_text,
    resume_text,
)
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.experiment import Experiment

Phase = Literal["complete", "stopped", "running", "unknown"]
UNREACHED = "not reached"  # planned, never started: the sweep stopped first
PENDING = "no result yet"  # planned, not started when the state was last written (or going on)
NO_RESULT = ("stopped", UNREACHED, PENDING)  # planned cells with no result, by why
# the states a report names by cell, in this order (measured cells are in its tables)
NAMED = ("failed", "oom", "timeout", "stopped", UNREACHED, PENDING, "skipped", "unreadable")
NOT_REACHED = "the sweep stopped before it"
TOLD = NO_RESULT  # their why is the sentence's head: not said again per cell
RAN = "while it ran (torchrun's error file)"
NOT_YET = "no result: not reached when the sweep's state was last written (killed, or going on)"


@dataclass(frozen=True)
class CellProgress:
    id: str
    label: str
    state: str  # a result's status ('ok', 'failed', 'skipped', ...), 'stopped' or UNREACHED
    why: str | None = None
    finding: Finding | None = None  # what `why` words, where it is one

    @property
    def reason(self) -> object:
        """What its `why` says, the same for a kept result's and a replanned cell's reason
        (the latter names where the node's GPU count came from: env.json)."""
        return self.why if self.finding is None else self.finding.key_without("source")

    @property
    def model(self) -> str:
        """The model of its label ('tiny-gpt2' of 'tiny-gpt2 b32 x1 fp32 ddp')."""
        found = re.match(r"(.*?) b\d+ x\d+ ", self.label)
        return found.group(1) if found else self.label


@dataclass(frozen=True)
class SweepProgress:
    phase: Phase
    cells: list[CellProgress]
    stopped_by: str | None = None
    during: CellProgress | None = None
    finished: int | None = None  # cells done, by the state file
    resume: list[str] | None = None  # the command line that finishes it
    replanned: bool = False  # the plan is its config.yaml's, expanded again (no sweep.json)
    redefined: int = 0  # results of cells today's plan defines anew: --resume reruns them too

    def count(self, state: str) -> int:
        return sum(c.state == state for c in self.cells)

    def not_measured(self) -> str:
        """The cells not measured named by state, then model (collapsed), with the reasons."""
        named = []
        for state in NAMED:
            cells = [c for c in self.cells if c.state == state]
            if cells:
                reasons: dict[object, str] = {}  # each said once, as it was first worded
                for cell in cells:
                    if cell.why and state not in TOLD and cell.why not in reasons.values():
                        reasons.setdefault(cell.reason, cell.why)
                named.append((state, list(reasons.values()), [(c.model, c.label) for c in cells]))
        return not_measured_text(named)

    def sentence(self) -> str | None:
        """The headline's: 'Sweep stopped by SIGTERM during cell 7 of 8.'; None for a sweep
        that ran every planned cell (its cells skipped by design are `details`)."""
        return self._head()

    def details(self) -> str:
        """Every cell not measured, by state, with its reasons; and, without a sweep.json,
        where the plan came from. '' for a sweep that ran every planned cell and skipped none
        (its failures are the report's actions and its Failures section)."""
        if self._head() is None and not self.count("skipped"):
            return ""
        said = [self.not_measured()]
        if self.phase == "unknown":
            said.append(SWEEP_JSON_REPLANNED if self.replanned else SWEEP_JSON_UNKNOWN)
        return " ".join(s for s in said if s)

    def finish(self) -> str:
        """The command that finishes it, to copy ('' when nothing is left to run or no config
        was kept)."""
        return resume_text(self.resume if self._unfinished() else None, self.redefined)

    def _unfinished(self) -> bool:
        """Cells to run again, and no one still running them (a run handed on goes on)."""
        handed_on = self.phase == "running" and self.stopped_by is not None
        return not handed_on and any(c.state not in ("ok", "skipped") for c in self.cells)

    def _head(self) -> str | None:
        """How the sweep ended and where; its cells are counted by the summary and named by
        `details`."""
        total = len(self.cells)
        where = ""
        if self.during is not None:
            number = next(i for i, c in enumerate(self.cells, 1) if c.id == self.during.id)
            where = f" during cell {number} of {total}"  # `details` names it
        if self.phase == "stopped":
            by = f" by {self.stopped_by}" if self.stopped_by else ""
            if self.stopped_by == "--fail-fast":
                where = f" after its first failed cell, of {total} planned"
            return f"Sweep stopped{by}{where}."
        if self.phase == "running" and self.stopped_by:  # its writer said why it stopped following
            return f"Sweep not followed to its end ({self.stopped_by})."
        if self.phase == "running":
            where = where or f" after cell {self.finished or 0} of {total}"
            return (
                f"Sweep did not finish{where}: its state file still "
                f"says running (the process ended without a word: killed, or still going)."
            )
        if self.phase == "unknown":
            how = f" by {self.stopped_by}" if self.stopped_by else ", killed or still running"
            if self.replanned:
                where = where or f" after {plural_cells(self.count('ok'))} measured"
                return f"Sweep stopped{how}{where}."
            cut = [c.label for c in self.cells if c.state == "stopped"]
            which = cut[0] if len(cut) == 1 else f"{len(cut)} cells ({', '.join(cut)})"
            return f"Sweep stopped{how} during {which}, with a spec and no result."
        return None


def plural_cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def _from_result(result: CellResult, label: str) -> CellProgress:
    error = result.error
    finding = error.finding if error is not None else None
    why = say(finding) if finding is not None else None
    return CellProgress(result.cell_id, label, result.status.value, why, finding)


def label_of_cell_id(cell_id: str) -> str:
    """'tiny-gpt2 b32 x1 fp32 ddp' from 'tiny-gpt2__b32__w1__fp32__ddp__bd72c309': a cell
    known by its id alone (a spec with no result, a profile of a cell outside the results)."""
    bare = re.sub(r"__w(\d+)", r" x\1", re.sub(r"__[0-9a-f]{8}$", "", cell_id))
    return bare.replace("__", " ")


def resume_argv(experiment: Experiment) -> list[str] | None:
    """`torchscale benchmark --config DIR/config.yaml --output-dir PARENT --resume`: it reruns
    the cells not ok into DIR (its config.yaml is the one the sweep ran, overrides applied);
    None where the folder keeps no config."""
    layout = ResultLayout(experiment.root)
    if not experiment.config or not layout.config_path.is_file():
        return None
    argv = ["torchscale", "benchmark", "--config", str(layout.config_path)]
    argv += ["--output-dir", str(experiment.root.parent), "--resume"]
    if experiment.config.get("experiment_name") != experiment.root.name:  # a renamed folder
        argv += ["--set", f"experiment_name={experiment.root.name}"]
    return argv


def sweep_progress(
    experiment: Experiment, plan: Sequence[PlannedCell] | None = None
) -> SweepProgress:
    """Every planned cell of `experiment` in plan order, with its state (pure: over what
    `results.load` read, and `plan`: its config's cells, for a folder with no sweep.json). A
    cell whose result file could not be read is 'unreadable', never not reached; a cell with
    a spec and no result was cut short (or is still running)."""
    results = {r.cell_id: r for r in experiment.results}
    unreadable = {p.stem: why for p, why in experiment.skipped if p.parent.name == "cells"}
    started = [i for i in experiment.started if i not in results and i not in unreadable]
    resume = resume_argv(experiment)
    state = experiment.sweep
    if state is None:
        names = {i: signal_name(n) for i, n in experiment.signalled.items() if i in started}
        signals = set(names.values())
        by = signals.pop() if len(signals) == 1 else None  # the sweep's stop, when it is one
        replanned = _replanned(experiment, plan, started, names) if plan else None
        plan = plan or ()
        if replanned is not None and any(c.state in NO_RESULT for c in replanned):
            during = next((c for c in replanned if c.state == "stopped"), None)
            ids = {entry.id for entry in plan}
            ok = [r for r in experiment.results if r.status.value == "ok"]
            redefined = sum(r.cell_id not in ids for r in ok)
            return SweepProgress("unknown", replanned, by, during, None, resume, True, redefined)
        cells = [_from_result(r, r.cell.shape_label) for r in experiment.results]
        cells += [CellProgress(i, i, "unreadable", why) for i, why in unreadable.items()]
        if not started:
            return SweepProgress("complete", cells)
        cut = [CellProgress(i, label_of_cell_id(i), "stopped", _cut_why(i, names)) for i in started]
        return SweepProgress("unknown", [*cells, *cut], by, cut[0], None, resume)
    by = f" by {state.stopped_by}" if state.stopped_by else ""
    # 'running' with a reason: handed on (Kubernetes) or its follower gone (Slurm): the cells
    # without a result are still to come or lost, and none of them was cut short by a stop
    unfollowed = state.phase == "running" and state.stopped_by is not None
    cut_short: dict[str, str] = {}
    if not unfollowed and state.phase == "running":
        cut_short = {i: CUT_SHORT for i in started}
    if state.during is not None and not unfollowed:
        cut_short[state.during] = f"stopped{by} while it ran"
    never = NOT_YET if state.phase == "running" else NOT_REACHED
    never = state.stopped_by if unfollowed and state.stopped_by else never
    gone = UNREACHED if state.phase == "stopped" else PENDING
    cells = _cells(state.planned, results, unreadable, cut_short, (gone, never))
    during = next((c for c in cells if c.state == "stopped"), None)
    # results kept from an earlier plan of the experiment are not this plan's cells: the
    # report's tables still show them, the count of planned cells does not
    return SweepProgress(state.phase, cells, state.stopped_by, during, state.finished, resume)


def _cells(
    plan: Sequence[PlannedCell],
    results: Mapping[str, CellResult],
    unreadable: Mapping[str, str],
    cut: Mapping[str, str],
    gone: tuple[str, str],
) -> list[CellProgress]:
    """Each planned cell's state, by its id: cut short (`cut`: why; before its result, which
    a resumed cell stopped again keeps from before), its result, unreadable, skipped by the
    plan, else `gone` (state, why)."""
    cells = []
    for entry in plan:
        if entry.id in cut:
            cells.append(CellProgress(entry.id, entry.label, "stopped", cut[entry.id]))
        elif entry.id in results:
            cells.append(_from_result(results[entry.id], entry.label))
        elif entry.id in unreadable:
            cells.append(CellProgress(entry.id, entry.label, "unreadable", unreadable[entry.id]))
        elif entry.skip is not None:  # skipped, no result
            skip = entry.skip
            cells.append(CellProgress(entry.id, entry.label, "skipped", say(skip), skip))
        else:
            cells.append(CellProgress(entry.id, entry.label, *gone))
    return cells


CUT_SHORT = "started (its spec is written) with no result: stopped, killed or still running"


def _cut_why(cell_id: str, signals: dict[str, str]) -> str:
    """Why a started cell has no result: its own signal (torchrun's error file), never
    another cell's."""
    return f"stopped by {signals[cell_id]} {RAN}" if cell_id in signals else CUT_SHORT


def _replanned(
    experiment: Experiment,
    plan: Sequence[PlannedCell],
    started: list[str],
    signals: dict[str, str],
) -> list[CellProgress] | None:
    """The cells of `plan` (the config's, expanded again), each with its state, matched to
    the folder by label (a newer torchscale may define the same cell anew: another id); None
    where a result or a started cell is not in the plan (the config does not describe the
    folder)."""
    ids = {entry.label: entry.id for entry in plan}
    unreadable = [(p.stem, why) for p, why in experiment.skipped if p.parent.name == "cells"]
    found = [r.cell.shape_label for r in experiment.results]
    found += [label_of_cell_id(i) for i, _ in unreadable] + [label_of_cell_id(i) for i in started]
    if not set(found) <= set(ids):
        return None
    return _cells(
        plan,
        {ids[r.cell.shape_label]: r for r in experiment.results},
        {ids[label_of_cell_id(i)]: why for i, why in unreadable},
        {ids[label_of_cell_id(i)]: _cut_why(i, signals) for i in started},
        (UNREACHED, NOT_REACHED),
    )
