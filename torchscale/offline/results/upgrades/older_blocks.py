"""The `straggler` and `communication` blocks results of schema 16 or older carried beside
their diagnosis, read once by the upgrade to schema 17 (docs/results.md).

From schema 8 on they mirrored the diagnosis and are dropped, but for the no_sync window's
pooled step, which only they held: it moves into `diagnosis.no_sync`. A result of schema 7
or older kept only these point figures: its diagnosis is read from them after validation
(`upgrades.point_figures`), which keeps their no_sync figures the same way.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from torchscale.contracts.schema.cell_result import NoSyncWindow

MIRRORED_KEYS = ("straggler", "straggler_rank", "communication")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Communication(_Model):
    """The synchronised step T (median) split three ways from the no_sync windows: the slowest
    rank's compute, the others' wait for it, and communication exposed beyond it."""

    step_time_no_sync_s: float | None = None
    comm_overhead: float | None = None
    sync_overhead: float | None = None
    step_time_s: float | None = None
    slowest_compute_s: float | None = None
    slowest_compute_rank: int | None = None
    load_imbalance_s: float | None = None
    load_imbalance: float | None = None
    exposed_comm_s: float | None = None


class Straggler(_Model):
    """The rank with the highest compute time, and the phase that makes it slow."""

    rank: int
    basis: Literal["no_sync", "phases"]
    compute_s: float
    others_compute_s: float
    compute_gap_s: float
    phase: str | None
    gap_s: float | None
    phase_gaps_s: dict[str, float] = Field(default_factory=dict)
    injected: bool = False


class OlderBlocks(_Model):
    """A result's mirrored blocks as written (both null for a result of schema 17)."""

    straggler: Straggler | None = None
    communication: Communication | None = None

    @classmethod
    def of(cls, data: dict[str, Any]) -> OlderBlocks:
        """The blocks of a result's JSON (schema 16 shape); none where they do not validate."""
        blocks = {k: data.get(k) for k in ("straggler", "communication")}
        try:
            return cls.model_validate({k: v for k, v in blocks.items() if isinstance(v, dict)})
        except ValueError:
            return cls()

    def no_sync(self) -> NoSyncWindow | None:
        """The no_sync window's figures that only these blocks hold; None when none does."""
        comm = self.communication
        if comm is None:
            return None
        window = NoSyncWindow(
            step_s=comm.step_time_no_sync_s,
            slowest_compute_s=comm.slowest_compute_s,
            slowest_compute_rank=comm.slowest_compute_rank,
            sync_overhead=comm.sync_overhead,
        )
        return window if any(v is not None for v in window.model_dump().values()) else None


def folded(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a schema 16 result) without the mirrored blocks, its diagnosis holding the no_sync
    figures where it lacks them. A result with no diagnosis gets it from the blocks after
    validation (`OlderBlocks.of` of the same data, `upgrades.point_figures`)."""
    out = {k: v for k, v in data.items() if k not in MIRRORED_KEYS}
    diagnosis = out.get("diagnosis")
    window = OlderBlocks.of(data).no_sync()
    if isinstance(diagnosis, dict) and diagnosis.get("no_sync") is None and window is not None:
        out["diagnosis"] = {**diagnosis, "no_sync": window.model_dump()}
    return out
