"""What an allocation's driver has done so far, in one small file the submitting side reads.

The driver rewrites `<experiment>/slurm/<allocation>/progress.json` (atomically) before and
after every cell; `torchscale benchmark` follows it to show which cell runs, and `--status`
reads it after the fact.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.finding import Finding

PROGRESS_FILE = "progress.json"


class Progress(BaseModel):
    # a follower older than its driver must still read the file: an unreadable one would
    # settle every cell of the job as failed, finished ones included
    model_config = ConfigDict(extra="ignore")

    job_id: str | None = None
    nodes: list[str] = Field(default_factory=list)
    head_address: str | None = None
    current: str | None = Field(default=None, description="the cell running now")
    done: list[str] = Field(default_factory=list)
    preflight: dict[str, str] = Field(
        default_factory=dict,
        description="preflight step -> verdict (validate per node, comm), in the order run",
    )
    stopped: Finding | None = Field(default=None, description="why the driver stopped early")
    stopped_by: str | None = Field(default=None, description="the signal that stopped it")
    stopped_during: str | None = Field(default=None, description="the cell the stop cut short")
    finished: bool = False


def progress_path(directory: Path) -> Path:
    return directory / PROGRESS_FILE


def write_progress(directory: Path, progress: Progress) -> None:
    write_text_atomic(progress_path(directory), progress.model_dump_json(indent=2))


def read_progress(directory: Path) -> Progress:
    """The driver's last word; an empty Progress before it started (or if unreadable)."""
    try:
        return Progress.model_validate(json.loads(progress_path(directory).read_text()))
    except (OSError, ValueError, ValidationError):
        return Progress()
