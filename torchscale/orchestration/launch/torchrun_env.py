"""The environment a launched torchrun gets.

Variables that a parent torchrun, Slurm step or notebook left behind would silently change the
child's rendezvous (torchrun reads PET_* as defaults for its own flags), so they are stripped.
"""

from __future__ import annotations

from collections.abc import Mapping

# exact names set by torchrun / torch.distributed for a worker: RANK, WORLD_SIZE, LOCAL_RANK,
# LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE (made from
# _SCOPES), ROLE_NAME, MASTER_ADDR, MASTER_PORT
_SCOPES = ("", "LOCAL_", "GROUP_", "ROLE_")
INHERITED_DISTRIBUTED_VARS = frozenset(
    {f"{scope}{name}" for scope in _SCOPES for name in ("RANK", "WORLD_SIZE")}
    | {"ROLE_NAME", "MASTER_ADDR", "MASTER_PORT"}
)
INHERITED_DISTRIBUTED_PREFIXES = ("TORCHELASTIC_", "PET_")


def is_inherited_distributed_var(name: str) -> bool:
    """True for variables that belong to some other distributed launch, not to ours."""
    return name in INHERITED_DISTRIBUTED_VARS or name.startswith(INHERITED_DISTRIBUTED_PREFIXES)


def child_environment(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """`base` without inherited distributed variables, then `extra` on top."""
    env = {k: v for k, v in base.items() if not is_inherited_distributed_var(k)}
    env.update(extra)
    return env
