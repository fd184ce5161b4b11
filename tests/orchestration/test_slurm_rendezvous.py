"""Which node hosts the c10d rendezvous store of a Slurm step.

Every node runs the same srun argv; torchscale.orchestration.schedulers.slurm.node tells node 0
(whose NodeAddr is the endpoint) to host the store and the others not to. Left to torch, the host is
found by matching the endpoint against each node's hostname and addresses, which misses an address
on a secondary NIC: no node hosts, every node waits until the rendezvous times out. The last test
runs torch's own store creation on the argv torchrun would parse, with that matching failing.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.schedulers.slurm.node import node_argv, with_store_host
from torchscale.orchestration.schedulers.slurm.step import StepPlace, srun_command

TORCHRUN = "torch.distributed.run"


def node_torchrun_argv(
    tmp_path: Path, node: int, head: str = "10.0.0.5", port: int = 29999
) -> list[str]:
    """What node `node` execs for a two-node cell: the step's argv after `--`, through
    torchscale.orchestration.schedulers.slurm.node's rewriting."""
    cfg = BenchConfig.model_validate(
        {
            "experiment_name": "rdzv",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [2],
            "device": "cpu",
            "launcher": {"kind": "slurm", "nodes": [2]},
        }
    )
    planned = next(p for p in build_plan(cfg, Machine(0, 4)) if p.cell.nodes == 2)
    place = StepPlace("77", head, None, None, None, "python")
    argv = srun_command(planned, tmp_path / "s.json", tmp_path / "l", {}, place, port, 3).argv
    inner = argv[argv.index("--") + 1 :]
    return with_store_host(node_argv(inner, node), node)


def torchrun_options(argv: list[str]) -> list[str]:
    return argv[argv.index(TORCHRUN) + 1 :]


def test_node_zero_hosts_the_store_and_no_other_node_does(tmp_path: Path) -> None:
    for node, expected in ((0, "is_host=1"), (1, "is_host=0"), (3, "is_host=0")):
        argv = node_torchrun_argv(tmp_path, node)
        confs = [a for a in argv if a.startswith("--rdzv-conf")]
        assert confs == [f"--rdzv-conf={expected}"], (node, argv)
        # a torchrun option: before the worker module, which takes the rest of the argv
        assert argv.index(confs[0]) < argv.index("torchscale.rank.worker.main")


def test_torchrun_reads_is_host_from_that_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch.distributed import run

    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # config_from_args sets it when missing
    for node, expected in ((0, "1"), (1, "0")):
        args = run.get_args_parser().parse_args(
            torchrun_options(node_torchrun_argv(tmp_path, node))
        )
        config, _, _ = run.config_from_args(args)
        assert config.rdzv_configs["is_host"] == expected
        assert config.rdzv_endpoint == "10.0.0.5:29999"


def test_an_existing_rendezvous_conf_is_kept_and_one_node_launches_are_left_alone() -> None:
    argv = ["python", "-m", TORCHRUN, "--rdzv-backend=c10d", "--rdzv-conf=read_timeout=90", "x"]
    assert with_store_host(argv, 0)[4] == "--rdzv-conf=read_timeout=90,is_host=1"
    standalone = ["python", "-m", TORCHRUN, "--standalone", "--nproc-per-node=2", "-m", "w"]
    assert with_store_host(standalone, 0) == standalone


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_the_store_is_hosted_even_when_hostname_matching_misses_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's c10d backend, fed what torchrun parses from each node's argv: node 0 hosts,
    node 1 connects, although neither recognises the endpoint as its own (as with a NodeAddr
    on a secondary NIC). Without is_host, node 0 would only try to connect and time out."""
    from torch.distributed import run
    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend as c10d

    monkeypatch.setattr(c10d, "_matches_machine_hostname", lambda host: False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    port = _free_port()

    def store_of(node: int) -> object:
        argv = node_torchrun_argv(tmp_path, node, head="127.0.0.1", port=port)
        config, _, _ = run.config_from_args(
            run.get_args_parser().parse_args(torchrun_options(argv))
        )
        params = RendezvousParameters(
            backend=config.rdzv_backend,
            endpoint=config.rdzv_endpoint,
            run_id=config.run_id,
            min_nodes=config.min_nodes,
            max_nodes=config.max_nodes,
            **{**config.rdzv_configs, "read_timeout": 1},
        )
        return c10d._create_tcp_store(params)

    host = store_of(0)
    client = store_of(1)
    client.set("from-node-1", "ok")  # type: ignore[attr-defined]
    assert host.get("from-node-1") == b"ok"  # type: ignore[attr-defined]
