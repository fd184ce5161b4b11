"""How far one experiment's sweep got: every planned cell with its state, and the sentence a
report opens with when the sweep did not run them all (stopped, killed or partly skipped).

From `sweep.json` where the sweep wrote one; an older folder has only its cells and the specs of
the cells it started, so a started cell with no result is all it can tell (the cells planned
after it were not recorded)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.signals import signal_name
from torchscale.offline.results.experiment import Experiment

Phase = Literal["complete", "stopped", "running", "unknown"]
NOT_REACHED = "not run: the sweep stopped before it"
RAN = "while it ran (torchrun's error file)"
NOT_YET = "no result: not reached when the sweep's state was last written (killed, or going on)"


@dataclass(frozen=True)
class CellProgress:
    id: str
    label: str
    state: str  # a result's status ('ok', 'failed', 'skipped', ...), 'stopped' or 'not run'
    why: str | None = None


@dataclass(frozen=True)
class SweepProgress:
    phase: Phase
    cells: list[CellProgress]
    stopped_by: str | None = None
    during: CellProgress | None = None
    finished: int | None = None  # cells done, by the state file

    def count(self, state: str) -> int:
        return sum(c.state == state for c in self.cells)

    def sentence(self) -> str | None:
        """'Sweep stopped by SIGTERM during cell 7 of 8 (tiny-gpt2 b32 x1 fp32 ddp): 3 ok, 3
        skipped, 1 stopped, 1 not run.'; None for a sweep that ran every planned cell."""
        total = len(self.cells)
        skips = "; ".join(dict.fromkeys(str(c.why) for c in self.cells if c.state == "skipped"))
        counts = ", ".join(
            f"{self.count(state)} {state}" + (f" ({skips})" if state == "skipped" else "")
            for state in dict.fromkeys(c.state for c in self.cells)
        )
        where = ""
        if self.during is not None:
            number = next(i for i, c in enumerate(self.cells, 1) if c.id == self.during.id)
            where = f" during cell {number} of {total} ({self.during.label})"
        if self.phase == "stopped":
            by = f" by {self.stopped_by}" if self.stopped_by else ""
            if self.stopped_by == "--fail-fast":
                where = f" after its first failed cell, of {total} planned"
            return f"Sweep stopped{by}{where}: {counts}."
        if self.phase == "running" and self.stopped_by:  # its writer said why it stopped following
            return f"Sweep not followed to its end ({self.stopped_by}): {counts}."
        if self.phase == "running":
            where = where or f" after cell {self.finished or 0} of {total}"
            return (
                f"Sweep did not finish{where}: its state file still "
                f"says running (the process ended without a word: killed, or still going): "
                f"{counts}."
            )
        if self.phase == "unknown":
            cut = [c.label for c in self.cells if c.state == "stopped"]
            which = cut[0] if len(cut) == 1 else f"{len(cut)} cells ({', '.join(cut)})"
            how = f" by {self.stopped_by}" if self.stopped_by else ", killed or still running"
            return (
                f"Sweep stopped{how} during {which}, with a spec and no result: {counts} (no "
                "sweep.json: the cells it never started are not known)."
            )
        if skips:
            return f"{self.count('skipped')} of {total} planned cells skipped ({skips})."
        return None


def _from_result(result: CellResult, label: str) -> CellProgress:
    why = result.error.reason if result.error is not None else None
    return CellProgress(result.cell_id, label, result.status.value, why)


def label_of_cell_id(cell_id: str) -> str:
    """'tiny-gpt2 b32 x1 fp32 ddp' from 'tiny-gpt2__b32__w1__fp32__ddp__bd72c309': a cell
    known by its id alone (a spec with no result, a profile of a cell outside the results)."""
    bare = re.sub(r"__w(\d+)", r" x\1", re.sub(r"__[0-9a-f]{8}$", "", cell_id))
    return bare.replace("__", " ")


def sweep_progress(experiment: Experiment) -> SweepProgress:
    """Every planned cell of `experiment` in plan order, with its state (pure: over what
    `results.load` read). A cell whose result file could not be read is 'unreadable', never
    'not run'; a cell with a spec and no result was cut short (or is still running)."""
    results = {r.cell_id: r for r in experiment.results}
    unreadable = {p.stem: why for p, why in experiment.skipped if p.parent.name == "cells"}
    started = [i for i in experiment.started if i not in results and i not in unreadable]
    cut_short = "started (its spec is written) with no result: stopped, killed or still running"
    state = experiment.sweep
    if state is None:
        cells = [_from_result(r, r.cell.shape_label) for r in experiment.results]
        cells += [CellProgress(i, i, "unreadable", why) for i, why in unreadable.items()]
        if not started:
            return SweepProgress("complete", cells)
        # each cell's own signal (torchrun's error file), never another cell's
        names = {i: signal_name(n) for i, n in experiment.signalled.items() if i in started}
        said = {i: f"stopped by {name} {RAN}" for i, name in names.items()}
        cut = [
            CellProgress(i, label_of_cell_id(i), "stopped", said.get(i, cut_short)) for i in started
        ]
        signals = set(names.values())
        by = signals.pop() if len(signals) == 1 else None  # the sweep's stop, when it is one
        return SweepProgress("unknown", [*cells, *cut], by, during=cut[0])
    cells = []
    during = None
    by = f" by {state.stopped_by}" if state.stopped_by else ""
    # 'running' with a reason: handed on (Kubernetes) or its follower gone (Slurm): the cells
    # without a result are still to come or lost, and none of them was cut short by a stop
    unfollowed = state.phase == "running" and state.stopped_by is not None
    for entry in state.planned:
        cut_now = entry.id == state.during or (state.phase == "running" and entry.id in started)
        if cut_now and not unfollowed:
            why = f"stopped{by} while it ran" if entry.id == state.during else cut_short
            during = during or CellProgress(entry.id, entry.label, "stopped", why)
            cells.append(CellProgress(entry.id, entry.label, "stopped", why))
        elif entry.id in results:
            cells.append(_from_result(results[entry.id], entry.label))
        elif entry.id in unreadable:
            cells.append(CellProgress(entry.id, entry.label, "unreadable", unreadable[entry.id]))
        elif entry.skip_reason is not None:  # the plan skipped it and wrote no result
            cells.append(CellProgress(entry.id, entry.label, "skipped", entry.skip_reason))
        else:
            never = NOT_YET if state.phase == "running" else NOT_REACHED
            never = f"no result yet ({state.stopped_by})" if unfollowed else never
            cells.append(CellProgress(entry.id, entry.label, "not run", never))
    # results kept from an earlier plan of the experiment are not this plan's cells: the
    # report's tables still show them, the count of planned cells does not
    return SweepProgress(state.phase, cells, state.stopped_by, during, state.finished)
