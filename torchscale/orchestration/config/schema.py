"""The benchmark config, one pydantic model per YAML section.

Every model forbids unknown keys and is strict about types (YAML already says what a value is:
`batch_sizes: ["64"]` is a mistake worth reporting, not coercing). The published TorchScale
format (experiment_name, models, batch_sizes, gpu_counts, profiling) is accepted unchanged;
everything else has a default, so `config show` can print the fully resolved config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from torchscale.contracts.catalog import Collective
from torchscale.contracts.cell_settings import (
    MAX_BATCH_SIZE,
    MAX_BUSBW_GBPS,
    MAX_CELL_TIMEOUT_S,
    MAX_COMM_BYTES,
    MAX_COMM_ITERS,
    MAX_CPUS_PER_TASK,
    MAX_CV_WARN_THRESHOLD,
    MAX_NNODES,
    MAX_OMP_THREADS,
    MAX_POLL_S,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_PROFILE_STEPS,
    MAX_RANKS_PER_GPU,
    MAX_SIGNAL_GRACE_S,
    MAX_STEP_FACTOR,
    MAX_STEPS,
    MAX_WORLD_SIZE,
    AtMost,
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    StrictModel,
    Sweep,
    TrainingConfig,
    _unique,
)
from torchscale.contracts.errors import UsageError
from torchscale.contracts.launcher_registry import LAUNCHERS
from torchscale.contracts.thresholds import TRACED_STEPS
from torchscale.contracts.units import parse_bytes
from torchscale.orchestration.own_job.job_line import (
    BatchScope,
    job_label,
    line_problem,
    placeholders,
)

BatchList = Annotated[
    list[Annotated[int, Field(gt=0), AtMost(MAX_BATCH_SIZE)]],
    AfterValidator(_unique),
    Field(min_length=1),
]
WorldSize = Annotated[int, Field(gt=0), AtMost(MAX_WORLD_SIZE)]
# `batch_sizes` is a list or the word auto: which one a value means is decided by its type
# (a discriminator), so a mistake is reported once, against the form it was written in; the
# tags name the two forms in pydantic's error paths and the loader drops them there
LIST_TAG, AUTO_TAG = "[list form]", "[auto form]"
UNION_TAGS = frozenset({LIST_TAG, AUTO_TAG})


def _batch_sizes_form(value: Any) -> str:
    return AUTO_TAG if isinstance(value, str) else LIST_TAG


Device = Literal["auto", "cuda", "cpu"]
# launcher.kind: a name in the launchers' registry, read when this module is first imported
# (an enum in the config's JSON schema, and a literal's error for any other name)
if TYPE_CHECKING:
    LauncherKind = str
else:
    LauncherKind = Literal[tuple(LAUNCHERS)]
Backend = Literal["auto", "nccl", "gloo"]
CommDtype = Literal["float32", "float16", "bfloat16"]

EXPERIMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _env_values_to_text(value: Any) -> Any:
    """`NCCL_IB_DISABLE: 1` means the string "1"; a boolean is ambiguous and stays an error."""
    if isinstance(value, dict):
        return {
            k: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
            for k, v in value.items()
        }
    return value


EnvText = Annotated[
    dict[str, str],
    BeforeValidator(_env_values_to_text, json_schema_input_type=dict[str, str | int | float]),
]


@dataclass(frozen=True)
class _Required:
    """`models` as written, in a config with no jobs: then it is required and not empty."""

    value: Any


_ABSENT = object()


def _names_to_model_specs(value: Any) -> Any:
    """`models: ["resnet50"]` is shorthand for `models: [{name: resnet50}]`; a row naming a
    command belongs to `jobs:`, said in one line."""
    if isinstance(value, _Required):
        if value.value is _ABSENT:
            raise ValueError("required key is missing (models, or jobs: your own command)")
        if value.value == []:
            raise PydanticCustomError("too_short", "must not be empty")
        value = value.value
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict) and "command" in item:
                raise ValueError(
                    f"row {index} names a command: a model row names a built-in or plug-in "
                    "model; your own command goes in a row of jobs: (docs/own-job.md)"
                )
        return [{"name": item} if isinstance(item, str) else item for item in value]
    return value


class JobSpec(StrictModel):
    """Your own training job, swept over the matrix like a model (docs/own-job.md, "Sweeps of
    your job"): its command with the placeholders the matrix fills ({gpus}, {batch},
    {precision}), run with the probe at each of gpu_counts."""

    name: Annotated[str, Field(min_length=1, max_length=100)] | None = Field(
        default=None, description="its label in results (default: its script's name)"
    )
    command: Annotated[
        list[Annotated[str, Field(min_length=1)]],
        Field(
            min_length=1,
            description="argv, no shell: `python SCRIPT ...` is started by torchscale's torchrun "
            "at each size; any other launch line must place {gpus}; {batch} and {precision} "
            "are filled from batch_sizes and training.precision where the line names them",
        ),
    ]
    batch: BatchScope = Field(
        default="per_rank",
        description="what {batch} is: per_rank (each rank's batch, as batch_sizes are) or "
        "global (one step's batch over every rank: your script divides it)",
    )

    @model_validator(mode="before")
    @classmethod
    def _not_a_model(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("model" in data or "options" in data):
            raise ValueError(
                "a jobs row runs your command, not a model: give a model in a row of models:"
            )
        return data

    @field_validator("command")
    @classmethod
    def _sweepable(cls, command: list[str]) -> list[str]:
        problem = line_problem(command)
        if problem is not None:
            raise ValueError(problem)
        return command

    @property
    def label(self) -> str:
        return self.name or job_label(self.command)

    @property
    def named(self) -> frozenset[str]:
        """The placeholders its command names."""
        return placeholders(self.command)


def _comm_bytes(value: Any) -> Any:
    """A message size as nccl-tests writes it ('64K', '1G': powers of 1024; '1GiB'; '1GB':
    10^9), so a size copied from an nccl-tests command line means the same bytes here."""
    if isinstance(value, str):
        try:
            return parse_bytes(value, "")
        except UsageError as exc:
            raise ValueError(str(exc).strip()) from None
    return value


CommBytes = Annotated[
    int,
    BeforeValidator(_comm_bytes, json_schema_input_type=int | str),
    Field(gt=0),
    AtMost(MAX_COMM_BYTES, "1TiB", unit=" bytes"),
]


class MemoryConfig(StrictModel):
    """Memory suite (docs/memory.md). The static breakdown, activations, peaks and allocator
    statistics are in every cell; `max_batch_search` also finds the largest batch per device
    that trains without running out of memory, one fresh process per probe."""

    max_batch_search: bool = False
    max_batch_limit: Annotated[int, Field(gt=0), AtMost(MAX_BATCH_SIZE)] = Field(
        default=4096, description="largest batch a search tries; reaching it is reported as such"
    )
    probe_steps: Annotated[int, Field(gt=0), AtMost(MAX_STEPS)] = Field(
        default=2,
        description="measured training steps per probe, after its warm-up step (each holds "
        "optimizer state and gradients together, usually the peak)",
    )


class CostConfig(StrictModel):
    """Price of the hardware, for cost per million samples/tokens (docs/cost.md)."""

    per_gpu_hour: (
        Annotated[float, Field(ge=0), AtMost(MAX_PRICE_PER_GPU_HOUR, note="a price per hour")]
        | None
    ) = Field(
        default=None,
        description="price of one GPU-hour (on CPU: one rank-hour); null: costs unavailable",
    )


# Slurm --time: MM, MM:SS, HH:MM:SS (any number of leading minutes or hours), or D-HH[:MM[:SS]];
# ASCII digits, the only ones Slurm reads (a Unicode \d also costs its config a 5 ms build)
SLURM_TIME = r"^([0-9]+-[0-9]{1,2}(:[0-9]{2}){0,2}|[0-9]+(:[0-9]{2}){0,2})$"
# Kubernetes object names and label values: DNS-1123 labels
K8S_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class SlurmPreflight(StrictModel):
    """First steps of every allocation, before its cells
    (torchscale/orchestration/schedulers/slurm/preflight.py)."""

    validate_nodes: bool = Field(
        default=False, description="torchscale validate --json on every node of the allocation"
    )
    validate_level: Literal["basic", "perf"] = Field(
        default="basic",
        description="validate's --level on each node: perf also measures every node's "
        "capability (minutes) and compares the nodes with the fleet's median",
    )
    comm: bool = Field(
        default=False,
        description="the comm: section's collective sweep (its defaults when the section is "
        "off) across all the allocation's nodes, stored in comm/",
    )


class SlurmConfig(StrictModel):
    """Used when launcher.kind is 'slurm': one allocation per node count (docs/multinode.md)."""

    partition: str | None = Field(default=None, description="null: the cluster's default")
    account: str | None = None
    qos: str | None = None
    time_limit: str | None = Field(
        default=None,
        pattern=SLURM_TIME,
        description="of each allocation (all its cells); null: the partition's default",
    )
    gpus_per_node: WorldSize | None = Field(
        default=None,
        description="GPUs per node the cells are judged against and the job asks "
        "(--gpus-per-node; not asked where the partition counts no GPU Gres); null: on CUDA, "
        "the partition's Gres count, or one GPU per rank of the widest cell where Slurm "
        "cannot say, and the job asks one per rank; none on CPU",
    )
    cpus_per_task: Annotated[int, Field(gt=0), AtMost(MAX_CPUS_PER_TASK)] | None = Field(
        default=None,
        description="CPUs per node for the node's ranks (one task per node); null: 8 per GPU "
        "(gpus_per_node), one per rank on CPU, none asked with exclusive (whole nodes); steps "
        "then use every CPU of the job",
    )
    exclusive: bool = Field(default=False, description="--exclusive: whole nodes")
    extra_sbatch: list[str] = Field(
        default_factory=list, description="more #SBATCH options, e.g. ['--constraint=h100']"
    )
    setup: list[str] = Field(
        default_factory=list,
        description="shell lines run before the cells in each allocation (module load ...)",
    )
    container: str | None = Field(
        default=None, description="pyxis/enroot image for every step (--container-image)"
    )
    python: str | None = Field(
        default=None,
        description="interpreter on the nodes with torchscale installed; null: the one "
        "running torchscale benchmark (must be visible on every node)",
    )
    signal_grace_s: Annotated[int, Field(ge=60), AtMost(MAX_SIGNAL_GRACE_S)] = Field(
        default=120,
        description="Slurm warns the job this long before its time limit (--signal); the "
        "running cell is stopped cleanly (Slurm may send it up to 60 s earlier)",
    )
    poll_s: Annotated[float, Field(gt=0), AtMost(MAX_POLL_S)] = Field(
        default=5.0, description="how often squeue is asked while following the jobs"
    )
    preflight: SlurmPreflight = Field(default_factory=SlurmPreflight)

    @staticmethod
    def time_limit_s(text: str) -> int:
        """Slurm's time formats (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`)
        in seconds; 0 means no limit."""
        days, _, clock = text.rpartition("-")
        parts = [int(p) for p in clock.split(":")]
        if days:  # D-HH[:MM[:SS]]
            parts += [0] * (3 - len(parts))
        elif len(parts) < 3:  # MM or MM:SS
            parts = [0, *parts, *[0] * (2 - len(parts))]
        hours, minutes, seconds = parts
        return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds

    @model_validator(mode="after")
    def _time_limit_outlasts_the_warning(self) -> SlurmConfig:
        """Slurm may send the warning up to 60 s before signal_grace_s: a shorter job could be
        killed before the driver has installed its handler, with no cell recorded."""
        if self.time_limit is None:
            return self
        limit = self.time_limit_s(self.time_limit)
        least = self.signal_grace_s + 60
        if 0 < limit < least:
            raise ValueError(
                f"time_limit {self.time_limit!r} ({limit} s) is shorter than signal_grace_s + "
                f"60 s ({least} s): raise time_limit or lower signal_grace_s"
            )
        return self


class K8sConfig(StrictModel):
    """Used when launcher.kind is 'k8s': manifests, one per cell (docs/multinode.md)."""

    image: str | None = Field(
        default=None, description="container image with torchscale and torch; needed for k8s"
    )
    namespace: Annotated[str, Field(pattern=K8S_NAME, max_length=63)] = "default"
    runtime: Annotated[str, Field(pattern=K8S_NAME, max_length=63)] = Field(
        default="torch-distributed", description="Kubeflow Trainer ClusterTrainingRuntime"
    )
    api: Literal["trainjob", "pytorchjob"] = Field(
        default="trainjob",
        description="trainjob: Kubeflow Trainer v2 TrainJob; pytorchjob: kubeflow.org/v1",
    )
    resources: EnvText = Field(
        default_factory=dict,
        description="per node (pod) limits, e.g. {'cpu': 16, 'memory': '64Gi'}; GPUs come "
        "from gpus_per_node",
    )
    gpus_per_node: WorldSize | None = Field(
        default=None, description="nvidia.com/gpu per pod; null on CPU"
    )
    results_claim: str | None = Field(
        default=None,
        description="PersistentVolumeClaim (ReadWriteMany) that holds the results directory",
    )
    results_mount: str = Field(default="/results", description="where that claim is mounted")
    pod_patch: Literal["runtimePatches", "podTemplateOverrides"] = Field(
        default="runtimePatches",
        description="how a TrainJob adds the results volume: runtimePatches (Kubeflow Trainer "
        "2.2+) or podTemplateOverrides (2.1)",
    )
    apply: bool = Field(default=False, description="kubectl apply the manifests (needs kubectl)")
    # the fabric of multi-node cells: with none of the next three NCCL uses TCP sockets on the
    # pod network (docs/multinode.md, "The network between pods")
    # an extended resource is a DNS prefix, '/', a name; an annotation key may omit the prefix
    rdma_resource: (
        Annotated[
            str,
            Field(
                pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
            ),
        ]
        | None
    ) = Field(
        default=None,
        description="the RDMA device's extended resource asked per pod, e.g. 'rdma/ib' "
        "(RDMA shared device plugin) or 'nvidia.com/hostdev' (SR-IOV)",
    )
    rdma_per_node: WorldSize = Field(
        default=1, description="how many of rdma_resource each pod asks for"
    )
    ipc_lock: bool = Field(
        default=False,
        description="add the IPC_LOCK capability to the training container (RDMA pins memory)",
    )
    host_network: bool = Field(
        default=False,
        description="pods on their node's network (hostNetwork); a PyTorchJob only: a TrainJob "
        "cannot set it (set it in the ClusterTrainingRuntime)",
    )
    network_annotations: dict[
        Annotated[
            str,
            Field(
                pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
            ),
        ],
        str,
    ] = Field(
        default_factory=dict,
        description="pod annotations for a secondary network, e.g. "
        "{'k8s.v1.cni.cncf.io/networks': 'roce-net'} (Multus)",
    )

    @model_validator(mode="after")
    def _trainjob_can_patch_it(self) -> K8sConfig:
        """What a TrainJob's pod patches cannot express is refused here, not by the cluster."""
        if self.api == "trainjob" and self.host_network:
            raise ValueError(
                "host_network: a TrainJob cannot set hostNetwork (Kubeflow Trainer's pod "
                "patches have no such field): set it in the ClusterTrainingRuntime, or use "
                "api: pytorchjob"
            )
        if self.api == "trainjob" and self.ipc_lock and self.pod_patch == "podTemplateOverrides":
            raise ValueError(
                "ipc_lock: Trainer 2.1's podTemplateOverrides cannot set a container's "
                "securityContext: use pod_patch: runtimePatches (Trainer 2.2+) or add "
                "IPC_LOCK in the ClusterTrainingRuntime"
            )
        return self


class LauncherConfig(StrictModel):
    """How cells are started: torchrun locally, torchrun under Slurm, or Kubernetes jobs."""

    kind: LauncherKind = "local"
    nodes: (
        Annotated[
            list[Annotated[int, Field(gt=0), AtMost(MAX_NNODES)]],
            AfterValidator(_unique),
            Field(min_length=1),
        ]
        | None
    ) = Field(
        default=None,
        description="node counts, a sweep axis: gpu_counts are then GPUs (ranks) per node; "
        "null: gpu_counts are total GPUs per cell",
    )
    cell_timeout_s: Annotated[float, Field(gt=0), AtMost(MAX_CELL_TIMEOUT_S)] = Field(
        default=900.0, description="a cell running longer is killed and recorded as 'timeout'"
    )
    omp_num_threads: Annotated[int, Field(gt=0), AtMost(MAX_OMP_THREADS)] | None = Field(
        default=None, description="OMP_NUM_THREADS per rank; null = cores / ranks, at least 1"
    )
    env: EnvText = Field(
        default_factory=dict, description="extra environment variables for every cell"
    )
    cpu_malloc: Literal["reuse", "default"] = Field(
        default="reuse",
        description="CPU ranks: 'reuse' keeps memory glibc's malloc freed for the next step "
        "(GLIBC_TUNABLES mmap_threshold 32 MiB, trim_threshold 1 GiB: no page faults for "
        "the same activations every step); 'default': glibc's own thresholds",
    )
    cpu_binding: Literal["cores", "none"] = Field(
        default="cores",
        description="CPU ranks: 'cores' binds each rank of a node to its own equal share of "
        "the node's cores before it starts a thread (none when ranks outnumber cores); "
        "'none': the scheduler places them",
    )
    ranks_per_gpu: Annotated[int, Field(gt=0), AtMost(MAX_RANKS_PER_GPU)] = Field(
        default=1,
        description="CUDA cells with more ranks than the node has GPUs: up to this many ranks "
        "share each GPU, over gloo (NCCL refuses a shared GPU); such cells are marked and "
        "never compared with cells that had a GPU per rank. 1: a GPU per rank, a larger cell "
        "skipped (docs/configuration.md, 'Several ranks on one GPU')",
    )
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)
    k8s: K8sConfig = Field(default_factory=K8sConfig)

    @model_validator(mode="before")
    @classmethod
    def _nnodes_is_nodes(cls, data: Any) -> Any:
        """`nnodes: N`, the older spelling, reads as `nodes: [N]`."""
        if isinstance(data, dict) and "nnodes" in data:
            data = dict(data)
            nnodes = data.pop("nnodes")
            if "nodes" in data:
                raise ValueError("give launcher.nodes (a list) or launcher.nnodes, not both")
            data["nodes"] = [nnodes]
        return data

    @property
    def node_counts(self) -> list[int]:
        return sorted(self.nodes) if self.nodes else [1]


class ProfilingConfig(StrictModel):
    """Trace capture and sync-stall analysis after a sweep (the published `profiling` section).

    With `enabled: true`, once every cell has run, the selected cells are run again under the
    profiler (outside their measured windows; the sweep's own results are never touched) and
    analysed into `profile/<cell_id>/analysis.json`. docs/profiling.md explains the thresholds.
    """

    enabled: bool = False
    tool: Literal["torch", "nsys", "auto"] = Field(
        default="torch",
        description="torch: torch.profiler (Kineto) traces; nsys: Nsight Systems; auto: nsys "
        "when installed and the cell runs on GPUs, else torch",
    )
    trigger: Literal["sync_stall_detection", "always"] = Field(
        default="sync_stall_detection",
        description="always: profile every ok cell; sync_stall_detection: only ok cells whose "
        "exposed communication or load imbalance reaches stall_threshold, or whose step-time "
        "CV reaches variance_threshold",
    )
    stall_threshold: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.10,
        description="fraction of the step: exposed communication, or the wait for the slowest "
        "rank (load imbalance)",
    )
    variance_threshold: Annotated[float, Field(gt=0), AtMost(MAX_CV_WARN_THRESHOLD)] = Field(
        default=0.10, description="step-time coefficient of variation (0.10 is 10 %)"
    )
    steps: Annotated[int, Field(gt=0), AtMost(MAX_PROFILE_STEPS)] = Field(
        default=TRACED_STEPS, description="active (traced) steps per rank"
    )
    warmup_steps: Annotated[int, Field(ge=0), AtMost(MAX_PROFILE_STEPS)] = Field(
        default=2, description="profiler warm-up steps (traced, then discarded)"
    )
    record_shapes: bool = False
    with_stack: bool = False


class CommConfig(StrictModel):
    """Collective bandwidth sweep in nccl-tests conventions (algbw, busbw)."""

    enabled: bool = False
    collectives: Sweep[Collective] = Field(default_factory=lambda: ["all_reduce"])  # type: ignore[arg-type]
    min_bytes: CommBytes = Field(
        default=1024, description="e.g. 1024, '8K' (K, M, G: powers of 1024 as in nccl-tests)"
    )
    max_bytes: CommBytes = Field(
        default=64 * 2**20, description="e.g. '64M', '1G' (2^30), '1GB' (10^9)"
    )
    step_factor: Annotated[int, Field(ge=2), AtMost(MAX_STEP_FACTOR)] = 2
    dtype: CommDtype = "float32"
    warmup_iters: Annotated[int, Field(ge=0), AtMost(MAX_COMM_ITERS)] = 5
    iters: Annotated[int, Field(gt=0), AtMost(MAX_COMM_ITERS)] = 20
    check: bool = Field(default=True, description="verify every result element")
    min_busbw_gbps: Annotated[float, Field(gt=0), AtMost(MAX_BUSBW_GBPS)] | None = Field(
        default=None, description="fail the run when the average bus bandwidth is lower"
    )

    @model_validator(mode="after")
    def _range(self) -> CommConfig:
        if self.min_bytes > self.max_bytes:
            raise ValueError(
                f"min_bytes ({self.min_bytes}) is larger than max_bytes ({self.max_bytes})"
            )
        return self


class OnCudaConfig(StrictModel):
    """Keys that replace the config's own when the sweep runs on CUDA GPUs (device cuda, or
    auto on a node with a GPU); each key left out keeps the config's value, and a section
    (training, measurement) replaces only the keys it sets. A CPU sweep never reads it."""

    models: Annotated[
        list[ModelSpec] | None,
        BeforeValidator(_names_to_model_specs, json_schema_input_type=list[str | ModelSpec] | None),
    ] = Field(default=None, description="the models on CUDA")
    batch_sizes: BatchList | Literal["auto"] | None = Field(
        default=None, description="the per-device batch sizes on CUDA"
    )
    gpu_counts: Annotated[list[WorldSize], Field(min_length=1)] | None = Field(
        default=None, description="the world sizes on CUDA"
    )
    training: TrainingConfig | None = Field(
        default=None, description="training keys set here replace the config's on CUDA"
    )
    measurement: MeasurementConfig | None = Field(
        default=None, description="measurement keys set here replace the config's on CUDA"
    )

    @model_serializer(mode="wrap")
    def _as_written(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        """Only the keys written: a default filled in would replace the config's own on CUDA
        when the dumped config is read back."""
        data = handler(self)
        return {
            key: value.model_dump(mode=info.mode, exclude_unset=True)
            if isinstance(value := getattr(self, key), BaseModel)
            else data[key]
            for key in type(self).model_fields
            if key in self.model_fields_set
        }


class BenchConfig(StrictModel):
    """A whole experiment: the sweep axes and how every cell is run and measured."""

    # models or jobs (or both): the schema's editors say so as the validation does
    model_config = ConfigDict(
        **StrictModel.model_config,
        json_schema_extra={"anyOf": [{"required": ["models"]}, {"required": ["jobs"]}]},
    )

    experiment_name: Annotated[
        str,
        Field(
            min_length=1,
            max_length=100,
            description="names the results directory: letters, digits, '.', '_', '-'",
        ),
    ]
    description: str = ""
    models: Annotated[
        list[ModelSpec],
        BeforeValidator(_names_to_model_specs, json_schema_input_type=list[str | ModelSpec]),
    ] = Field(default_factory=list, description="built-in or plug-in models (or jobs, or both)")
    jobs: list[JobSpec] = Field(
        default_factory=list,
        description="your own training jobs, each a command swept like a model "
        "(docs/own-job.md, 'Sweeps of your job')",
    )
    batch_sizes: Annotated[
        Annotated[BatchList, Tag(LIST_TAG)] | Annotated[Literal["auto"], Tag(AUTO_TAG)],
        Discriminator(_batch_sizes_form),
    ] = Field(
        default="auto",
        description="per-device batch sizes; auto: on CUDA, per model and precision the "
        "largest power of two whose estimated peak fits 80 % of the GPU's memory "
        "(docs/configuration.md), on CPU 8",
    )
    gpu_counts: Annotated[
        list[WorldSize],
        AfterValidator(_unique),
        Field(min_length=1, description="world sizes; on CPU, the number of gloo processes"),
    ]
    device: Device = Field(default="auto", description="auto: CUDA GPUs when present, else CPU")
    backend: Backend = Field(default="auto", description="auto: nccl on CUDA, gloo on CPU")
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    measurement: MeasurementConfig = Field(default_factory=MeasurementConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    launcher: LauncherConfig = Field(default_factory=LauncherConfig)
    profiling: ProfilingConfig = Field(default_factory=ProfilingConfig)
    comm: CommConfig = Field(default_factory=CommConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    cost: CostConfig = Field(default_factory=CostConfig)
    on_cuda: OnCudaConfig | None = Field(
        default=None,
        description="keys that replace the ones above when the sweep runs on CUDA GPUs "
        "(docs/configuration.md, 'One file for CPU and GPU')",
    )

    @model_validator(mode="before")
    @classmethod
    def _models_unless_jobs(cls, data: Any) -> Any:
        """Without jobs, models is required and not empty, said with the other keys' errors."""
        if isinstance(data, dict) and not data.get("jobs"):
            return {**data, "models": _Required(data.get("models", _ABSENT))}
        return data

    @field_validator("experiment_name")
    @classmethod
    def _safe_directory_name(cls, name: str) -> str:
        if not EXPERIMENT_NAME.match(name):
            raise ValueError(
                f"'{name}' may only use letters, digits, '.', '_' and '-' and must start with a "
                "letter or digit (it names the results directory)"
            )
        return name

    @field_validator("models")
    @classmethod
    def _distinct_models(cls, models: list[ModelSpec]) -> list[ModelSpec]:
        _unique([m.display_name for m in models])
        return models

    @model_validator(mode="after")
    def _jobs_runnable(self) -> BenchConfig:
        """What a sweep of the user's jobs cannot do, one line each, before anything runs."""
        labels = [m.display_name for m in self.models] + [j.label for j in self.jobs]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise ValueError(
                f"two rows of models and jobs are labelled {', '.join(twice)}: give a job a "
                "name of its own (jobs[].name), a model a label"
            )
        if not self.jobs:
            return self
        if self.launcher.kind != "local":
            raise ValueError(
                f"jobs run with launcher.kind 'local' only (not yet under "
                f"'{self.launcher.kind}': docs/own-job.md)"
            )
        if self.measurement.duration_s is not None:
            raise ValueError(
                "jobs are measured over a number of optimizer steps: set measurement.steps, "
                "not duration_s"
            )
        for index, job in enumerate(self.jobs):
            if "batch" in job.named and isinstance(self.batch_sizes, str):
                raise ValueError(
                    f"jobs[{index}] ({job.label}) names {{batch}}: batch_sizes must be a list "
                    "(auto sizes torchscale's own models)"
                )
        return self

    @model_validator(mode="after")
    def _consistent(self) -> BenchConfig:
        if self.device == "cpu" and self.backend == "nccl":
            raise ValueError("backend 'nccl' needs device 'cuda' (or 'auto'); on CPU use 'gloo'")
        if self.launcher.kind == "local" and max(self.launcher.node_counts) > 1:
            raise ValueError(
                "launcher.nodes above 1 needs launcher.kind 'slurm' or 'k8s' (local is one node)"
            )
        if self.launcher.ranks_per_gpu > 1 and self.launcher.kind != "local":
            raise ValueError(
                "launcher.ranks_per_gpu above 1 needs launcher.kind 'local' (it lets a lent "
                "node's GPU stand in for several; a cluster's nodes are asked for GPUs per rank)"
            )
        if self.launcher.ranks_per_gpu > 1 and self.device == "cpu":
            raise ValueError("launcher.ranks_per_gpu shares CUDA GPUs: device 'cpu' has none")
        if self.launcher.kind == "k8s" and not self.launcher.k8s.image:
            raise ValueError("launcher.kind 'k8s' needs launcher.k8s.image")
        if self.on_cuda is not None:  # the CUDA sweep is checked now, not when it is planned
            try:
                self.for_device("cuda")
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"with on_cuda's keys, on CUDA: {where}: {first['msg']}") from None
        return self

    def for_device(self, device: str) -> tuple[BenchConfig, str | None]:
        """The config a sweep on `device` runs, and the line that says which keys `on_cuda`
        replaced (None where it did not apply): on CUDA its keys replace the config's, the
        result validated as a whole; elsewhere the config less `on_cuda`."""
        on = self.on_cuda
        if on is None:
            return self, None
        data = self.model_dump(mode="json", exclude={"on_cuda"})
        if device != "cuda":
            return BenchConfig.model_validate(data), None
        replaced = []
        for key in (k for k in OnCudaConfig.model_fields if k in on.model_fields_set):
            value = getattr(on, key)
            if value is None:
                continue
            if isinstance(value, BaseModel):
                section = value.model_dump(mode="json", include=value.model_fields_set)
                data[key] = {**data[key], **section}
                replaced += [f"{key}.{name}" for name in sorted(section)]
            else:
                data[key] = on.model_dump(mode="json")[key]
                replaced.append(key)
        if not replaced:
            return BenchConfig.model_validate(data), None
        return BenchConfig.model_validate(data), "on_cuda replaces " + ", ".join(replaced)

    def as_yaml(self) -> str:
        """The resolved config as YAML that loads back to itself (the results' config.yaml)."""
        from torchscale.orchestration.config.yaml_source import dump_yaml

        written = None if self.on_cuda is not None else {"on_cuda"}  # a CPU/GPU-only config
        return dump_yaml(self.model_dump(mode="json", exclude=written))
