"""What every rank of a `torchscale comm` launch runs (a JSON file named on its command line):
the host writes it, the comm program's ranks (rank/programs/comm.py) read it.
"""

from __future__ import annotations

from pydantic import Field

from torchscale.contracts.cell import Backend, Device
from torchscale.contracts.schema.comm_result import AcrossRanks
from torchscale.contracts.versioned import Record

DTYPES = ("float32", "float16", "bfloat16")


class CommSpec(Record):
    run_id: str
    ops: list[str] = Field(min_length=1)
    sizes: list[int] = Field(min_length=1, description="nccl-tests' S, bytes, ascending")
    dtype: str = Field(description="one of DTYPES")
    warmup_iters: int = Field(ge=0)
    iters: int = Field(ge=1)
    check: bool
    pairs_bytes: int | None = Field(default=None, description="run --pairs at this size")
    across_ranks: AcrossRanks = "avg"
    device: Device
    backend: Backend
    result_path: str = Field(description="rank 0 rewrites it after every row (atomic)")
    progress_path: str = Field(description="rank 0 names the row it is about to run")
