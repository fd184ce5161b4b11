"""What `validate --level workload` runs on this node: the configs of its short sweeps, the
deliberate out-of-memory cell and the profiles, decided from the device type, how many devices
there are and how much memory one has. Pure: the caller reads the node and runs the plan
(torchscale/interfaces/api/workload.py).

The level runs every path a first training job takes, once, in minutes: a proof that the stack
works here, not a figure to quote (docs/validate.md, 'What `workload` judges'). So the cells are
short and the model the smallest that takes each path: GPT-2 124M on GPUs (what the docs'
reference figures are for), tiny-gpt2 on CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from torchscale.contracts.cell import world_label
from torchscale.contracts.cell_settings import MAX_BATCH_SIZE
from torchscale.contracts.finding import Finding
from torchscale.contracts.parallel_shapes import MIN_MICROBATCH_SAMPLES
from torchscale.contracts.run_kinds import PATH_CHECK_DESCRIPTION

WorkloadDevice = Literal["cuda", "cpu"]

# the deliberate OOM: a one-layer tiny-mlp whose hidden layer's output alone is this many times
# the device's memory (host RAM and swap on CPU), so the very first allocation of the batch
# fails at once, the allocator refusing it, rather than after the device fills up slowly (on
# CPU that would wake the kernel's OOM killer, which may end any process)
OOM_FACTOR = 2
OOM_BATCH = MAX_BATCH_SIZE
OOM_FEATURES_BYTES = 4  # fp32: the OOM cell runs without autocast
# its weights stay small (32 inputs, 10 classes: 44 per hidden unit, a 3e-4 share of the memory
# with gradients and AdamW state), so the model is built and the batch is what fails


@dataclass(frozen=True)
class NodeFacts:
    """What the plan needs to know about this node (read by the caller)."""

    device: WorkloadDevice
    devices: int  # CUDA GPUs, or the CPU ranks to run (gloo)
    memory_bytes: int | None  # one GPU's memory, or RAM + swap on CPU; None: unknown
    memory_unknown: str = ""  # why memory_bytes is None
    overcommit_mode: int | None = None  # /proc/sys/vm/overcommit_memory on CPU
    nsys: str | None = None  # the nsys on PATH, if any
    cpu_cores: int = 2  # cores this process may use


@dataclass(frozen=True)
class WorkloadPlan:
    """Configs (the data a YAML file would hold) and what each step is for."""

    facts: NodeFacts
    # experiment name -> config data, in run order: the eager groups, then the compiled ones
    eager: dict[str, dict[str, Any]]
    compiled: dict[str, dict[str, Any]]
    fit: dict[str, Any]
    oom: dict[str, Any] | None
    oom_skipped: Finding | None  # why there is no OOM cell
    unplaced: dict[str, str]  # strategy -> why no world size up to the node's can run it
    profile_tools: tuple[str, ...]  # torch, then nsys when it is on PATH
    nsys_skipped: Finding | None
    profile: dict[str, Any]  # ProfileOptions fields
    notes: list[str] = field(default_factory=list)
    # strategies run to prove their code path only, never judged or compared (fsdp on one
    # device: FSDP2's machinery with nothing to shard)
    machinery_only: tuple[str, ...] = ()


# what one device runs of FSDP2, and why it is not a figure to compare
FSDP_MACHINERY = "FSDP2 machinery only, nothing sharded"
ONE_DEVICE_NOTE = (
    "one device: fsdp runs as " + FSDP_MACHINERY + " (proven, not compared with ddp); "
    "ddp has no wrapper at world 1; no tp, pp or collective sweep (they need 2)"
)


def strategies_for(world: int) -> list[str]:
    """Every strategy a node of `world` devices can hold and the level judges (fsdp, tp, pp
    need 2, hybrid 4): FSDP at world 1 shards nothing, so its figures are FSDP2's per-unit
    host work, not FSDP's (torchtitan does not shard on one device either)."""
    return (
        ["ddp"] + (["fsdp", "tp", "pp"] if world >= 2 else []) + (["hybrid"] if world >= 4 else [])
    )


def oom_hidden(memory_bytes: int) -> int:
    """The tiny-mlp width whose hidden activation at OOM_BATCH is OOM_FACTOR x memory."""
    return math.ceil(OOM_FACTOR * memory_bytes / (OOM_BATCH * OOM_FEATURES_BYTES) / 64) * 64


def _base(name: str, facts: NodeFacts, model: str, batch: int, world: int) -> dict[str, Any]:
    return {
        "experiment_name": name,
        "description": PATH_CHECK_DESCRIPTION,
        "device": facts.device,
        "models": [model],
        "batch_sizes": [batch],
        "gpu_counts": [world],
        # 4 repeats: the fewest whose throughput interval (Student t, 3 degrees of freedom) can
        # tell a 1.5x compile gain from noise, so the report judges and never advises more
        # repeats than the level runs; short windows keep the level's cost in its fixed costs
        "measurement": {"warmup_steps": 3, "steps": 4, "repeats": 4},
        # a hang must cost minutes, not the default quarter of an hour per cell
        "launcher": {"cell_timeout_s": 300},
    }


def _cells(
    prefix: str, facts: NodeFacts, model: str, batch: int, strategy: str, world: int, compiled: bool
) -> dict[str, Any]:
    """One strategy's config at `world`: a pipeline gets at least a micro-batch per stage, up
    to 4 where the batch holds them, and at least MIN_MICROBATCH_SAMPLES samples in each (the
    batch raised where it must be)."""
    least = MIN_MICROBATCH_SAMPLES
    micro = max(world, min(4, batch // least))
    if strategy == "pp":
        batch = math.ceil(max(batch, least * micro) / micro) * micro
    data = _base(prefix, facts, model, batch, world)
    data["training"] = {
        "precision": "bf16",
        "strategy": [strategy],
        "compile": compiled,
        "parallel": {"microbatches": [micro]},
    }
    if compiled:
        data["launcher"] = {"cell_timeout_s": 600}  # compiling is minutes on a cold cache
    return data


def _place(
    facts: NodeFacts, model: str, batch: int, strategies: list[str], compiled: bool
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each strategy at the largest world size up to the node's that the planner runs (GPT-2's
    12 heads split over 6 GPUs, not 8), grouped into one experiment per shape; and the
    strategies no world size runs, with the planner's reason."""
    from torchscale.orchestration.config.loader import validate_data
    from torchscale.orchestration.plan.build import build_plan
    from torchscale.orchestration.plan.nodes import Machine

    machine = Machine(
        gpu_count=facts.devices if facts.device == "cuda" else 0, cpu_cores=facts.cpu_cores
    )
    prefix = "compiled" if compiled else "eager"
    groups: dict[str, dict[str, Any]] = {}
    unplaced: dict[str, str] = {}
    smallest = {"ddp": 1, "fsdp": 1, "tp": 2, "pp": 2, "hybrid": 4}
    for strategy in strategies:
        reason = ""
        for world in range(facts.devices, smallest[strategy] - 1, -1):
            data = _cells(prefix, facts, model, batch, strategy, world, compiled)
            skips = [
                c.skip_reason for c in build_plan(validate_data(data, "workload"), machine).cells
            ]
            if not any(skips):
                break
            reason = reason or next(r for r in skips if r)
        else:
            unplaced[strategy] = reason
            continue
        moved = world != facts.devices or data["batch_sizes"][0] != batch
        # its folder and its report's title: the world size spelled as every other line does
        name = f"{prefix}-{strategy}-{world_label(world)}" if moved else prefix
        if name in groups:
            groups[name]["training"]["strategy"].append(strategy)
        else:
            groups[name] = {**data, "experiment_name": name}
    return groups, unplaced


def plan_workload(facts: NodeFacts) -> WorkloadPlan:
    """The workload level's steps on a node described by `facts`."""
    gpu = facts.device == "cuda"
    model, batch = ("gpt2", 8) if gpu else ("tiny-gpt2", 4)
    world = facts.devices
    notes: list[str] = []

    # one GPU still proves FSDP2's code path on CUDA (units, mixed precision, per-unit
    # compile, the DTensor optimizer), labelled as such and never compared with ddp
    machinery = ("fsdp",) if world < 2 else ()
    strategies = strategies_for(world) + list(machinery)
    eager, unplaced = _place(facts, model, batch, strategies, compiled=False)
    # pipelines are never compiled (torch.compile with pipelining is not supported); on CPU
    # each compiled strategy costs about a minute of inductor on a small node: compile one
    # (DDP) so the path is proven and the level stays minutes long
    to_compile = [s for s in strategies if s != "pp"] if gpu else ["ddp"]
    compiled, unplaced_compiled = _place(facts, model, batch, to_compile, compiled=True)
    unplaced.update({f"{s} compiled": why for s, why in unplaced_compiled.items()})
    notes.append("pp runs eager only: torch.compile does not take a pipeline")
    if not gpu:
        notes.append("CPU: compile on for ddp only (each compiled strategy is a minute here)")
    moved = [n for n in [*eager, *compiled] if n not in ("eager", "compiled")]
    if moved:
        notes.append(
            f"at a smaller world size than the node's, as the model allows: {', '.join(moved)}"
        )
    main = eager.get("eager")
    if world >= 2 and main is not None:
        main["comm"] = {
            "enabled": True,
            "collectives": ["all_reduce", "all_gather", "reduce_scatter"],
            "min_bytes": "1K",
            "max_bytes": "256M" if gpu else "1M",
            "step_factor": 4,
            "warmup_iters": 3,
            "iters": 10,
        }
    elif world < 2:
        notes.append(ONE_DEVICE_NOTE)

    fit = _base("fit", facts, model, batch, world)
    fit["training"] = {"precision": "bf16", "strategy": "ddp", "compile": False}
    fit["measurement"] = {"warmup_steps": 1, "steps": 2, "repeats": 1}
    # a few probes prove the search; the deliberate OOM below proves the out-of-memory path
    fit["memory"] = {"max_batch_search": True, "max_batch_limit": 4 * batch, "probe_steps": 2}

    oom, oom_skipped = _oom_config(facts)
    tools = ("torch", "nsys") if facts.nsys and gpu else ("torch",)
    nsys_skipped = None
    if not gpu:
        nsys_skipped = Finding(code="workload.nsys_cpu")
    elif not facts.nsys:
        nsys_skipped = Finding(code="workload.nsys_absent")
    profile = {
        "gpus": world,
        "model": model,
        "batch_size": batch,
        "precision": "bf16",
        "strategy": "ddp",
        "device": facts.device,
        "steps": 8,
        "profile_steps": 3,
    }
    return WorkloadPlan(
        facts=facts,
        eager=eager,
        compiled=compiled,
        fit=fit,
        oom=oom,
        oom_skipped=oom_skipped,
        unplaced=unplaced,
        profile_tools=tools,
        nsys_skipped=nsys_skipped,
        profile=profile,
        notes=notes,
        machinery_only=machinery,
    )


def _oom_config(facts: NodeFacts) -> tuple[dict[str, Any] | None, Finding | None]:
    """The cell that cannot fit, or (None, why it is not run)."""
    if facts.memory_bytes is None:
        return None, Finding(
            code="workload.oom_memory_unknown", figures={"why": facts.memory_unknown}
        )
    if facts.device == "cpu" and facts.overcommit_mode == 1:
        # with overcommit always on, the allocation succeeds and the kernel's OOM killer ends
        # a process later, maybe not ours: no allocator error to classify
        return None, Finding(code="workload.oom_overcommit")
    hidden = oom_hidden(facts.memory_bytes)
    config = _base("oom", facts, "tiny-mlp", OOM_BATCH, facts.devices)
    config["models"] = [{"name": "tiny-mlp", "options": {"hidden": hidden, "layers": 1}}]
    config["training"] = {"precision": "fp32", "strategy": "ddp", "compile": False}
    config["measurement"] = {"warmup_steps": 1, "steps": 1, "repeats": 1}
    return config, None
