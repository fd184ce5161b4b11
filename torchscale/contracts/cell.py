"""What one cell is, once: its identity and the statuses a cell can end in.

The plan builds a `CellIdentity` for every cell; the worker spec and the result carry it whole,
so the fields that say which measurement this is are written in one place and typed once.
"""

from __future__ import annotations

import hashlib
import re
from enum import Enum
from typing import Literal

from pydantic import Field

from torchscale.contracts.catalog import HybridLayout, Precision, Schedule, Strategy
from torchscale.contracts.versioned import FrozenRecord

Device = Literal["cuda", "cpu"]  # as resolved by the plan ('auto' is gone by then)
Backend = Literal["nccl", "gloo"]

MAX_SLUG = 80  # keeps a cell id (and its result file name) far below NAME_MAX


class Status(str, Enum):
    """How a cell ended. `failed`, `oom` and `timeout` are failures; `skipped` is not."""

    OK = "ok"
    FAILED = "failed"
    OOM = "oom"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"

    @property
    def is_failure(self) -> bool:
        return self in FAILURE_STATUSES

    def __str__(self) -> str:
        return self.value


FAILURE_STATUSES = frozenset({Status.FAILED, Status.OOM, Status.TIMEOUT})


def definition_hash(definition: str) -> str:
    """sha256 of a cell's canonical definition JSON (the key --resume trusts)."""
    return hashlib.sha256(definition.encode()).hexdigest()


def file_safe(text: str) -> str:
    """`text` with every run of characters outside [A-Za-z0-9._-] replaced by '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def make_cell_id(
    label: str,
    batch_size: int,
    world_size: int,
    precision: str,
    strategy: str,
    sha256: str,
    nodes: int = 1,
) -> str:
    """Stable, filesystem-safe, readable id; the hash keeps ids of different definitions
    apart (two transformer sizes, or a changed step count). More than one node shows as
    `__n2` after the world size."""
    slug = file_safe(label)[:MAX_SLUG]
    spread = f"__n{nodes}" if nodes > 1 else ""
    return f"{slug}__b{batch_size}__w{world_size}{spread}__{precision}__{strategy}__{sha256[:8]}"


SCHEDULE_SLUGS = {"gpipe": "gpipe", "1f1b": "1f1b", "interleaved_1f1b": "i1f1b"}


class ParallelShape(FrozenRecord):
    """The mesh of a tp, pp or hybrid cell: how its world splits into data-parallel replicas,
    tensor-parallel ranks and pipeline stages (dp x tp x pp = world size)."""

    dp: int = Field(description="data-parallel replicas (each reads its own batch)")
    tp: int = Field(description="tensor-parallel ranks per replica (1: none)")
    pp: int = Field(description="pipeline stages per replica (1: none)")
    microbatches: int = Field(default=1, description="micro-batches per step (pipelines)")
    schedule: Schedule | None = Field(default=None, description="pipeline schedule")
    sequence_parallel: bool = False
    hybrid: HybridLayout | None = Field(default=None, description="the 2-D layout of hybrid")

    def _pipe(self) -> str:
        if self.schedule is None:
            return ""
        return f"-{SCHEDULE_SLUGS[self.schedule]}-m{self.microbatches}"

    def family(self, strategy: str) -> str:
        """What stays fixed along a scaling curve: the slug without the degrees that grow with
        the world (tp and pp use every rank; hybrid's data-parallel degree grows)."""
        sp = "sp" if self.sequence_parallel else ""
        if self.hybrid == "fsdp_tp":
            return f"fsdp_tp{self.tp}{sp}"
        if self.hybrid == "ddp_pp":
            return f"ddp_pp{self.pp}{self._pipe()}"
        return f"{strategy}{sp}{self._pipe()}"

    def slug(self, strategy: str) -> str:
        """The strategy part of a cell id: tp2, tp2sp, pp2-1f1b-m4, fsdp2xtp2, ddp2xpp2-..."""
        sp = "sp" if self.sequence_parallel else ""
        if self.hybrid == "fsdp_tp":
            return f"fsdp{self.dp}xtp{self.tp}{sp}"
        if self.hybrid == "ddp_pp":
            return f"ddp{self.dp}xpp{self.pp}{self._pipe()}"
        if strategy == "tp":
            return f"tp{self.tp}{sp}"
        return f"pp{self.pp}{self._pipe()}"


def world_label(ranks: int) -> str:
    """A world size in a cell's label and a search's name: 'x2', the one spelling (not 'w2',
    which the cell id's slug uses)."""
    return f"x{ranks}"


def shared_gpus(ranks_per_gpu: object) -> str:
    """'(2 ranks per GPU)': a cell whose ranks shared GPUs (launcher.ranks_per_gpu), in every
    cell label beside its shape; '' for a GPU per rank (and a table without the column)."""
    try:
        ranks = int(ranks_per_gpu)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return ""
    return f"({ranks} ranks per GPU)" if ranks > 1 else ""


class CellIdentity(FrozenRecord):
    """Which measurement a cell is. Built once by the plan, carried by spec and result."""

    id: str = Field(description="stable id, also the result file's name")
    definition_sha256: str = Field(description="hash of everything that shapes the result")
    model: str = Field(description="model name (built-in or plug-in path)")
    label: str = Field(description="display name: the model's label, or its name")
    batch_size: int = Field(description="per device")
    world_size: int
    precision: Precision
    strategy: Strategy
    device: Device
    backend: Backend
    nodes: int = Field(default=1, description="nodes the world is spread over")
    parallel: ParallelShape | None = Field(
        default=None, description="tp, pp and hybrid: the mesh (null for ddp and fsdp)"
    )
    ranks_per_gpu: int = Field(
        default=1,
        description="ranks sharing each GPU (launcher.ranks_per_gpu; 1: a GPU per rank): a "
        "cell above 1 stands in for a multi-GPU one and is never compared with one",
    )

    @property
    def shares_gpu(self) -> bool:
        """Several of its ranks on one GPU (contracts/shared_gpu.py)."""
        return self.ranks_per_gpu > 1

    @property
    def shape_label(self) -> str:
        """'tiny-gpt2 b32 x1 fp32 ddp', as the report labels a cell (with '(2 nodes)' after
        the world where it spans several): also what a sweep's state file names it by."""
        nodes = f" ({self.nodes} nodes)" if self.nodes > 1 else ""
        nodes += f" {shared_gpus(self.ranks_per_gpu)}" if self.shares_gpu else ""
        world = world_label(self.world_size)
        shape = f"b{self.batch_size} {world}{nodes} {self.precision} {self.strategy}"
        return f"{self.label} {shape}"
