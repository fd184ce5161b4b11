"""What srun starts on each node of a step: torchrun, with this node's own error file and logs.

Every node's torchrun would otherwise write the same TORCHELASTIC_ERROR_FILE and rank log
directories on the shared filesystem. Node 0 keeps the names a one-node launch uses (the
failure reader looks there first); node k writes `error-node<k>.json` and `ranks/node<k>/`.
Kept free of heavy imports: it runs once per node per cell.

    python -m torchscale.slurm.node -- python -m torch.distributed.run ... --log-dir DIR ...
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"


def node_argv(argv: list[str], node: int) -> list[str]:
    """`argv` with torchrun's --log-dir moved under node<k>/ (node 0 too: ranks repeat)."""
    out = list(argv)
    if "--log-dir" in out:
        index = out.index("--log-dir") + 1
        out[index] = str(Path(out[index]) / f"node{node}")
    return out


def node_error_file(path: str, node: int) -> str:
    if node == 0:
        return path
    error = Path(path)
    return str(error.with_name(f"{error.stem}-node{node}{error.suffix}"))


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit("usage: python -m torchscale.slurm.node -- COMMAND...")
    node = int(os.environ.get("SLURM_NODEID", "0"))
    env = dict(os.environ)
    if ERROR_FILE_ENV in env:
        env[ERROR_FILE_ENV] = node_error_file(env[ERROR_FILE_ENV], node)
    argv = node_argv(args, node)
    os.execvpe(argv[0], argv, env)  # noqa: S606 (replaced, so srun's signals reach torchrun)


if __name__ == "__main__":
    main()
