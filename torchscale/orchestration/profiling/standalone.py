"""`torchscale profile`'s one cell: from the command's options to a planned cell, a
`ProfileRequest` and the notes a user should read before it runs (which device, model, world
size and profiler were chosen for them, and why).

The options become a one-cell config validated like a config file, so a bad value reads as the
same one-line problem a YAML file would give, and the cell is planned by the same `build_plan`
as a sweep's (same skips, same worker spec, same launch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from torchscale.contracts.errors import UsageError
from torchscale.contracts.thresholds import TRACED_STEPS
from torchscale.offline.results.directory_layout import STANDALONE_EXPERIMENT

if TYPE_CHECKING:  # the CLI imports this module for its choices: keep it light
    from torchscale.contracts.worker_spec import DelaySpec
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.plan.planned import PlannedCell
    from torchscale.orchestration.profiling.session import ProfileRequest

Target = Literal["sync_stalls", "comm", "compute", "memory", "all"]
ToolChoice = Literal["torch", "nsys", "auto"]

# defaults of the published reference: `torchscale profile --gpus 4 --duration 30 ...`
DEFAULT_GPUS = 4
DEFAULT_DURATION_S = 30.0
GPU_MODEL, CPU_MODEL = "resnet50", "tiny-cnn"  # CPU ranks cannot train resnet50 in seconds
WARMUP_STEPS = 3


@dataclass(frozen=True)
class ProfileOptions:
    """What `torchscale profile` asks for; every field has the command's default.
    `duration_s` and `steps` exclude each other (neither: DEFAULT_DURATION_S)."""

    gpus: int = DEFAULT_GPUS
    model: str | None = None  # None: GPU_MODEL on GPUs, CPU_MODEL on CPU
    batch_size: int = 32
    precision: str = "fp32"
    strategy: str = "ddp"
    device: str = "auto"  # auto | cuda | cpu (checked with the rest of the cell's config)
    duration_s: float | None = None
    steps: int | None = None
    profile_steps: int = TRACED_STEPS
    target: Target = "sync_stalls"
    tool: ToolChoice = "auto"
    inject_delay: tuple[DelaySpec, ...] = ()
    name: str = STANDALONE_EXPERIMENT  # results go to OUTPUT_DIR/<name>/profile/<cell>/
    ranks_per_gpu: int = 1  # launcher.ranks_per_gpu: more ranks than GPUs share them


@dataclass(frozen=True)
class ProfilePlan:
    """The cell to profile, how, and what was chosen for the user (`notes`)."""

    config: BenchConfig
    planned: PlannedCell
    request: ProfileRequest
    world: int
    notes: list[str] = field(default_factory=list)


def plan_profile(options: ProfileOptions, machine: Machine) -> ProfilePlan:
    """Resolve the options on `machine`; UsageError for what cannot run (nothing is written)."""
    from torchscale.contracts.cell_settings import MAX_PROFILE_STEPS
    from torchscale.orchestration.config.loader import validate_data
    from torchscale.orchestration.plan.build import build_plan
    from torchscale.orchestration.plan.nodes import device_for
    from torchscale.orchestration.profiling.session import ProfileRequest, resolve_tool

    if options.duration_s is not None and options.steps is not None:
        raise UsageError("--duration and --steps exclude each other: give one")
    if not 1 <= options.profile_steps <= MAX_PROFILE_STEPS:
        raise UsageError(f"--profile-steps must be between 1 and {MAX_PROFILE_STEPS}")
    notes: list[str] = []
    device = device_for("auto", machine) if options.device == "auto" else options.device
    world = options.gpus
    if device == "cpu" and options.device == "auto":
        notes.append(f"no CUDA GPU visible: profiling {world} gloo process(es) on CPU instead")
    if device == "cuda" and 0 < machine.gpu_count * options.ranks_per_gpu < world:
        world = machine.gpu_count * options.ranks_per_gpu
        notes.append(
            f"only {machine.gpu_count} GPU(s) visible: profiling {world} instead of {options.gpus}"
        )
    for delay in options.inject_delay:
        if delay.rank >= world:
            raise UsageError(
                f"--inject-delay {delay.rank}:{delay.phase}:{delay.ms:g}: rank {delay.rank} "
                f"does not exist in a {world}-rank run"
            )
    model = options.model or (GPU_MODEL if device == "cuda" else CPU_MODEL)
    if options.model is None:
        notes.append(f"model: {model} (default for {device}; --model to change)")
    config = validate_data(_one_cell(options, model, world), "command line")
    planned = build_plan(config, machine).cells[0]
    if planned.skip_reason is not None:
        raise UsageError(f"cannot profile this cell: {planned.skip_reason}")
    tool, tool_note = resolve_tool(options.tool, planned.cell.device)
    if tool_note:
        notes.append(tool_note)
    request = ProfileRequest(
        tool=tool,
        active_steps=options.profile_steps,
        target=options.target,
        inject_delay=options.inject_delay,
    )
    return ProfilePlan(config, planned, request, world, notes)


def _one_cell(options: ProfileOptions, model: str, world: int) -> dict[str, Any]:
    """The config a one-cell profile stands for, as a config file would spell it."""
    measurement: dict[str, Any] = {"warmup_steps": WARMUP_STEPS, "repeats": 1}
    if options.steps is not None:
        measurement["steps"] = options.steps
    else:
        measurement["duration_s"] = options.duration_s or DEFAULT_DURATION_S
    return {
        "experiment_name": options.name,
        "models": [model],
        "batch_sizes": [options.batch_size],
        "gpu_counts": [world],
        "device": options.device,
        "training": {"precision": [options.precision], "strategy": [options.strategy]},
        "measurement": measurement,
        **(
            {"launcher": {"ranks_per_gpu": options.ranks_per_gpu}}
            if options.ranks_per_gpu > 1
            else {}
        ),
    }
