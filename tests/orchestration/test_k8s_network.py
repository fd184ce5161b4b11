"""Kubernetes pods of one cell: each pod its own torchrun error file, found
by the failure reader; the RDMA device, IPC_LOCK, host network and Multus network settings in
the manifests; and the warning when a multi-node NCCL cell asks for none of them.

Pods are resolved as the kubelet would (tests/orchestration/test_k8s.py `kubelet_env`): `fieldRef`
from the
pod's own annotations and labels, `$(VAR)` only from variables listed before.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.orchestration.test_k8s import (
    GPU_NODE,
    _schema,
    assert_valid,
    by_nodes,
    k8s_config,
    kubelet_env,
    manifests_of,
    node_counts,
    trainjob_v21_schema,
)
from torchscale.contracts.errors import ConfigError
from torchscale.orchestration.launch.error_files import node_errors
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.schedulers.kubernetes.manifests import (
    K8sManifest,
    network_warnings,
    pod_error_file,
)

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
MULTUS = "k8s.v1.cni.cncf.io/networks"


def error_file(env: dict[str, str]) -> PurePosixPath:
    return PurePosixPath(env["TORCHELASTIC_ERROR_FILE"])


def trainjob_pod_envs(item: K8sManifest, nodes: int) -> list[dict[str, str]]:
    """Each TrainJob pod's env: the Indexed Job gives pod k the completion index k."""
    entries = item.manifest["spec"]["trainer"]["env"]
    return [kubelet_env(entries, {"annotations": {COMPLETION_INDEX: str(k)}}) for k in range(nodes)]


def pytorchjob_pod_envs(item: K8sManifest) -> list[dict[str, str]]:
    """The Master's env, then each Worker's (the operator labels Worker i with index i)."""
    replicas = item.manifest["spec"]["pytorchReplicaSpecs"]
    master = replicas["Master"]["template"]["spec"]["containers"][0]["env"]
    envs = [kubelet_env(master, {"labels": {REPLICA_INDEX: "0"}})]
    if "Worker" in replicas:
        worker = replicas["Worker"]["template"]["spec"]["containers"][0]["env"]
        envs += [
            kubelet_env(worker, {"labels": {REPLICA_INDEX: str(i)}})
            for i in range(replicas["Worker"]["replicas"])
        ]
    return envs


# ------------------------------------------------------------------ one error file per pod


def test_trainjob_node_k_writes_error_node_k() -> None:
    config = k8s_config(nodes="[3]")
    [item] = manifests_of(config)
    envs = trainjob_pod_envs(item, 3)
    files = [error_file(env) for env in envs]
    assert [f.name for f in files] == ["error-node0.json", "error-node1.json", "error-node2.json"]
    assert {f.parent for f in files} == {PurePosixPath(f"/results/scaling/logs/{item.cell_id}")}
    # the index variable comes first: the kubelet expands only variables listed before
    names = [e["name"] for e in item.manifest["spec"]["trainer"]["env"]]
    assert names.index("TORCHSCALE_POD_INDEX") < names.index("TORCHELASTIC_ERROR_FILE")
    assert_valid(item.manifest, _schema("trainjob.schema.json"))


def test_pytorchjob_master_and_each_worker_write_their_own() -> None:
    config = k8s_config(api="pytorchjob", nodes="[3]")
    [item] = manifests_of(config)
    names = [error_file(env).name for env in pytorchjob_pod_envs(item)]
    assert names == ["error-node-master.json", "error-node-worker0.json", "error-node-worker1.json"]
    assert_valid(item.manifest, _schema("pytorchjob.schema.json"))


@pytest.mark.parametrize("api", ["trainjob", "pytorchjob"])
def test_the_failure_reader_finds_every_pods_error(tmp_path: Path, api: str) -> None:
    """Every pod writes its exception into its own file on the claim; the host's failure
    reader (torchscale/orchestration/launch/failure.py, unchanged) reads them all from the launch's
    error file, as it reads a Slurm step's nodes'. Before, every pod wrote the same file."""
    config = k8s_config(api=api, nodes="[3]")
    [item] = manifests_of(config)
    envs = trainjob_pod_envs(item, 3) if api == "trainjob" else pytorchjob_pod_envs(item)
    on_claim = [tmp_path / error_file(env).relative_to("/results") for env in envs]
    assert len(set(on_claim)) == 3
    for pod, path in enumerate(on_claim):
        path.parent.mkdir(parents=True, exist_ok=True)
        message = f"Traceback ...\nRuntimeError: pod {pod} failed"
        path.write_text(json.dumps({"message": {"message": message}}))
    launch_error_file = on_claim[0].with_name("error.json")  # what the local launch names
    found = node_errors(launch_error_file)
    assert sorted(e.exception for e in found) == [
        f"RuntimeError: pod {pod} failed" for pod in range(3)
    ]


def test_pod_error_file_naming() -> None:
    assert pod_error_file("/r/logs/c/error.json", "3") == "/r/logs/c/error-node3.json"
    assert pod_error_file("/r/logs/c/error.json", "-master") == "/r/logs/c/error-node-master.json"


# ----------------------------------------------------------------------- network settings

FABRIC = (
    "    rdma_resource: rdma/ib\n"
    "    rdma_per_node: 2\n"
    "    ipc_lock: true\n"
    f"    network_annotations: {{'{MULTUS}': roce-net}}\n"
)


def node_pod(item: K8sManifest) -> dict[str, Any]:
    [patch] = item.manifest["spec"]["runtimePatches"]
    [job] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    return dict(job["template"]["spec"]["template"])


def test_trainjob_asks_for_rdma_ipc_lock_and_the_secondary_network() -> None:
    config = k8s_config(nodes="[2]", k8s_extra=FABRIC)
    [item] = manifests_of(config)
    assert_valid(item.manifest, _schema("trainjob.schema.json"))
    limits = item.manifest["spec"]["trainer"]["resourcesPerNode"]["limits"]
    assert limits["rdma/ib"] == "2" and limits["nvidia.com/gpu"] == "2"
    pod = node_pod(item)
    assert pod["metadata"] == {"annotations": {MULTUS: "roce-net"}}
    [container] = pod["spec"]["containers"]
    assert container["name"] == "node"
    assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}


def test_trainjob_v21_carries_the_annotations_in_its_override() -> None:
    extra = f"    pod_patch: podTemplateOverrides\n    network_annotations: {{'{MULTUS}': n1}}\n"
    config = k8s_config(nodes="[2]", k8s_extra=extra)
    [item] = manifests_of(config, pod_patch=config.launcher.k8s.pod_patch)
    assert_valid(item.manifest, trainjob_v21_schema())
    [override] = item.manifest["spec"]["podTemplateOverrides"]
    assert override["metadata"] == {"annotations": {MULTUS: "n1"}}


def test_pytorchjob_asks_for_all_of_it_host_network_included() -> None:
    extra = FABRIC + "    host_network: true\n"
    config = k8s_config(api="pytorchjob", nodes="[2]", k8s_extra=extra)
    [item] = manifests_of(config)
    assert_valid(item.manifest, _schema("pytorchjob.schema.json"))
    for replica in item.manifest["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]
        assert pod["metadata"]["annotations"] == {MULTUS: "roce-net"}
        assert pod["metadata"]["labels"]["torchscale/experiment"] == "scaling"
        assert pod["spec"]["hostNetwork"] is True
        assert pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"  # the master's service
        [container] = pod["spec"]["containers"]
        assert container["resources"]["limits"]["rdma/ib"] == "2"
        assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}


def test_nothing_asked_adds_nothing() -> None:
    config = k8s_config(nodes="[2]")
    item = by_nodes(manifests_of(config), node_counts(config), 2)
    pod = node_pod(item)
    assert "metadata" not in pod
    assert "securityContext" not in pod["spec"]["containers"][0]
    assert set(item.manifest["spec"]["trainer"]["resourcesPerNode"]["limits"]) == {
        "cpu",
        "memory",
        "nvidia.com/gpu",
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("    host_network: true\n", "a TrainJob cannot set hostNetwork"),
        (
            "    ipc_lock: true\n    pod_patch: podTemplateOverrides\n",
            "podTemplateOverrides cannot set a container's securityContext",
        ),
        ("    rdma_resource: ib\n", "rdma_resource"),
        ("    network_annotations: {'bad key!': x}\n", "network_annotations"),
    ],
)
def test_what_a_trainjob_cannot_express_is_a_config_error(extra: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        k8s_config(k8s_extra=extra)
    assert message in str(info.value)


# --------------------------------------------------------------------------------- warning


def warnings_for(extra: str = "", nodes: str = "[1, 2]", device: str = "") -> list[str]:
    config = k8s_config(nodes=nodes, k8s_extra=extra, extra=device)
    machine = GPU_NODE if not device else Machine(gpu_count=0, cpu_cores=8)
    return network_warnings(build_plan(config, machine))


def test_multi_node_nccl_cells_on_the_pod_network_are_warned_about() -> None:
    [warning] = warnings_for()
    assert "1 multi-node NCCL cell(s)" in warning
    assert "NCCL will use TCP sockets on the pod network" in warning
    for option in ("rdma_resource", "host_network", "network_annotations"):
        assert option in warning


@pytest.mark.parametrize(
    "extra",
    [
        "    rdma_resource: nvidia.com/hostdev\n    ipc_lock: true\n",
        f"    network_annotations: {{'{MULTUS}': roce}}\n",
    ],
)
def test_a_fabric_asked_for_silences_it(extra: str) -> None:
    assert warnings_for(extra) == []


def test_rdma_without_ipc_lock_is_warned_about() -> None:
    [warning] = warnings_for("    rdma_resource: rdma/ib\n")
    assert "without ipc_lock" in warning


def test_one_node_or_gloo_cells_are_not_warned_about() -> None:
    assert warnings_for(nodes="[1]") == []
    assert warnings_for(device="device: cpu\n") == []  # gloo: TCP whatever the pods ask


def test_benchmark_prints_the_warning(tmp_path: Path) -> None:
    from torchscale.interfaces.cli.app import app

    cfg = tmp_path / "k.yaml"
    cfg.write_text(
        "experiment_name: kube\nmodels: [tiny-mlp]\nbatch_sizes: [8]\ngpu_counts: [2]\n"
        "device: cuda\nlauncher:\n  kind: k8s\n  nodes: [2]\n"
        "  k8s: {image: 'reg.example/ts:0.7', results_claim: res, gpus_per_node: 2}\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "NCCL will use TCP sockets" in " ".join(result.output.split())
