"""Kubernetes: every cell's launch as data, one job manifest per cell (docs/multinode.md,
"Kubernetes": the two job kinds, the results claim, the per-pod error files and why their
index comes from a variable listed before them, the network settings).

Both kinds run a local launch's torchrun command (Trainer runs `spec.trainer.command` as given,
wrapping nothing in torchrun) with `--nnodes=N` in place of `--standalone`: the operators set
the PET_* variables torchrun reads as its flags' defaults (Trainer's webhook rejects a TrainJob
that sets them itself). A PyTorchJob needs training operator v1.7 or later (`nprocPerNode`).
"""

from __future__ import annotations

import copy
import hashlib
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml

from torchscale.contracts.errors import LaunchError, UsageError
from torchscale.contracts.rank_diagnostics import ERROR_FILE_ENV
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import K8sConfig
from torchscale.orchestration.launch.torchrun_env import is_inherited_distributed_var
from torchscale.orchestration.plan.planned import Plan, PlannedCell
from torchscale.orchestration.schedulers.slurm.node import node_error_file

TRAINJOB_API = "trainer.kubeflow.org/v1alpha1"
PYTORCHJOB_API = "kubeflow.org/v1"
TRAINER_GROUP = "trainer.kubeflow.org"
# Trainer's torch runtimes name their replicated job and trainer container `node`; the training
# operator finds a PyTorchJob's container (and its port) by the name `pytorch`
TRAINER_JOB = "node"
PYTORCH_CONTAINER = "pytorch"
PATCH_MANAGER = "torchscale"  # owner of our entry in a TrainJob's runtimePatches
RESULTS_VOLUME = "torchscale-results"
POD_INDEX_ENV = "TORCHSCALE_POD_INDEX"  # this pod's index, for the error file's name
# where a pod carries its index: the Indexed Job's completion index (a TrainJob's node rank;
# Trainer's torch plugin reads PET_NODE_RANK from it) and the training operator's replica index
COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
REPLICA_INDEX_FIELD = "metadata.labels['training.kubeflow.org/replica-index']"
IPC_LOCK = {"capabilities": {"add": ["IPC_LOCK"]}}
HOST_NETWORK_DNS = "ClusterFirstWithHostNet"  # cluster DNS (the master's service) on hostNetwork
SHM_VOLUME = "torchscale-shm"  # a pod's /dev/shm is 64 MiB unless mounted: too small for NCCL
SHM_PATH = "/dev/shm"  # noqa: S108 (a mount point in the pod; nothing here writes to it)
GPU_RESOURCE = "nvidia.com/gpu"
LABEL_PREFIX = "torchscale/"
APPLY_TIMEOUT_S = 120.0
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
MAX_LABEL = 63
# The longest names an operator derives from ours are the pods `<name>-node-0-<index>` (JobSet)
# and `<name>-worker-<index>`: 12 characters for 4096 nodes, and they must stay 63-char labels.
MAX_NAME = MAX_LABEL - len("-worker-4095")
HASH_CHARS = 8

# the Trainer API that mounts volumes into a TrainJob's pods: runtimePatches since Trainer
# v2.2, podTemplateOverrides in v2.1 (a breaking rename; v2.0 had podSpecOverrides)
PodPatchApi = Literal["runtimePatches", "podTemplateOverrides"]
# one pod's torchrun error file, named as a Slurm node's: where the failure reader looks
pod_error_file = node_error_file


@dataclass(frozen=True)
class PodPaths:
    """Where a cell's files are inside its pods (the claim holds the output directory)."""

    experiment: ResultLayout[PurePosixPath]  # <mount>/<experiment>
    cell_id: str

    @property
    def result(self) -> PurePosixPath:
        return self.experiment.cell_path(self.cell_id)

    @property
    def steps(self) -> PurePosixPath:
        return self.experiment.steps_path(self.cell_id)

    @property
    def spec(self) -> PurePosixPath:
        return self.experiment.k8s_spec_path(self.cell_id)

    @property
    def logs(self) -> PurePosixPath:
        return self.experiment.log_dir(self.cell_id)


@dataclass(frozen=True)
class K8sManifest:
    """One cell's job: its object, the worker spec it reads, and where both are written."""

    cell_id: str
    name: str  # metadata.name, also what `kubectl get/logs/delete` take
    manifest: dict[str, Any]
    spec: WorkerSpec  # result_path and steps_path are the in-pod paths
    pod_spec_path: PurePosixPath  # --spec as the pods see it
    path: Path  # <store root>/k8s/<name>.yaml
    spec_path: Path  # <store root>/k8s/specs/<cell_id>.json (the pods' pod_spec_path)

    @property
    def kind(self) -> str:
        return str(self.manifest["kind"])


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]


def object_name(experiment: str, cell_id: str) -> str:
    """A DNS-1035 label (a letter first: TrainJob's CRD and the PyTorchJob webhook demand it)
    of at most MAX_NAME characters, readable and unique per cell.

    Lower-cased experiment and cell id with every other character run turned into '-', cut to
    fit, then a hash of the untruncated pair: two cells whose ids differ only past the cut, or
    only in case, still get different names.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", f"{experiment}-{cell_id}".lower()).strip("-")
    if not slug[:1].isalpha():
        slug = f"ts-{slug}".rstrip("-")
    head = slug[: MAX_NAME - HASH_CHARS - 1].rstrip("-")
    return f"{head}-{_short_hash(experiment + chr(0) + cell_id)}"


def label_value(text: str) -> str:
    """`text` as a legal label value: itself when it is one, else cut and made unique with a
    hash (the full text goes into an annotation)."""
    if len(text) <= MAX_LABEL and _LABEL_VALUE.match(text):
        return text
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text)
    head = cleaned[: MAX_LABEL - HASH_CHARS - 1].strip("-_.")
    return f"{head}-{_short_hash(text)}" if head else _short_hash(text)


def _metadata(name: str, namespace: str, experiment: str, cell_id: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": {
            f"{LABEL_PREFIX}experiment": label_value(experiment),
            f"{LABEL_PREFIX}cell": label_value(cell_id),
        },
        "annotations": {f"{LABEL_PREFIX}experiment": experiment, f"{LABEL_PREFIX}cell-id": cell_id},
    }


def _check_env(env: Mapping[str, str]) -> None:
    """launcher.env must leave the rendezvous to the operator (Trainer's webhook rejects PET_*
    in a TrainJob; in a PyTorchJob they would silently change the world)."""
    taken = sorted(name for name in env if is_inherited_distributed_var(name))
    if taken:
        raise UsageError(
            f"launcher.env sets {', '.join(taken)}: on Kubernetes the job operator sets the "
            "rendezvous variables; remove them"
        )


def worker_command(planned: PlannedCell, paths: PodPaths) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of a cell's torchrun in each pod: the local command with only `--nnodes` as
    its rendezvous; torchrun's default static rendezvous takes node rank and node 0's address
    from PET_NODE_RANK and PET_MASTER_ADDR/PORT, which the operator sets."""
    _check_env(planned.launch.extra_env)
    shared = planned.sharing_compile_cache(paths.experiment.compile_cache_dir)  # on the claim
    local = shared.command(
        Path(str(paths.spec)),
        Path(str(paths.logs)),
        {},
        python="python",  # the image's interpreter
        rendezvous=(f"--nnodes={planned.cell.nodes}",),
    )
    return local.argv, dict(local.env_overrides)


def _limits(config: K8sConfig, planned: PlannedCell) -> dict[str, str]:
    """Per pod: launcher.k8s.resources, plus whole-node GPUs (gpus_per_node, else the cell's
    ranks per node) on CUDA, plus the RDMA device (rdma_resource) when asked for."""
    limits = dict(config.resources)
    if planned.cell.device == "cuda":
        limits[GPU_RESOURCE] = str(config.gpus_per_node or planned.launch.nproc_per_node)
    if config.rdma_resource:
        limits[config.rdma_resource] = str(config.rdma_per_node)
    return limits


def _volumes(config: K8sConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, volume mounts): a memory-backed /dev/shm, and the results claim when set."""
    volumes: list[dict[str, Any]] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": SHM_PATH}]
    if config.results_claim:
        volumes.append(
            {"name": RESULTS_VOLUME, "persistentVolumeClaim": {"claimName": config.results_claim}}
        )
        mounts.append({"name": RESULTS_VOLUME, "mountPath": config.results_mount})
    return volumes, mounts


def _pod_env(
    env: Mapping[str, str], tag: str, index_field: str | None = None
) -> list[dict[str, Any]]:
    """The container's env: `env` with the error file made this pod's own (`pod_error_file`
    with `tag`); with `index_field`, the pod's index first, as POD_INDEX_ENV, for `tag` to
    refer to as $(POD_INDEX_ENV) (expanded only from variables listed earlier)."""
    entries: list[dict[str, Any]] = []
    if index_field is not None:
        source = {"fieldRef": {"fieldPath": index_field}}
        entries.append({"name": POD_INDEX_ENV, "valueFrom": source})
    for key, value in env.items():
        own = pod_error_file(value, tag) if key == ERROR_FILE_ENV else value
        entries.append({"name": key, "value": own})
    return entries


def _node_pod_patch(config: K8sConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod metadata, pod spec) a TrainJob patches into its `node` pods: our volumes, the
    container's IPC_LOCK, the secondary network's annotations."""
    volumes, mounts = _volumes(config)
    container: dict[str, Any] = {"name": TRAINER_JOB, "volumeMounts": mounts}
    if config.ipc_lock:
        container["securityContext"] = copy.deepcopy(IPC_LOCK)
    annotations = dict(config.network_annotations)
    metadata = {"annotations": annotations} if annotations else {}
    return metadata, {"volumes": volumes, "containers": [container]}


def _pod_patch(config: K8sConfig, api: PodPatchApi) -> dict[str, Any]:
    """The TrainJob spec entry that patches the `node` pods (`_node_pod_patch`)."""
    metadata, pod_spec = _node_pod_patch(config)
    if api == "podTemplateOverrides" and config.ipc_lock:
        raise UsageError(
            "launcher.k8s.ipc_lock: Trainer 2.1's podTemplateOverrides cannot set a "
            "container's securityContext (use runtimePatches, Trainer 2.2+)"
        )
    if api == "podTemplateOverrides":
        override: dict[str, Any] = {"targetJobs": [{"name": TRAINER_JOB}]}
        if metadata:
            override["metadata"] = metadata
        return {"podTemplateOverrides": [{**override, "spec": pod_spec}]}
    pod: dict[str, Any] = {"metadata": metadata} if metadata else {}
    job = {"name": TRAINER_JOB, "template": {"spec": {"template": {**pod, "spec": pod_spec}}}}
    patch = {"template": {"spec": {"replicatedJobs": [job]}}}
    return {"runtimePatches": [{"manager": PATCH_MANAGER, "trainingRuntimeSpec": patch}]}


def trainjob(
    planned: PlannedCell,
    config: K8sConfig,
    metadata: dict[str, Any],
    paths: PodPaths,
    pod_patch: PodPatchApi = "runtimePatches",
) -> dict[str, Any]:
    """A Kubeflow Trainer v2 TrainJob running the cell on the configured torch runtime."""
    argv, env = worker_command(planned, paths)
    trainer: dict[str, Any] = {
        "image": config.image,
        "command": argv,
        # node k (the completion index, = PET_NODE_RANK) writes error-node<k>.json
        "env": _pod_env(env, f"$({POD_INDEX_ENV})", COMPLETION_INDEX_FIELD),
        "numNodes": planned.cell.nodes,
        "numProcPerNode": planned.launch.nproc_per_node,
    }
    limits = _limits(config, planned)
    if limits:
        trainer["resourcesPerNode"] = {"limits": limits}
    spec: dict[str, Any] = {
        "runtimeRef": {
            "name": config.runtime,
            "apiGroup": TRAINER_GROUP,
            "kind": "ClusterTrainingRuntime",
        },
        "trainer": trainer,
        **_pod_patch(config, pod_patch),
    }
    return {"apiVersion": TRAINJOB_API, "kind": "TrainJob", "metadata": metadata, "spec": spec}


def _replica(replicas: int, pod: dict[str, Any], env: list[dict[str, Any]]) -> dict[str, Any]:
    """A replica spec with its own copy of the pod template (shared objects would come out of
    yaml.safe_dump as anchors and aliases, which some tools reading manifests reject) and its
    container's `env`."""
    template = copy.deepcopy(pod)
    template["spec"]["containers"][0]["env"] = env
    # restartPolicy Never: a restarted pod would rerun the cell and mix two runs
    return {"replicas": replicas, "restartPolicy": "Never", "template": template}


def _pytorchjob_pod(
    config: K8sConfig, planned: PlannedCell, argv: list[str], labels: dict[str, str]
) -> dict[str, Any]:
    """The pod template of every PyTorchJob replica (its env set per replica by `_replica`)."""
    volumes, mounts = _volumes(config)
    container: dict[str, Any] = {
        "name": PYTORCH_CONTAINER,
        "image": config.image,
        "command": argv,
        "volumeMounts": mounts,
    }
    limits = _limits(config, planned)
    if limits:
        container["resources"] = {"limits": limits}
    if config.ipc_lock:
        container["securityContext"] = copy.deepcopy(IPC_LOCK)
    spec: dict[str, Any] = {"containers": [container], "volumes": volumes}
    if config.host_network:
        spec.update(hostNetwork=True, dnsPolicy=HOST_NETWORK_DNS)
    metadata: dict[str, Any] = {"labels": labels}
    if config.network_annotations:
        metadata["annotations"] = dict(config.network_annotations)
    return {"metadata": metadata, "spec": spec}


def pytorchjob(
    planned: PlannedCell, config: K8sConfig, metadata: dict[str, Any], paths: PodPaths
) -> dict[str, Any]:
    """A kubeflow.org/v1 PyTorchJob: Master plus nodes - 1 Workers (none on one node)."""
    argv, env = worker_command(planned, paths)
    pod = _pytorchjob_pod(config, planned, argv, metadata["labels"])
    # the Master is node 0; Worker i (node i + 1) takes i from its replica-index label
    replicas = {"Master": _replica(1, pod, _pod_env(env, "-master"))}
    if planned.cell.nodes > 1:
        workers = _pod_env(env, f"-worker$({POD_INDEX_ENV})", REPLICA_INDEX_FIELD)
        replicas["Worker"] = _replica(planned.cell.nodes - 1, pod, workers)
    spec = {
        "nprocPerNode": str(planned.launch.nproc_per_node),
        "runPolicy": {"backoffLimit": 0},
        "pytorchReplicaSpecs": replicas,
    }
    return {"apiVersion": PYTORCHJOB_API, "kind": "PyTorchJob", "metadata": metadata, "spec": spec}


def k8s_manifests(
    plan: Plan, store_root: Path, pod_patch: PodPatchApi = "runtimePatches"
) -> list[K8sManifest]:
    """One manifest per runnable cell (skipped cells have nothing to launch), in plan order."""
    config = plan.launcher.k8s
    if not config.image:
        raise UsageError("launcher.k8s.image is needed: the container image the pods run")
    in_pods = ResultLayout(PurePosixPath(config.results_mount) / plan.experiment)
    on_host = ResultLayout(store_root)
    manifests = []
    for planned in plan.runnable:
        cell_id = planned.cell.id
        paths = PodPaths(in_pods, cell_id)
        name = object_name(plan.experiment, cell_id)
        metadata = _metadata(name, config.namespace, plan.experiment, cell_id)
        if config.api == "pytorchjob":
            manifest = pytorchjob(planned, config, metadata, paths)
        else:
            manifest = trainjob(planned, config, metadata, paths, pod_patch)
        spec = planned.worker_spec(Path(str(paths.result)), Path(str(paths.steps)))
        path, spec_path = on_host.k8s_manifest_path(name), on_host.k8s_spec_path(cell_id)
        manifests.append(K8sManifest(cell_id, name, manifest, spec, paths.spec, path, spec_path))
    return manifests


def network_warnings(plan: Plan) -> list[str]:
    """What the user should know about the network of the plan's multi-node NCCL cells: that
    they will use TCP on the pod network when no fabric is asked for; that RDMA without
    IPC_LOCK usually cannot pin memory."""
    config = plan.launcher.k8s
    spread = [p.cell.id for p in plan.runnable if p.cell.nodes > 1 and p.cell.backend == "nccl"]
    if not spread:
        return []
    cells = f"{len(spread)} multi-node NCCL cell(s) (e.g. {spread[0]})"
    # nothing faster than TCP on the pod network asked for
    if not (config.rdma_resource or config.host_network or config.network_annotations):
        return [
            f"{cells}: the pods ask for no RDMA device, host network or secondary network, so "
            "NCCL will use TCP sockets on the pod network; set launcher.k8s.rdma_resource (with "
            "ipc_lock), host_network or network_annotations (docs/multinode.md)"
        ]
    if config.rdma_resource and not config.ipc_lock:
        return [
            f"{cells}: launcher.k8s.rdma_resource without ipc_lock: RDMA registers (pins) "
            "memory, which needs IPC_LOCK or an unlimited memlock limit in the runtime"
        ]
    return []


def write_k8s_manifests(
    plan: Plan, store: ResultStore, pod_patch: PodPatchApi = "runtimePatches"
) -> list[Path]:
    """Write every cell's worker spec and manifest under `<store root>/k8s/` (atomically; an
    I/O error is a one-line ResultsError) and return the manifest paths, in plan order."""
    written = []
    for item in k8s_manifests(plan, store.root, pod_patch):
        store.write_text(item.spec_path, item.spec.model_dump_json(indent=2))
        header = f"# torchscale: cell {item.cell_id}\n"
        store.write_text(item.path, header + yaml.safe_dump(item.manifest, sort_keys=False))
        written.append(item.path)
    return written


@dataclass(frozen=True)
class Applied:
    path: Path
    output: str  # what kubectl said, e.g. "trainjob.trainer.kubeflow.org/x created"


def apply_manifests(paths: Sequence[Path], kubectl: str = "kubectl") -> list[Applied]:
    """`kubectl apply -f FILE` for each manifest, in order; the first failure stops with a
    one-line LaunchError carrying kubectl's message (those applied before stay applied)."""
    executable = shutil.which(kubectl)
    if executable is None:
        raise UsageError(
            f"'{kubectl}' is not on PATH: install kubectl (with a kubeconfig for the cluster) "
            "or apply the written manifests yourself"
        )
    return [_apply_one(executable, path, done) for done, path in enumerate(paths)]


def _apply_one(executable: str, path: Path, done: int) -> Applied:
    argv = [executable, "apply", "-f", str(path)]
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=APPLY_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"kubectl apply -f {path} gave no answer in {APPLY_TIMEOUT_S:g} s "
            f"({done} manifest(s) applied before it)"
        ) from None
    except OSError as exc:
        raise LaunchError(f"cannot run {executable}: {exc}") from None
    if proc.returncode != 0:
        said = "; ".join(line.strip() for line in proc.stderr.splitlines() if line.strip())
        raise LaunchError(
            f"kubectl apply -f {path} failed (exit {proc.returncode}, {done} manifest(s) "
            f"applied before it): {said or 'no message'}"
        )
    return Applied(path, proc.stdout.strip())
