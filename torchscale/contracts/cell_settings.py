"""The config sections a cell's ranks receive in their spec (the model,
how it trains, how it is measured, its data and telemetry), with the value types and limits
every section of the config validates by.

The host's own sections and the whole config (`BenchConfig`) are in
torchscale/orchestration/config/schema.py, which builds on these; the ranks read these alone, so the
rank side never imports the config package (docs/architecture.md). Every model forbids unknown keys
and is strict about types.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from torchscale.contracts.catalog import (
    BUILTIN_MODELS,
    HybridLayout,
    Precision,
    Schedule,
    Strategy,
    faithful_conflict,
    is_plugin_model,
)
from torchscale.contracts.suggest import did_you_mean
from torchscale.contracts.thresholds import CV_WARN_THRESHOLD

T = TypeVar("T", bound=Hashable)


def _unique(values: list[T]) -> list[T]:
    dupes = list(dict.fromkeys(v for i, v in enumerate(values) if v in values[:i]))
    if dupes:
        raise ValueError("duplicate entries: " + ", ".join(str(d) for d in dupes))
    return values


def _scalar_to_list(value: Any) -> Any:
    """Let a sweep axis be written as one value (`precision: bf16`) or a list of them."""
    if isinstance(value, (str, int, float, bool)):
        return [value]
    return value


@dataclass(frozen=True)
class AtMost:
    """Upper bound of a number: one readable error line, and `maximum` in the JSON Schema.

    pydantic's `le=` would do both, but its error hands the bound over as a float that the
    loader prints as 1.04858e+06; a bound should read as the number a user would type.
    """

    limit: int | float
    shown: str = ""  # how the error writes the limit (default: the number itself)
    note: str = ""  # what the value means, for the likeliest slip (e.g. a percentage)
    unit: str = ""  # after the value in the error: " bytes"

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema["maximum"] = self.limit
        return json_schema

    def _check(self, value: Any) -> Any:
        if not value <= self.limit:  # `not <=` also catches NaN
            shown = self.shown or _shown_number(self.limit)
            note = f"; {self.note}" if self.note else ""
            got = _shown_number(value) + self.unit
            raise ValueError(f"must be <= {shown} (got {got}){note}")
        return value


def _shown_number(value: Any) -> str:
    """A number as a YAML user writes it: 86400 for 86400.0, .inf for infinity."""
    if isinstance(value, float):
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
    return str(value)


# Upper bounds: far above what any real run uses, low enough that a typo (an extra digit, a
# unit slip) or an absurd value fails here instead of deep inside a launch. Documented in
# docs/configuration.md; changing one changes what is valid, not how a valid config dumps.
MAX_BATCH_SIZE = 2**20  # per device; 1,048,576 samples
MAX_WORLD_SIZE = 2**16  # ranks in one cell (65,536 GPUs)
MAX_NNODES = 4096
# ranks on one GPU (launcher.ranks_per_gpu): each holds its own copy of the model and CUDA
# context, so a few are what a GPU's memory and a node's cores can take
MAX_RANKS_PER_GPU = 16
MAX_STEPS = 10_000_000  # measured or warm-up steps per repeat
MAX_REPEATS = 1000
MAX_GRAD_ACCUM_STEPS = 2**16
MAX_SEED = 2**63 - 1  # an int64; seed + rank stays within torch.manual_seed's 64-bit range
MAX_SEQ_LEN = 2**20
MAX_IMAGE_SIZE = 16384
MAX_TELEMETRY_INTERVAL_MS = 60_000  # sampling less than once a minute says nothing
MAX_OMP_THREADS = 1024
MAX_PROFILE_STEPS = 1000  # traced steps: a trace of more is gigabytes and will not open
MAX_COMM_ITERS = 1_000_000
MAX_STEP_FACTOR = 1024
MAX_COMM_BYTES = 2**40  # 1 TiB: larger than any GPU's memory
MAX_DURATION_S = 86_400.0  # one day per measured window
MAX_CELL_TIMEOUT_S = 604_800.0  # one week
MAX_LEARNING_RATE = 100.0
MAX_CV_WARN_THRESHOLD = 1.0  # a coefficient of variation, a fraction: 0.10 is 10 %
MAX_BUSBW_GBPS = 100_000.0  # 100 TB/s, far beyond any interconnect
MAX_BUCKET_CAP_MB = 65_536.0  # 64 GiB: one bucket larger than any model's gradients

MAX_SHARD_MB = 4096  # one shard file; larger says nothing a 128 MB shard does not
MAX_SHARDS = 100_000
MAX_LOADER_WORKERS = 256
MAX_PREFETCH_FACTOR = 64
MAX_PRICE_PER_GPU_HOUR = 10_000.0  # far above any rental price; catches a price per month
MAX_CPUS_PER_TASK = 4096  # cores of one node
MAX_SIGNAL_GRACE_S = 3600  # warning before a time limit
MAX_POLL_S = 600.0


@dataclass(frozen=True)
class _SweepAxis:
    """The validation of a sweep axis `list[X]` (see `Sweep`), X read from the annotated list:
    one value becomes a list of one, entries must be distinct, and there is at least one. The
    JSON Schema accepts X or a list of X."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        (item,) = get_args(source)
        axis = Annotated[
            source,
            BeforeValidator(_scalar_to_list, json_schema_input_type=item | source),
            AfterValidator(_unique),
            Field(min_length=1),
        ]
        return handler.generate_schema(axis)


# A sweep axis: one value or a non-empty list of distinct values (`Sweep[Precision]`).
Sweep = Annotated[list[T], _SweepAxis()]
Degree = Annotated[int, Field(gt=0), AtMost(MAX_WORLD_SIZE)]
MAX_MICROBATCHES = 4096
Microbatches = Annotated[int, Field(gt=0), AtMost(MAX_MICROBATCHES)]


class StrictModel(BaseModel):
    """Base for every section: unknown keys are errors, types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)


class ModelSpec(StrictModel):
    """One model to benchmark: a built-in name or a `package.module:factory` plug-in."""

    name: Annotated[
        str, Field(min_length=1, description="built-in model or package.module:factory")
    ]
    label: str | None = Field(
        default=None, description="name shown in results and reports (default: name)"
    )
    options: dict[str, int | float | str | bool] = Field(
        default_factory=dict,
        description="architecture options of the model (e.g. d_model for 'transformer')",
    )

    @field_validator("name")
    @classmethod
    def _known_model(cls, name: str) -> str:
        if name in BUILTIN_MODELS or is_plugin_model(name):
            return name
        raise ValueError(
            f"unknown model '{name}'{did_you_mean(name, BUILTIN_MODELS)}; "
            "or give a plug-in as 'package.module:factory'"
        )

    @model_validator(mode="after")
    def _known_options(self) -> ModelSpec:
        allowed = BUILTIN_MODELS.get(self.name)
        if allowed is None:  # plug-in: its factory receives the options as keyword arguments
            return self
        bad = [k for k in self.options if k not in allowed]
        if bad:
            hints = "; ".join(f"'{k}'{did_you_mean(k, allowed)}" for k in bad)
            raise ValueError(f"unknown option(s) for model '{self.name}': {hints}")
        conflict = faithful_conflict(self.name, self.options)
        if conflict is not None:
            raise ValueError(conflict)
        return self

    @property
    def display_name(self) -> str:
        return self.label or self.name


class DDPConfig(StrictModel):
    """DistributedDataParallel knobs that change communication behaviour."""

    bucket_cap_mb: Annotated[float, Field(gt=0), AtMost(MAX_BUCKET_CAP_MB)] = 25.0
    gradient_as_bucket_view: bool = True
    static_graph: bool = False
    find_unused_parameters: bool = False
    broadcast_buffers: bool = True


class FSDPConfig(StrictModel):
    """FSDP2 (`fully_shard`) knobs."""

    reshard_after_forward: bool = True


class ParallelConfig(StrictModel):
    """Degrees of the model-parallel strategies (docs/strategies.md). Lists join the matrix,
    each only for the strategies it shapes."""

    tp: Sweep[Degree] | None = Field(
        default=None,
        description="tensor-parallel ranks: strategy tp uses every rank when null (a set "
        "value skips cells of another world size); hybrid fsdp_tp: the inner degree (null: 2)",
    )
    pp: Sweep[Degree] | None = Field(
        default=None,
        description="pipeline stages: strategy pp uses one per rank when null; hybrid "
        "ddp_pp: the stages of each replica (null: 2)",
    )
    microbatches: Sweep[Microbatches] = Field(
        default_factory=lambda: [4],
        description="micro-batches per step under pipelining; must divide the batch",
    )
    schedule: Sweep[Schedule] = Field(
        default_factory=lambda: ["1f1b"],  # type: ignore[arg-type]
        description="pipeline schedule (torch.distributed.pipelining)",
    )
    sequence_parallel: bool = Field(
        default=False, description="tp: LayerNorms and dropout on sequence-sharded activations"
    )
    hybrid: Sweep[HybridLayout] = Field(
        default_factory=lambda: ["fsdp_tp"],  # type: ignore[arg-type]
        description="2-D meshes of strategy hybrid: fsdp_tp (FSDP across TP groups) and/or "
        "ddp_pp (DDP across pipelines)",
    )
    tp_across_nodes: bool = Field(
        default=False,
        description="let a tensor-parallel group span nodes (its per-layer all-reduces then "
        "cross the inter-node link); false: such cells are skipped with the reason",
    )


class TrainingConfig(StrictModel):
    """How each cell trains. `precision` and `strategy` are sweep axes."""

    precision: Sweep[Precision] = Field(default_factory=lambda: ["fp32"])  # type: ignore[arg-type]
    strategy: Sweep[Strategy] = Field(default_factory=lambda: ["ddp"])  # type: ignore[arg-type]
    optimizer: Literal["adamw", "sgd"] = "adamw"
    learning_rate: Annotated[float, Field(gt=0), AtMost(MAX_LEARNING_RATE)] = 1e-4
    fused_optimizer: bool | None = Field(
        default=None, description="fused AdamW kernel; null = use it where supported"
    )
    channels_last: bool | None = Field(
        default=None, description="channels_last memory format; null = on for conv nets on CUDA"
    )
    bf16_activations: bool | None = Field(
        default=None,
        description="carry a transformer's residual stream and LayerNorms in bf16 under bf16 "
        "autocast (weights and optimizer state stay fp32); null = on for bf16 cells, false = "
        "autocast's recipe (the stream in fp32)",
    )
    compile: bool | None = Field(
        default=None,
        description="torch.compile the model (its compile time is reported apart from the "
        "measured window); null = on for CUDA cells but pipelines, off on CPU",
    )
    grad_accum_steps: Annotated[int, Field(gt=0), AtMost(MAX_GRAD_ACCUM_STEPS)] = 1
    seed: Annotated[int, Field(ge=0), AtMost(MAX_SEED)] = 0
    ddp: DDPConfig = Field(default_factory=DDPConfig)
    fsdp: FSDPConfig = Field(default_factory=FSDPConfig)
    parallel: ParallelConfig = Field(default_factory=ParallelConfig)


class TelemetryConfig(StrictModel):
    """Telemetry sampled in each rank during the measured windows: its GPU through NVML and
    its process through psutil (the process only on CPU). docs/telemetry.md."""

    enabled: bool = True
    interval_ms: Annotated[int, Field(ge=10), AtMost(MAX_TELEMETRY_INTERVAL_MS)] = 100


DEFAULT_STEPS = 20


class MeasurementConfig(StrictModel):
    """The measured window: warm-up discarded, then a fixed number of steps or seconds."""

    warmup_steps: Annotated[int, Field(ge=0), AtMost(MAX_STEPS)] = 5
    steps: Annotated[int, Field(gt=0), AtMost(MAX_STEPS)] | None = Field(
        default=None, description=f"measured steps per repeat (default {DEFAULT_STEPS})"
    )
    duration_s: Annotated[float, Field(gt=0), AtMost(MAX_DURATION_S)] | None = Field(
        default=None, description="measure for this many seconds instead of a step count"
    )
    repeats: Annotated[int, Field(gt=0), AtMost(MAX_REPEATS)] = 3
    timing: Literal["auto", "cuda_events", "sync_cuda", "perf_counter"] = "auto"
    comm_overhead: bool = Field(
        default=True,
        description=(
            "DDP: a no_sync() window after each measured window, the cross-check of the step "
            "model's communication figure and each rank's compute time"
        ),
    )
    flops: bool = Field(default=True, description="count FLOPs per step for TFLOP/s and MFU")
    cv_warn_threshold: Annotated[
        float, Field(gt=0), AtMost(MAX_CV_WARN_THRESHOLD, note="a fraction: 0.10 is 10 %")
    ] = Field(
        default=CV_WARN_THRESHOLD,
        description="step-time coefficient of variation flagged as high variance",
    )
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)

    @model_validator(mode="after")
    def _steps_or_duration(self) -> MeasurementConfig:
        if self.steps is not None and self.duration_s is not None:
            raise ValueError("set either 'steps' or 'duration_s', not both")
        if self.steps is None and self.duration_s is None:
            self.steps = DEFAULT_STEPS
        return self


class DataConfig(StrictModel):
    """Input data (docs/data.md). `synthetic` batches are made once on the device: no I/O in
    the timed loop, compute isolated. `disk` reads generated shards under `dir` through a
    DataLoader (workers, pinned memory, non-blocking copies), to measure that storage and the
    input pipeline; `cifar100` reads the real dataset from the user's files under `dir`."""

    source: Literal["synthetic", "disk", "cifar100"] = "synthetic"
    seq_len: Annotated[int, Field(gt=0), AtMost(MAX_SEQ_LEN)] | None = Field(
        default=None, description="sequence length for language models (null: model default)"
    )
    image_size: Annotated[int, Field(gt=0), AtMost(MAX_IMAGE_SIZE)] | None = Field(
        default=None, description="square image side for vision models (null: model default)"
    )
    dir: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="disk: where shards are generated and read (any mount: NVMe, NFS); "
        "cifar100: the folder holding the python-pickle files ('train', 'meta')",
    )
    shard_mb: Annotated[int, Field(gt=0), AtMost(MAX_SHARD_MB)] = Field(
        default=128, description="disk: size of one shard file, MB (10^6 bytes)"
    )
    num_shards: Annotated[int, Field(gt=0), AtMost(MAX_SHARDS)] = Field(
        default=4, description="disk: shard files generated (shard_0000.bin ...)"
    )
    num_workers: Annotated[int, Field(ge=0), AtMost(MAX_LOADER_WORKERS)] = Field(
        default=2, description="DataLoader worker processes per rank (0: load in the rank)"
    )
    pin_memory: bool | None = Field(
        default=None, description="page-locked host batches; null = on when training on CUDA"
    )
    prefetch_factor: Annotated[int, Field(gt=0), AtMost(MAX_PREFETCH_FACTOR)] = Field(
        default=2, description="batches loaded ahead per worker"
    )

    @model_validator(mode="after")
    def _dir_when_read(self) -> DataConfig:
        if self.source != "synthetic" and self.dir is None:
            raise ValueError(f"source '{self.source}' needs 'dir' (the folder to read)")
        return self
