"""What one cell is, once: its identity and the statuses a cell can end in.

The plan builds a `CellIdentity` for every cell; the worker spec and the result carry it whole,
so the fields that say which measurement this is are written in one place and typed once.
"""

from __future__ import annotations

import hashlib
import re
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from torchscale.config.schema import Precision, Strategy

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
    `__n2` after the world size (one-node ids are as they always were)."""
    slug = file_safe(label)[:MAX_SLUG]
    spread = f"__n{nodes}" if nodes > 1 else ""
    return f"{slug}__b{batch_size}__w{world_size}{spread}__{precision}__{strategy}__{sha256[:8]}"


class CellIdentity(BaseModel):
    """Which measurement a cell is. Built once by the plan, carried by spec and result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
