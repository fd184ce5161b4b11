"""The files a rank leaves for the host to find where it is stuck, and
who it was.

Every rank (torchscale/rank/worker/diagnostics.py) writes its pid into the directory named by
DIAGNOSTICS_ENV and registers faulthandler on STACK_SIGNAL to dump its stacks there; the host
(torchscale/orchestration/launch/diagnose.py) sends that signal to a hung launch's ranks and reads
the dumps. Each rank also writes its identity (RankIdentity): its global rank is the rendezvous's to
give, not a function of the node it runs on (torch's dynamic rendezvous orders nodes by host name
and pid: Slurm's node 0 need not hold ranks 0..7), so the host reads it instead of deriving it
(torchscale/orchestration/launch/failure.py). The directory is per cell, under the results directory
that every node shares. Both sides read the names here, so neither imports the other.
"""

from __future__ import annotations

import json
import signal
from dataclasses import asdict, dataclass
from pathlib import Path

# where a rank writes its pid and, on request, its stacks
DIAGNOSTICS_ENV = "TORCHSCALE_DIAGNOSTICS_DIR"
# where torchrun's agent and each rank write the first failure (torch.distributed.elastic)
ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"
STACK_SIGNAL = signal.SIGUSR1  # faulthandler dumps every thread's stack on it


def pid_file(directory: Path, rank: int) -> Path:
    return directory / f"rank{rank}.pid"


def stack_file(directory: Path, rank: int) -> Path:
    return directory / f"rank{rank}.stacks.txt"


def identity_file(directory: Path, rank: int) -> Path:
    return directory / f"rank{rank}.identity.json"


@dataclass(frozen=True)
class RankIdentity:
    """Who a rank was, in torchrun's and Slurm's numbering, as the rank itself read them."""

    rank: int  # global RANK
    local_rank: int | None  # LOCAL_RANK: its index on its node
    group_rank: int | None  # GROUP_RANK: its node's rank in the rendezvous (not Slurm's)
    slurm_node_id: int | None  # SLURM_NODEID: names the ranks/node<k>/ its logs are under
    hostname: str
    pid: int
    error_file: str | None  # TORCHELASTIC_ERROR_FILE: torchrun's per-rank error file

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> RankIdentity | None:
        """The record, or None when it is not one (partial, foreign, another version)."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                return None
            return cls(
                rank=int(data["rank"]),
                local_rank=_optional_int(data.get("local_rank")),
                group_rank=_optional_int(data.get("group_rank")),
                slurm_node_id=_optional_int(data.get("slurm_node_id")),
                hostname=str(data.get("hostname") or ""),
                pid=int(data["pid"]),
                error_file=str(data["error_file"]) if data.get("error_file") else None,
            )
        except (ValueError, TypeError, KeyError):
            return None


def _optional_int(value: object) -> int | None:
    return None if value is None or value == "" else int(str(value))
