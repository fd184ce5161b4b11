"""What srun starts on each node of a step: torchrun, with this node's own error file and logs,
told whether it hosts the rendezvous store, after a line on the CPUs the step has here.

Every node's torchrun would otherwise write the same TORCHELASTIC_ERROR_FILE and rank log
directories on the shared filesystem. Node 0 keeps the names a one-node launch uses (the
failure reader looks there first); node k writes `error-node<k>.json` and `ranks/node<k>/`.
The CPU line (and a warning when the ranks outnumber the CPUs) goes to stderr, which the
driver keeps in the cell's log. Kept free of heavy imports: it runs once per node per cell.

    python -m torchscale.orchestration.schedulers.slurm.node -- \
        python -m torch.distributed.run ... --log-dir DIR ...
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path, PurePosixPath

from torchscale.contracts import wording
from torchscale.contracts.rank_diagnostics import ERROR_FILE_ENV
from torchscale.orchestration.schedulers.slurm.cpus import step_cpus, too_few_cpus

C10D = "--rdzv-backend=c10d"
RDZV_CONF = "--rdzv-conf="
NPROC = "--nproc-per-node="


def node_argv(argv: list[str], node: int) -> list[str]:
    """`argv` with torchrun's --log-dir moved under node<k>/ (node 0 too: ranks repeat)."""
    out = list(argv)
    if "--log-dir" in out:
        index = out.index("--log-dir") + 1
        out[index] = str(Path(out[index]) / f"node{node}")
    return out


def node_error_file(path: str, node: int | str) -> str:
    """`error-node<node>.json` beside `path` (node 0 keeps `path`); a Kubernetes pod's tag
    ('-master', '$(TORCHSCALE_POD_INDEX)') stands in for the node (kubernetes/manifests.py)."""
    if node == 0:
        return path
    error = PurePosixPath(path)
    return str(error.with_name(f"{error.stem}-node{node}{error.suffix}"))


def with_store_host(argv: list[str], node: int) -> list[str]:
    """`argv` with c10d's `is_host` set: 1 on node 0, whose NodeAddr is the endpoint (and
    where the driver found the port free), 0 elsewhere. Unset, torch guesses by matching the
    endpoint against the node's hostname and addresses (c10d_rendezvous_backend.py,
    _create_tcp_store), which misses an address on a secondary NIC: then no node hosts the
    store and every node waits for it until the rendezvous times out."""
    if C10D not in argv:
        return list(argv)
    flag = f"is_host={1 if node == 0 else 0}"
    out = list(argv)
    for index, arg in enumerate(out):
        if arg.startswith(RDZV_CONF):
            out[index] = f"{arg},{flag}" if arg != RDZV_CONF else RDZV_CONF + flag
            return out
    out.insert(out.index(C10D) + 1, RDZV_CONF + flag)
    return out


def ranks_per_node(argv: list[str]) -> int:
    """torchrun's --nproc-per-node in `argv` (1 when absent or not a number)."""
    for arg in argv:
        if arg.startswith(NPROC) and arg[len(NPROC) :].isdigit():
            return int(arg[len(NPROC) :])
    return 1


def cpu_report(node: int, cpus: int, ranks: int, threads: str) -> list[str]:
    """What this node's step has, for the cell's log; a warning line when too little."""
    where = f"node {node} ({socket.gethostname()})"
    lines = [f"torchscale: {where}: {cpus} CPU(s) for {ranks} rank(s), OMP_NUM_THREADS={threads}"]
    warning = too_few_cpus(cpus, ranks, where)
    if warning:
        lines.append(f"torchscale: warning: {wording.say(warning)}")
    return lines


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit("usage: python -m torchscale.orchestration.schedulers.slurm.node -- COMMAND...")
    node = int(os.environ.get("SLURM_NODEID", "0"))
    env = dict(os.environ)
    if ERROR_FILE_ENV in env:
        env[ERROR_FILE_ENV] = node_error_file(env[ERROR_FILE_ENV], node)
    argv = with_store_host(node_argv(args, node), node)
    report = cpu_report(node, step_cpus(env), ranks_per_node(argv), env.get("OMP_NUM_THREADS", "?"))
    print("\n".join(report), file=sys.stderr, flush=True)
    os.execvpe(argv[0], argv, env)  # noqa: S606 (replaced, so srun's signals reach torchrun)


if __name__ == "__main__":
    main()
