"""`torchscale config init`: a commented starter config sized for one node.

What it sizes and from what: docs/configuration.md, "Starter configs"; its batches are those
`batch_sizes: auto` would run (memory_estimate.py) and the two below.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.orchestration.config.hardware import Hardware
from torchscale.orchestration.memory_estimate import activation_bytes, fitting_batch

GPU_MODEL = "gpt2"
CPU_MODEL = "tiny-gpt2"


PRECISION_NOTES = {
    "bf16": "bf16 autocast: these GPUs compute in bf16",
    "amp": "fp16 autocast with a GradScaler: these GPUs have no bf16",
    "fp32": "fp32: CPU ranks",
}


def powers_of_two(limit: int) -> list[int]:
    return [2**i for i in range(max(limit, 0).bit_length())]  # 1, 2, 4, ... <= limit


@dataclass(frozen=True)
class Starter:
    hardware: Hardware
    model: str
    gpu_counts: list[int]
    precision: str
    batch_sizes: list[int]
    strategies: list[str]
    batch_basis: str
    microbatches: int


def plan_starter(hw: Hardware) -> Starter:
    """Every choice of the starter config for `hw` (the GPU model's facts are stored)."""
    if hw.gpus == 0:
        ranks = powers_of_two(min(max(hw.cpu_cores, 1), 4))
        strategies = ["ddp", "fsdp", "tp", "pp"] if len(ranks) > 1 else ["ddp", "fsdp"]
        basis = "tiny-gpt2 trains in a few MB per sample: host memory is not the limit"
        return Starter(hw, CPU_MODEL, ranks, "fp32", [8, 16], strategies, basis, 4)
    precision = "bf16" if hw.bf16 else "amp"
    facts = BUILTIN[GPU_MODEL].measured
    activation = activation_bytes(
        facts.activation_bytes_fp32, facts.activation_bytes_bf16, precision
    )
    assert hw.gpu_memory_bytes is not None
    fit = fitting_batch(hw.gpu_memory_bytes, facts.parameters, activation, precision=precision)
    top = fit.batch
    batches = sorted({max(1, top // 4), max(1, top // 2), top})
    # fp16's GradScaler cannot agree across shards and stages: model parallelism wants bf16
    model_parallel = hw.gpus > 1 and precision == "bf16"
    strategies = ["ddp", "fsdp"] + (["tp", "pp", "hybrid"] if model_parallel else [])
    basis = f"batch {top}, {fit.basis}; and the two below it"
    # 1f1b wants at least one micro-batch per stage; the count must divide every batch
    micro = max(4, hw.gpus)
    if any(b % micro for b in batches):
        micro = 4
    return Starter(
        hw, GPU_MODEL, powers_of_two(hw.gpus), precision, batches, strategies, basis, micro
    )


def _flow(values: list[int] | list[str]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def starter_yaml(starter: Starter) -> str:
    """The config text, every choice commented with why."""
    hw = starter.hardware
    device = "cuda" if hw.gpus else "cpu"
    model_parallel = any(s in starter.strategies for s in ("tp", "pp", "hybrid"))
    lines = [
        "# torchscale starter config, written by `torchscale config init`",
        f"# sized for: {hw.source}",
        "# check it: torchscale config validate FILE; see the plan: torchscale benchmark -c FILE "
        "--dry-run",
        f'experiment_name: "starter_{hw.name.replace("-", "_")}"',
        f'description: "{starter.model} on {hw.gpu_name or "CPU ranks"}: a first scaling sweep"',
        "",
        f"# {'GPT-2 124M' if hw.gpus else 'a 2-block GPT-2 for CPU'}; add models here "
        "(torchscale list shows them, and which strategies each supports)",
        f"models: [{starter.model}]",
        f"# {starter.batch_basis}",
        f"batch_sizes: {_flow(starter.batch_sizes)}",
        "# powers of two up to "
        + (f"the node's {hw.gpus} GPU(s)" if hw.gpus else f"the {hw.cpu_cores} usable core(s)"),
        f"gpu_counts: {_flow(starter.gpu_counts)}",
        f"device: {device}",
        "",
        "training:",
        f"  # {PRECISION_NOTES[starter.precision]}",
        f"  precision: [{starter.precision}]",
        "  # cells a strategy cannot run (tp on one GPU, a mesh the world size does not divide)",
        "  # are skipped with the reason before anything is launched",
        f"  strategy: {_flow(starter.strategies)}",
        "  optimizer: adamw",
    ]
    if model_parallel:
        lines += [
            "  parallel:",
            "    # tp and pp use every rank of a cell"
            + ("; hybrid: FSDP across TP groups of 2" if "hybrid" in starter.strategies else ""),
            f"    microbatches: [{starter.microbatches}]     # pipeline micro-batches: at least "
            "one per stage for 1f1b, and must divide the batch",
            "    schedule: [1f1b]      # or gpipe, interleaved_1f1b",
        ]
        if hw.gpus:
            lines.append("    hybrid: [fsdp_tp]")
    lines += [
        "",
        "measurement:",
        "  warmup_steps: 5",
        "  steps: 20",
        "  repeats: 3",
        "",
        "launcher:",
        "  cell_timeout_s: 900",
        "",
    ]
    return "\n".join(lines)
