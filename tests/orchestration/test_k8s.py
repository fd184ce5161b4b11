"""Kubernetes backend: TrainJob / PyTorchJob manifests per cell, written and applied.

The manifests are checked against minimal JSON schemas cut from the published CRDs (and the
operators' webhook rules) in tests/fixtures/k8s/; each schema names the CRD version it is from.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sized
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from tests.forecast_samples import forecast_of
from torchscale.contracts.errors import ConfigError, LaunchError, ResultsError, UsageError
from torchscale.contracts.schema.forecast import ForecastKey
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.offline.results.forecast_store import load_forecasts, write_forecast
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config import load_config, parse_config
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import Plan
from torchscale.orchestration.schedulers.kubernetes import manifests as manifests_module
from torchscale.orchestration.schedulers.kubernetes.manifests import (
    MAX_NAME,
    K8sManifest,
    apply_manifests,
    k8s_manifests,
    label_value,
    object_name,
    write_k8s_manifests,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "k8s"
GPU_NODE = Machine(gpu_count=2, cpu_cores=8)
CPU_NODE = Machine(gpu_count=0, cpu_cores=8)
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
RESERVED = {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR"}


def _schema(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


REGISTRY: Registry = Registry().with_resource(
    "common.schema.json", Resource.from_contents(_schema("common.schema.json"))
)


def assert_valid(manifest: dict[str, Any], schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(schema, registry=REGISTRY)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(manifest)]
    assert not errors, errors


def trainjob_v21_schema() -> dict[str, Any]:
    """The Trainer v2.1 TrainJob: podTemplateOverrides where v2.2 has runtimePatches, and a
    ContainerOverride without securityContext."""
    schema = _schema("trainjob.schema.json")
    spec = schema["properties"]["spec"]["properties"]
    del spec["runtimePatches"]
    spec["podTemplateOverrides"] = {"$ref": "#/$defs/podTemplateOverrides"}
    del schema["$defs"]["podSpecPatch"]["properties"]["containers"]["items"]["properties"][
        "securityContext"
    ]
    return schema


_FIELD = re.compile(r"^metadata\.(annotations|labels)\['([^']+)'\]$")
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def kubelet_env(entries: list[dict[str, Any]], pod: dict[str, Any] | None = None) -> dict[str, str]:
    """A container's env as the kubelet resolves it: `valueFrom.fieldRef` from the pod's
    metadata (`pod`: {"annotations": {...}, "labels": {...}}; a missing key gives ""), and
    `$(VAR)` expanded from the variables listed *before* (a later or unknown one stays as
    written), as Kubernetes documents dependent environment variables."""
    pod = pod or {}
    env: dict[str, str] = {}
    for entry in entries:
        if "valueFrom" in entry:
            match = _FIELD.match(entry["valueFrom"]["fieldRef"]["fieldPath"])
            assert match, entry
            env[entry["name"]] = pod.get(match[1], {}).get(match[2], "")
        else:
            env[entry["name"]] = _expand(entry["value"], dict(env))
    return env


def _expand(value: str, known: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        return known.get(match[1], match[0])

    return _REFERENCE.sub(one, value)


def k8s_config(
    api: str = "trainjob",
    nodes: str = "[1, 2]",
    gpu_counts: str = "[2]",
    k8s_extra: str = "",
    extra: str = "",
    experiment: str = "scaling",
    models: str = "[tiny-mlp]",
) -> BenchConfig:
    text = f"""\
experiment_name: {experiment}
models: {models}
batch_sizes: [8]
gpu_counts: {gpu_counts}
launcher:
  kind: k8s
  nodes: {nodes}
  k8s:
    image: ghcr.io/acme/torchscale:0.7
    api: {api}
    results_claim: bench-results
    resources: {{cpu: 16, memory: 64Gi}}
{k8s_extra}{extra}"""
    return parse_config(text, "k8s.yaml")


def manifests_of(config: BenchConfig, machine: Machine = GPU_NODE, **kw: Any) -> list[K8sManifest]:
    plan = build_plan(config, machine)
    return k8s_manifests(plan, Path("/out") / plan.experiment, **kw)


def by_nodes(manifests: list[K8sManifest], plan_nodes: dict[str, int], nodes: int) -> K8sManifest:
    return next(m for m in manifests if plan_nodes[m.cell_id] == nodes)


def node_counts(config: BenchConfig, machine: Machine = GPU_NODE) -> dict[str, int]:
    return {p.cell.id: p.cell.nodes for p in build_plan(config, machine)}


def torchrun_flags(argv: list[str]) -> list[str]:
    """The torchrun flags of an argv: what comes before `-m torchscale.rank.worker.main`."""
    return argv[: argv.index("torchscale.rank.worker.main") - 1]


# ---------------------------------------------------------------------------------------------
# TrainJob


def test_trainjob_per_cell_on_gpus() -> None:
    config = k8s_config()
    manifests = manifests_of(config)
    nodes = node_counts(config)
    assert sorted(nodes.values()) == [1, 2]
    assert len(manifests) == 2
    schema = _schema("trainjob.schema.json")
    for item in manifests:
        assert item.kind == "TrainJob"
        assert_valid(item.manifest, schema)
    two = by_nodes(manifests, nodes, 2).manifest
    assert two["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert two["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    trainer = two["spec"]["trainer"]
    assert trainer["numNodes"] == 2
    assert trainer["numProcPerNode"] == 2
    assert trainer["image"] == "ghcr.io/acme/torchscale:0.7"
    assert trainer["resourcesPerNode"] == {
        "limits": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "2"}
    }
    one = by_nodes(manifests, nodes, 1).manifest["spec"]["trainer"]
    assert (one["numNodes"], one["numProcPerNode"]) == (1, 2)


def test_command_uses_the_operators_rendezvous() -> None:
    config = k8s_config()
    item = by_nodes(manifests_of(config), node_counts(config), 2)
    argv = item.manifest["spec"]["trainer"]["command"]
    assert argv[:3] == ["python", "-m", "torch.distributed.run"]
    flags = torchrun_flags(argv)
    assert "--standalone" not in flags
    assert "--nnodes=2" in flags
    assert "--nproc-per-node=2" in flags
    assert "--max-restarts=0" in flags
    # node rank and node 0's address come from PET_* set by the operator, never from us
    assert not [f for f in flags if f.startswith(("--node", "--master", "--rdzv"))]
    assert argv[-4:] == ["-m", "torchscale.rank.worker.main", "--spec", str(item.pod_spec_path)]
    env = kubelet_env(item.manifest["spec"]["trainer"]["env"])
    assert not RESERVED & env.keys()
    assert env["OMP_NUM_THREADS"] == "4"  # 8 cores / 2 ranks per node
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_trainjob_mounts_the_results_claim_and_shm() -> None:
    item = manifests_of(k8s_config())[0]
    [patch] = item.manifest["spec"]["runtimePatches"]
    assert patch["manager"] == "torchscale"
    [job] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == "node"
    pod = job["template"]["spec"]["template"]["spec"]
    claims = [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["volumes"]
        if "persistentVolumeClaim" in v
    ]
    assert claims == ["bench-results"]
    [container] = pod["containers"]
    assert container["name"] == "node"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"/results", "/dev/shm"}


def test_trainjob_v21_pod_template_overrides() -> None:
    for item in manifests_of(k8s_config(), pod_patch="podTemplateOverrides"):
        assert_valid(item.manifest, trainjob_v21_schema())
        [override] = item.manifest["spec"]["podTemplateOverrides"]
        assert override["targetJobs"] == [{"name": "node"}]
        assert "runtimePatches" not in item.manifest["spec"]


def test_no_claim_mounts_only_shm() -> None:
    config = k8s_config()
    config.launcher.k8s.results_claim = None
    item = manifests_of(config)[0]
    assert_valid(item.manifest, _schema("trainjob.schema.json"))
    [job] = item.manifest["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ]
    pod = job["template"]["spec"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["torchscale-shm"]


def test_cpu_cells_ask_for_no_gpus() -> None:
    config = k8s_config(extra="device: cpu\n")
    manifests = manifests_of(config, CPU_NODE)
    assert len(manifests) == 2
    for item in manifests:
        assert_valid(item.manifest, _schema("trainjob.schema.json"))
        trainer = item.manifest["spec"]["trainer"]
        assert trainer["resourcesPerNode"] == {"limits": {"cpu": "16", "memory": "64Gi"}}
        assert trainer["numProcPerNode"] == 2
        env = {e["name"] for e in trainer["env"]}
        assert "CUDA_VISIBLE_DEVICES" not in env
        assert item.spec.cell.backend == "gloo"


def test_gpus_per_node_asks_for_whole_nodes() -> None:
    config = k8s_config(gpu_counts="[1]", k8s_extra="    gpus_per_node: 8\n")
    for item in manifests_of(config, Machine(gpu_count=8, cpu_cores=8)):
        trainer = item.manifest["spec"]["trainer"]
        assert trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "8"
        assert trainer["numProcPerNode"] == 1


def test_skipped_cells_get_no_manifest() -> None:
    config = k8s_config(gpu_counts="[2, 4]")  # 4 per node on 2-GPU nodes: skipped
    plan = build_plan(config, GPU_NODE)
    assert len(plan) == 4 and len(plan.runnable) == 2
    ids = [m.cell_id for m in k8s_manifests(plan, Path("/out/scaling"))]
    assert ids == [p.cell.id for p in plan.runnable]


def test_a_skip_names_the_configured_gpus_per_node_not_this_node() -> None:
    """The submitting host is not a node of the cluster: a skip cites where the count came
    from, never "this node"."""
    from torchscale.orchestration.schedulers.kubernetes.launcher import KubernetesJobs

    config = k8s_config(gpu_counts="[2, 4]", k8s_extra="    gpus_per_node: 2\n")
    plan = build_plan(config, KubernetesJobs().machine(config))
    reasons = {p.skip_reason for p in plan if p.skip_reason}
    assert "needs 4 GPUs; a node has 2 (launcher.k8s.gpus_per_node)" in reasons
    assert not any("this node" in reason for reason in reasons)


def test_rendezvous_variables_in_launcher_env_are_refused() -> None:
    config = k8s_config(k8s_extra="  env: {PET_NNODES: '3', NCCL_DEBUG: INFO}\n")
    with pytest.raises(UsageError, match="PET_NNODES"):
        manifests_of(config)


@pytest.mark.parametrize(
    ("kind", "breakage"),
    [
        ("trainjob", lambda m: m["metadata"].update(name="Upper-Case")),
        ("trainjob", lambda m: m["metadata"].update(name="9starts-with-a-digit")),
        ("trainjob", lambda m: m["spec"].pop("runtimeRef")),
        ("trainjob", lambda m: m["spec"]["trainer"].update(numNodes="2")),
        ("trainjob", lambda m: m["spec"]["trainer"].update(imagee="typo")),
        ("trainjob", lambda m: m["spec"]["trainer"]["env"].append({"name": "PET_NNODES"})),
        ("trainjob", lambda m: m["metadata"]["labels"].update(cell="x" * 64)),
        ("pytorchjob", lambda m: m["spec"].pop("pytorchReplicaSpecs")),
        ("pytorchjob", lambda m: m["spec"].update(nprocPerNode=2)),
        (
            "pytorchjob",
            lambda m: m["spec"]["pytorchReplicaSpecs"]["Master"].update(replicas=2),
        ),
        (
            "pytorchjob",
            lambda m: m["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][
                0
            ].update(name="trainer"),
        ),
    ],
)
def test_schemas_reject_broken_manifests(kind: str, breakage: Any) -> None:
    """The schemas are strict enough to matter: each of these breaks one rule."""
    config = k8s_config(api=kind)
    item = by_nodes(manifests_of(config), node_counts(config), 2)
    manifest = json.loads(json.dumps(item.manifest))
    breakage(manifest)
    validator = jsonschema.Draft202012Validator(_schema(f"{kind}.schema.json"), registry=REGISTRY)
    assert list(validator.iter_errors(manifest))


# ---------------------------------------------------------------------------------------------
# PyTorchJob


def test_pytorchjob_master_and_workers() -> None:
    config = k8s_config(api="pytorchjob")
    manifests = manifests_of(config)
    nodes = node_counts(config)
    schema = _schema("pytorchjob.schema.json")
    for item in manifests:
        assert item.kind == "PyTorchJob"
        assert_valid(item.manifest, schema)
    one = by_nodes(manifests, nodes, 1).manifest["spec"]
    assert list(one["pytorchReplicaSpecs"]) == ["Master"]  # no Worker on one node
    two = by_nodes(manifests, nodes, 2).manifest["spec"]
    assert two["nprocPerNode"] == "2"
    replicas = two["pytorchReplicaSpecs"]
    assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"]) == (1, 1)
    for replica in replicas.values():
        assert replica["restartPolicy"] == "Never"
        [container] = replica["template"]["spec"]["containers"]
        assert container["name"] == "pytorch"
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "2"
        flags = torchrun_flags(container["command"])
        assert "--standalone" not in flags and "--nnodes=2" in flags


def test_pytorchjob_four_nodes_has_three_workers() -> None:
    config = k8s_config(api="pytorchjob", nodes="[4]")
    [item] = manifests_of(config)
    assert item.manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
    assert_valid(item.manifest, _schema("pytorchjob.schema.json"))


# ---------------------------------------------------------------------------------------------
# names and labels


def assert_legal_name(name: str) -> None:
    assert DNS_1035.match(name), name
    assert len(name) <= MAX_NAME <= 63 - len("-worker-4095")


def test_names_legal_and_unique_for_long_labels() -> None:
    long = "My.Very_Long Model Label " * 6
    models = f"[{{name: tiny-mlp, label: '{long}A'}}, {{name: tiny-mlp, label: '{long}B'}}]"
    config = k8s_config(models=models, nodes="[1, 2, 3]", experiment="2026-Q3.run_ALPHA")
    manifests = manifests_of(config)
    assert len(manifests) == 6
    names = [m.name for m in manifests]
    assert len(set(names)) == len(names)
    for item in manifests:
        assert_legal_name(item.name)
        assert item.name.startswith("ts-2026-q3-run-alpha-")
        assert item.manifest["metadata"]["name"] == item.name
        labels = item.manifest["metadata"]["labels"]
        for value in labels.values():
            assert len(value) <= 63 and LABEL_VALUE.match(value), value
        annotations = item.manifest["metadata"]["annotations"]
        assert annotations["torchscale/cell-id"] == item.cell_id
        assert annotations["torchscale/experiment"] == "2026-Q3.run_ALPHA"
        assert_valid(item.manifest, _schema("trainjob.schema.json"))
    assert len({m.manifest["metadata"]["labels"]["torchscale/cell"] for m in manifests}) == 6


def test_object_name_differs_past_the_cut_and_by_case() -> None:
    base = "x" * 80
    names = {object_name("exp", base + "A"), object_name("exp", base + "B")}
    names.add(object_name("exp", base + "a"))
    assert len(names) == 3
    for name in names:
        assert_legal_name(name)
    assert object_name("exp", "cell") == object_name("exp", "cell")  # stable across runs


def test_label_value_keeps_legal_values() -> None:
    assert label_value("tiny-mlp__b8__w2__fp32__ddp__b4045dc1") == (
        "tiny-mlp__b8__w2__fp32__ddp__b4045dc1"
    )
    for text in ("a" * 64, "ends-with-.", "_starts", "spaces and/slashes", "é"):
        value = label_value(text)
        assert len(value) <= 63 and LABEL_VALUE.match(value) and value, (text, value)
    assert label_value("a" * 64) != label_value("a" * 65)


# ---------------------------------------------------------------------------------------------
# the worker spec inside the pod


def test_in_pod_spec_paths() -> None:
    config = k8s_config(k8s_extra="    results_mount: /mnt/bench\n")
    for item in manifests_of(config):
        root = "/mnt/bench/scaling"
        assert item.spec.result_path == f"{root}/cells/{item.cell_id}.json"
        assert item.spec.steps_path == f"{root}/steps/{item.cell_id}.jsonl"
        assert str(item.pod_spec_path) == f"{root}/k8s/specs/{item.cell_id}.json"
        assert item.spec.cell.id == item.cell_id
        assert item.path == Path("/out/scaling/k8s") / f"{item.name}.yaml"
        assert item.spec_path == Path("/out/scaling/k8s/specs") / f"{item.cell_id}.json"
        argv = item.manifest["spec"]["trainer"]["command"]
        assert argv[argv.index("--spec") + 1] == str(item.pod_spec_path)
        log_dir = argv[argv.index("--log-dir") + 1]
        assert log_dir.startswith(f"{root}/logs/{item.cell_id}")


def test_write_manifests_and_specs(tmp_path: Path) -> None:
    config = k8s_config(api="pytorchjob")
    plan: Plan = build_plan(config, GPU_NODE)
    store = ResultStore.for_experiment(tmp_path, plan.experiment)
    paths = write_k8s_manifests(plan, store)
    expected = k8s_manifests(plan, store.root)
    assert paths == [m.path for m in expected]
    for item, path in zip(expected, paths, strict=True):
        assert path.parent == store.root / "k8s"
        text = path.read_text(encoding="utf-8")
        assert "&id" not in text and "*id" not in text  # no YAML anchors or aliases
        assert yaml.safe_load(text) == item.manifest
        spec = WorkerSpec.model_validate_json(item.spec_path.read_text(encoding="utf-8"))
        assert spec.result_path == f"/results/scaling/cells/{item.cell_id}.json"
        assert item.spec_path == store.root / "k8s" / "specs" / f"{item.cell_id}.json"


def test_write_error_is_a_results_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    plan = build_plan(k8s_config(), GPU_NODE)
    with pytest.raises(ResultsError, match="cannot write") as info:
        write_k8s_manifests(plan, ResultStore(blocker / "scaling"))
    assert "\n" not in str(info.value)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_nodes(nodes: list[subprocess.Popen[bytes]], timeout_s: float) -> list[int | None]:
    """Every node's exit code; once one fails (or time is up) the others are killed at once,
    as an operator would restart the job, rather than left in torchelastic's 300 s exit
    barrier waiting for an agent that will never come."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        codes = [node.poll() for node in nodes]
        if all(code is not None for code in codes) or any(code for code in codes):
            break
        time.sleep(0.2)
    for node in nodes:
        if node.poll() is None:
            node.kill()
            node.wait()
    return [node.returncode for node in nodes]


@pytest.mark.slow  # two real torchrun 'nodes'
def test_command_runs_under_the_operators_environment(tmp_path: Path) -> None:
    """Two 'nodes' on this machine, each the manifest's command and env plus the PET_*
    variables Trainer's torch plugin sets (node 0's address and port, node rank): the cell
    trains over both and rank 0's result lands on the 'claim' where the host looks for it."""
    claim = tmp_path / "claim"
    config = parse_config(
        f"""\
experiment_name: sim
models: [tiny-mlp]
batch_sizes: [8]
gpu_counts: [1]
device: cpu
measurement: {{steps: 3, warmup_steps: 1, repeats: 1, comm_overhead: false, flops: false}}
launcher:
  kind: k8s
  nodes: [2]
  k8s: {{image: unused, results_claim: c, results_mount: {claim}}}
""",
        "sim.yaml",
    )
    plan = build_plan(config, Machine(gpu_count=0, cpu_cores=2))
    store = ResultStore.for_experiment(claim, plan.experiment)  # the claim is the output dir
    [path] = write_k8s_manifests(plan, store)
    # a forecast of the cell made before the job: no torchscale process follows the pods, so
    # the cell they write is scored when its experiment is read
    key = ForecastKey.of_cell(plan.runnable[0].cell)
    write_forecast(store.root, forecast_of(key, 0.01, 0.005, 0.02, forecast_id="before"))
    trainer = yaml.safe_load(path.read_text(encoding="utf-8"))["spec"]["trainer"]
    argv = [sys.executable, *trainer["command"][1:]]  # the image's `python` is this one here
    operator = {"PET_NNODES": "2", "PET_NPROC_PER_NODE": "1", "PET_MASTER_ADDR": "127.0.0.1"}
    operator["PET_MASTER_PORT"] = str(free_port())
    index = "batch.kubernetes.io/job-completion-index"  # the Indexed Job's, per pod
    envs = [
        {**kubelet_env(trainer["env"], {"annotations": {index: str(rank)}}), **operator}
        for rank in (0, 1)
    ]
    assert envs[0]["TORCHELASTIC_ERROR_FILE"] != envs[1]["TORCHELASTIC_ERROR_FILE"]
    nodes = [
        subprocess.Popen(argv, env={**os.environ, **env, "PET_NODE_RANK": str(rank)})
        for rank, env in enumerate(envs)
    ]
    codes = wait_for_nodes(nodes, timeout_s=180)
    logs = store.root / "logs"  # both nodes' rank logs, for the failure message
    assert codes == [0, 0], "\n".join(
        f"{log}: {log.read_text(encoding='utf-8', errors='replace')[-2000:]}"
        for log in sorted(logs.rglob("std*.log"))
    )
    cell_id = plan.runnable[0].cell.id
    result = json.loads(store.cell_path(cell_id).read_text(encoding="utf-8"))
    assert result["status"] == "ok"
    assert (result["cell"]["world_size"], result["cell"]["nodes"]) == (2, 2)
    assert store.steps_path(cell_id).exists()
    assert result["started_at"] is not None  # rank 0's clock: nothing on the host recorded it
    table = load_forecasts(store.root)
    assert list(table["scored_cell_id"]) == [cell_id]
    assert table["measured_step_s"].iloc[0] == result["step_time"]["p50"]


# ---------------------------------------------------------------------------------------------
# config errors


def test_unknown_k8s_field_names_its_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "experiment_name: x\n"
        "models: [tiny-mlp]\n"
        "batch_sizes: [8]\n"
        "gpu_counts: [2]\n"
        "launcher:\n"
        "  kind: k8s\n"
        "  k8s:\n"
        "    image: img\n"
        "    imagee: typo\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    [problem] = info.value.problems
    assert problem.path == "launcher.k8s.imagee"
    assert problem.line == 9
    assert "image" in problem.message  # the did-you-mean hint
    assert problem.render().startswith(f"{path}:9")


# ---------------------------------------------------------------------------------------------
# kubectl apply


def fake_kubectl(bin_dir: Path, log: Path, exit_code: int = 0) -> Path:
    """A `kubectl` that records its argv (one line per call) and answers like kubectl."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "kubectl"
    answer = (
        'echo "trainjob.trainer.kubeflow.org/x created"'
        if exit_code == 0
        else 'echo "Error from server (BadRequest): error when creating \\"$3\\":" >&2\n'
        'echo "strict decoding error: unknown field \\"spec.runtimePatches\\"" >&2'
    )
    script.write_text(
        f'#!/bin/sh\necho "$*" >> "{log}"\n{answer}\nexit {exit_code}\n', encoding="utf-8"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


KUBECTL_REFUSES = (
    'Error from server (BadRequest): error when creating "{path}":\n'
    'strict decoding error: unknown field "spec.runtimePatches"\n'
)


def kubectl_answering(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int = 0, log: Path | None = None
) -> list[list[str]]:
    """`kubectl` on PATH (for shutil.which; never run) and answered in-process as fake_kubectl's
    script answers: the one call that runs it (manifests' subprocess.run) returns kubectl's
    lines, and logs its arguments in `log` as the script does; the argv of each call."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "kubectl").write_text("", encoding="utf-8")
    (bin_dir / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        if log is not None:
            with log.open("a", encoding="utf-8") as logged:
                logged.write(" ".join(argv[1:]) + "\n")
        if exit_code == 0:
            created = "trainjob.trainer.kubeflow.org/x created\n"
            return subprocess.CompletedProcess(argv, 0, created, "")
        refused = KUBECTL_REFUSES.format(path=argv[3])
        return subprocess.CompletedProcess(argv, exit_code, "", refused)

    only_here = SimpleNamespace(run=run, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(manifests_module, "subprocess", only_here)
    return calls


def written(tmp_path: Path) -> list[Path]:
    plan = build_plan(k8s_config(), GPU_NODE)
    return write_k8s_manifests(plan, ResultStore.for_experiment(tmp_path / "out", "scaling"))


def test_apply_without_kubectl_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(UsageError, match="kubectl") as info:
        apply_manifests(written(tmp_path))
    assert "\n" not in str(info.value)


@pytest.mark.slow  # starts kubectl
def test_apply_runs_kubectl_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "argv.log"
    fake_kubectl(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    paths = written(tmp_path)
    applied = apply_manifests(paths)
    assert [a.path for a in applied] == paths
    assert {a.output for a in applied} == {"trainjob.trainer.kubeflow.org/x created"}
    calls = log.read_text(encoding="utf-8").splitlines()
    assert calls == [f"apply -f {p}" for p in paths]


def test_apply_runs_kubectl_apply_once_per_file_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = kubectl_answering(tmp_path / "bin", monkeypatch)
    paths = written(tmp_path)
    applied = apply_manifests(paths)
    assert [a.path for a in applied] == paths
    assert {a.output for a in applied} == {"trainjob.trainer.kubeflow.org/x created"}
    assert calls == [[str(tmp_path / "bin" / "kubectl"), "apply", "-f", str(p)] for p in paths]


def _check_refused_apply(paths: list[Path], calls: Callable[[], Sized]) -> None:
    """Checks a refused apply is one line with kubectl's message, and stops at the first file."""
    with pytest.raises(LaunchError) as info:
        apply_manifests(paths)
    message = str(info.value)
    assert "\n" not in message
    assert "unknown field" in message and "exit 1" in message and str(paths[0]) in message
    assert len(calls()) == 1  # stopped at the first


@pytest.mark.slow  # starts kubectl
def test_failing_apply_is_one_line_with_kubectls_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "argv.log"
    fake_kubectl(tmp_path / "bin", log, exit_code=1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    paths = written(tmp_path)
    _check_refused_apply(paths, lambda: log.read_text(encoding="utf-8").splitlines())


def test_a_refused_apply_is_one_line_read_from_kubectls_exit_and_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = kubectl_answering(tmp_path / "bin", monkeypatch, exit_code=1)
    paths = written(tmp_path)
    _check_refused_apply(paths, lambda: calls)


def test_benchmark_dry_run_writes_the_manifests_and_applies_nothing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app

    cfg = tmp_path / "k.yaml"
    cfg.write_text(
        "experiment_name: kube\nmodels: [tiny-mlp]\nbatch_sizes: [8]\ngpu_counts: [1]\n"
        "device: cpu\nlauncher:\n  kind: k8s\n  nodes: [1, 2]\n"
        "  k8s: {image: 'reg.example/ts:0.7', results_claim: res, apply: true}\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    manifests = sorted((out / "kube" / "k8s").glob("*.yaml"))
    assert len(manifests) == 2
    assert "nothing applied" in result.output
    assert len(list((out / "kube" / "k8s" / "specs").glob("*.json"))) == 2


def test_a_run_writes_every_planned_cell_to_the_sweep_state(tmp_path: Path) -> None:
    """Not applied and not followed: the report lists the planned cells without a result as
    not yet run, and says why it cannot tell more."""
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app
    from torchscale.offline.results.experiment import load as load_experiment
    from torchscale.offline.results.sweep_progress import sweep_progress

    cfg = tmp_path / "k.yaml"
    cfg.write_text(
        "experiment_name: kube\nmodels: [tiny-mlp]\nbatch_sizes: [8]\ngpu_counts: [1, 2]\n"
        "device: cpu\nlauncher:\n  kind: k8s\n  k8s: {image: 'reg.example/ts:0.7', "
        "results_claim: res}\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out)])
    assert result.exit_code == 0, result.output
    progress = sweep_progress(load_experiment(out / "kube"))
    assert [c.state for c in progress.cells] == ["no result yet", "no result yet"]
    sentence = progress.sentence() or ""
    assert sentence.startswith("Sweep not followed to its end (manifests written, not applied")


@pytest.mark.slow  # starts kubectl
def test_a_run_with_no_result_yet_is_reported_by_its_sweep_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Applied and no pod ended yet (no `cells/`, only sweep.json): `report` finds the folder,
    opens with the sweep's state and lists every planned cell as no result yet; nothing is
    measured and nothing called complete, exit 0 as for a folder of failed cells only."""
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app
    from torchscale.orchestration.schedulers.kubernetes.launcher import UNFOLLOWED

    fake_kubectl(tmp_path / "bin", tmp_path / "argv.log")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    cfg = tmp_path / "k.yaml"
    cfg.write_text(
        "experiment_name: kube\nmodels: [tiny-mlp]\nbatch_sizes: [8]\ngpu_counts: [1, 2]\n"
        "device: cpu\nlauncher:\n  kind: k8s\n  k8s: {image: 'reg.example/ts:0.7', "
        "results_claim: res, apply: true}\n"
    )
    runner = CliRunner()
    ran = runner.invoke(app, ["benchmark", "-c", str(cfg), "-o", str(tmp_path / "out")])
    assert ran.exit_code == 0, ran.output
    kube = tmp_path / "out" / "kube"
    assert (kube / "sweep.json").is_file() and not (kube / "cells").exists()
    assert len((tmp_path / "argv.log").read_text(encoding="utf-8").splitlines()) == 2
    labels = ["tiny-mlp b8 x1 fp32 ddp", "tiny-mlp b8 x2 fp32 ddp"]
    opening = f"Sweep not followed to its end ({UNFOLLOWED})."
    not_yet = "No result yet: tiny-mlp b8 x1 fp32 ddp, b8 x2 fp32 ddp."  # under the headline
    none_yet = f"none of the 2 planned cells has a result yet ({', '.join(labels)})"
    for full in ([], ["--full"]):
        md = tmp_path / f"report{len(full)}.md"
        args = ["report", "-s", str(kube), *full]
        term = runner.invoke(app, [*args, "-f", "term"])
        written = runner.invoke(app, [*args, "-f", "md", "-o", str(md)])
        for result in (term, written):
            assert result.exit_code == 0 and "Traceback" not in result.output, result.output
        text = md.read_text(encoding="utf-8")
        headline = text.splitlines()[2]  # under the title
        assert headline.startswith(f"✖ **{opening} No figures to use: {none_yet}"), headline
        said = " ".join(term.output.split())
        assert said.startswith(f"torchscale report: kube ✖ {opening} No figures to use: {none_yet}")
        for report in (text, said):
            assert "complete" not in report and "can be used" not in report
            assert not_yet in report
        if full:  # the failures table: each planned cell, no result yet and why
            # a row per model and why: both cells in one
            grouped = "tiny-mlp b8 x1 fp32 ddp, b8 x2 fp32 ddp"
            assert f"| ▲ {grouped} | no result yet | {UNFOLLOWED} |" in text
            assert said.count("no result handed to") == 1  # the terminal's table wraps
            # the sections with no figure say why: planned, not "no benchmark sweep"
            assert "no benchmark sweep" not in text, text
            assert "none of the 2 planned cells has finished" in text


def test_an_applied_sweep_with_no_result_yet_is_reported_by_its_sweep_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above with kubectl answered in-process: the apply, the sweep's state and
    every report of it are this process's own work."""
    kubectl_answering(tmp_path / "bin", monkeypatch, log=tmp_path / "argv.log")
    test_a_run_with_no_result_yet_is_reported_by_its_sweep_state(tmp_path, monkeypatch)
