"""The Python and torch versions torchscale needs, written once.

`validate` checks the node against these, and pyproject.toml declares the same floors (a test
keeps them equal), so the install and the check cannot drift apart.
"""

from __future__ import annotations

MIN_PYTHON = (3, 10)
# torch.distributed.fsdp.fully_shard (FSDP2) is public from 2.6; torch.amp.GradScaler("cuda")
# needs 2.3. An older torch imports fine and then fails mid-benchmark, so the floor is 2.6.
MIN_TORCH = (2, 6)


def version_text(version: tuple[int, ...]) -> str:
    """(2, 6) -> '2.6'."""
    return ".".join(map(str, version))
