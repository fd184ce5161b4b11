"""What a run can and cannot be used for, decided once from what kind of run it was: the first
line of a report and of `benchmark`'s end answer (docs/reporting.md, "What a run is for"). A
sweep whose cells ran on CPU ranks or whose GPU waited for the host in every cell holds no GPU
figure, however steady its numbers; the workload level's cells prove a path; a sweep at one
world size measured no scaling (unsaid where the GPU waited for the host throughout: no GPU
figure, so no GPU scaling either). Each is a finding (worded by contracts/wording/cell_warnings.py).
Pure: a cells table and two facts in, findings out, in the table's order."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.run_kinds import PATH_CHECK_DESCRIPTION
from torchscale.offline.analysis.numbers import finite

PATH_CHECK = "purpose.path_check"  # the workload level's cells: a path proven, no figure
NO_GPU_FIGURE = "purpose.no_gpu_figure"  # CPU ranks, or the GPU waited for the host throughout
SCALING_UNMEASURED = "purpose.scaling_unmeasured"  # every cell at one world size


def is_path_check(descriptions: list[str]) -> bool:
    """Whether the configs are the workload level's: its description, compared whole."""
    return bool(descriptions) and all(d == PATH_CHECK_DESCRIPTION for d in descriptions)


def _measured(cells: pd.DataFrame) -> list[dict[str, Any]]:
    if cells.empty or "samples_per_s" not in cells:
        return []
    rows = cells.to_dict("records")
    return [r for r in rows if r.get("status") == "ok" and finite(r.get("samples_per_s"))]


def _host_bound(row: dict[str, Any]) -> bool:
    value = row.get("host_bound")
    return value is True or value == 1.0


def run_purpose(
    cells: pd.DataFrame, *, path_check: bool = False, node_gpus: int | None = None
) -> list[Finding]:
    """The run's purpose findings, most telling first (empty: a measurement to judge by its
    noise alone). `path_check`: the configs are the workload level's (`is_path_check`);
    `node_gpus`: the GPUs one node of the run has (None where not recorded)."""
    measured = _measured(cells)
    if not measured:
        return []
    count = len(measured)
    if path_check:
        return [Finding(code=PATH_CHECK, figures={"cells": count})]
    found = []
    on_cpu = [str(r.get("device")) == "cpu" for r in measured]
    if all(on_cpu):
        found.append(Finding(code=NO_GPU_FIGURE, figures={"cells": count, "why": "cpu"}))
    elif all(cpu or _host_bound(r) for cpu, r in zip(on_cpu, measured, strict=True)):
        found.append(Finding(code=NO_GPU_FIGURE, figures={"cells": count, "why": "host_bound"}))
    worlds = {int(r.get("world_size") or 1) for r in measured}
    devices = {str(r.get("device")) for r in measured}
    host_bound = any(f.figure("why") == "host_bound" for f in found)  # no GPU scaling either
    # on GPUs, whether more of them pay is always the question; one CPU run asks none (its
    # first sentence already says CPU ranks give no accelerator figure)
    asked = count > 1 or devices != {"cpu"}
    if asked and len(worlds) == 1 and len(devices) == 1 and not host_bound:
        figures = {"world": worlds.pop(), "node_gpus": node_gpus, "device": devices.pop()}
        found.append(Finding(code=SCALING_UNMEASURED, figures=figures))
    return found
