"""What a sweep was asked to run and how far it got (`sweep.json` beside `cells/`): written when
it starts, as it ends and, by a local sweep, after every cell, so a sweep stopped by a signal, an
error or --fail-fast reads as stopped, by what and during which cell, and the cells it never
reached are still listed (a SIGKILL leaves "running": the process ended without a word). A run
handed on (Kubernetes) or a Slurm follower that stopped leaves "running" with `stopped_by`
saying why nobody followed it to its end. The one reader is offline/results/documents.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record

SWEEP_KIND = "torchscale.sweep"
SCHEMA_VERSION = 3
SweepPhase = Literal["running", "complete", "stopped"]


class PlannedCell(Record):
    """One cell of the plan, as the report names it before any result exists."""

    id: str
    label: str = Field(description="'tiny-gpt2 b32 x1 fp32 ddp', as the report labels cells")
    skip: Finding | None = Field(default=None, description="why the plan skips it (plan.*)")


class SweepState(Record):
    kind: Literal["torchscale.sweep"] = "torchscale.sweep"
    schema_version: Literal[3] = 3
    phase: SweepPhase
    planned: list[PlannedCell]
    finished: int = Field(description="cells with a result file, in plan order")
    stopped_by: str | None = Field(
        default=None, description="'SIGTERM', 'Ctrl-C (SIGINT)', '--fail-fast', an error's line"
    )
    during: str | None = Field(default=None, description="the cell running when it stopped")
