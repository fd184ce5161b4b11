"""The Slurm jobs of a sweep, recorded as they are submitted: `<experiment>/slurm/jobs.json`.

`--resume`, `--status` and `--cancel` read it: which cells each job runs, where its allocation
lives, so a sweep can be followed, shown and cancelled from any shell on the cluster.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from torchscale.contracts.errors import ResultsError
from torchscale.offline.results.store import ResultStore

JOBS_KIND = "torchscale.slurm_jobs"
JOBS_VERSION = 1


class JobRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str
    allocation: str = Field(description="its directory under slurm/")
    nodes: int
    cells: list[str]
    script: str
    submitted_at: str


class JobsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = JOBS_KIND
    version: int = JOBS_VERSION
    jobs: list[JobRecord] = Field(default_factory=list)


def read_jobs(store: ResultStore) -> JobsFile:
    """The sweep's jobs; empty when none was submitted. A file that is not ours is an error."""
    path = store.slurm_jobs_path
    if not path.exists():
        return JobsFile()
    try:
        return JobsFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise ResultsError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None


def add_job(store: ResultStore, record: JobRecord) -> None:
    jobs = read_jobs(store)
    jobs.jobs.append(record)
    store.write_text(store.slurm_jobs_path, jobs.model_dump_json(indent=2))


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
