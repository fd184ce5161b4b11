"""`torchscale config init`: a commented starter config sized for one node.

What it sizes and from what (docs/configuration.md, "Starter configs"):
- GPU counts: powers of two up to the node's GPUs (CPU: up to its cores, at most 4 ranks).
- Precision: bf16 where the GPUs compute in it, amp (fp16 autocast) on older GPUs, fp32 on CPU.
- Batch sizes: the largest power of two whose estimated DDP peak fits in 80 % of one GPU's
  memory, and the two below it. The estimate is static memory (16 bytes per parameter under
  AdamW: fp32 weights, gradients and two moments) plus activations per sample, from a peak
  measured on a GPU where torchscale has one (below, with where it was measured), else a
  formula: 34 x seq x hidden bytes per layer in 16-bit (Korthikanti et al. 2022, with a fused
  attention kernel) plus the logits, times 1.25. fp32 activations count double.
- Strategies: ddp and fsdp; with 2 GPUs or more also tp, pp and hybrid. Cells a strategy cannot
  run at some GPU count (tp on one GPU, say) are skipped with the reason, never launched.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchscale.config.hardware import GIB, Hardware

GPU_MODEL = "gpt2"
CPU_MODEL = "tiny-gpt2"
MEMORY_BUDGET = 0.80  # of one GPU's memory: the allocator's slack and the CUDA context
CUDA_CONTEXT_BYTES = 1 * GIB
FORMULA_MARGIN = 1.25
BYTES_PER_PARAMETER = 16  # AdamW: fp32 weights + gradients + exp_avg + exp_avg_sq


PRECISION_NOTES = {
    "bf16": "bf16 autocast: these GPUs compute in bf16",
    "amp": "fp16 autocast with a GradScaler: these GPUs have no bf16",
    "fp32": "fp32: CPU ranks",
}


@dataclass(frozen=True)
class ActivationFigure:
    bytes_per_sample: float
    basis: str


# activation bytes per sample measured on a GPU (peak allocated, slope over batch sizes)
MEASURED: dict[tuple[str, str], ActivationFigure] = {
    ("gpt2", "bf16"): ActivationFigure(
        0.879e9,
        "measured on one H100 (torchscale 0.7.0, 2026-11-22): peak allocated 9.89 GB at batch "
        "8 and 59.1 GB at batch 64, seq 1024",
    ),
}


def transformer_activation(layers: int, hidden: int, seq: int, vocab: int, fp32: bool) -> float:
    """Bytes per sample: 34 s h per layer in 16-bit (x2 in fp32) plus the logits (16-bit
    logits, their fp32 upcast in the loss and its gradient)."""
    width = 2 if fp32 else 1
    logits = seq * vocab * ((4 if fp32 else 2) + 4 + 4)
    return float(34 * seq * hidden * layers * width + logits)


def activation_per_sample(model: str, precision: str) -> ActivationFigure:
    """Measured where torchscale has a figure, else the formula for GPT-2 sizes."""
    sixteen_bit = "bf16" if precision in ("bf16", "amp") else precision
    measured = MEASURED.get((model, sixteen_bit))
    if measured is not None:
        if precision == "fp32":
            return ActivationFigure(2 * measured.bytes_per_sample, measured.basis + ", x2 for fp32")
        return measured
    formula = transformer_activation(12, 768, 1024, 50257, fp32=precision == "fp32")
    return ActivationFigure(
        formula * FORMULA_MARGIN,
        "formula: 34 x seq x hidden bytes per layer (16-bit) plus logits, x1.25",
    )


def fitting_batch(memory_bytes: int, parameters: int, activation: float) -> int:
    """The largest power of two whose estimated peak fits the budget (at least 1)."""
    budget = memory_bytes * MEMORY_BUDGET - CUDA_CONTEXT_BYTES - parameters * BYTES_PER_PARAMETER
    batch = 1
    while (batch * 2) * activation <= budget:
        batch *= 2
    return batch


def powers_of_two(limit: int) -> list[int]:
    counts, n = [], 1
    while n <= limit:
        counts.append(n)
        n *= 2
    return counts


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


def plan_starter(hw: Hardware, parameters: int) -> Starter:
    """Every choice of the starter config for `hw`; `parameters` of the GPU model (GPT-2)."""
    if hw.gpus == 0:
        ranks = powers_of_two(min(max(hw.cpu_cores, 1), 4))
        return Starter(
            hw,
            CPU_MODEL,
            ranks,
            "fp32",
            [8, 16],
            ["ddp", "fsdp", "tp", "pp"] if len(ranks) > 1 else ["ddp", "fsdp"],
            "tiny-gpt2 trains in a few MB per sample: host memory is not the limit",
            4,
        )
    precision = "bf16" if hw.bf16 else "amp"
    figure = activation_per_sample(GPU_MODEL, precision)
    assert hw.gpu_memory_bytes is not None
    top = fitting_batch(hw.gpu_memory_bytes, parameters, figure.bytes_per_sample)
    batches = sorted({max(1, top // 4), max(1, top // 2), top})
    # fp16's GradScaler cannot agree across shards and stages: model parallelism wants bf16
    model_parallel = hw.gpus > 1 and precision == "bf16"
    strategies = ["ddp", "fsdp"] + (["tp", "pp", "hybrid"] if model_parallel else [])
    basis = (
        f"largest power of two under {MEMORY_BUDGET:.0%} of {hw.gpu_memory_bytes / GIB:.0f} GiB: "
        f"{parameters * BYTES_PER_PARAMETER / 1e9:.1f} GB static + "
        f"{figure.bytes_per_sample / 1e9:.2f} GB per sample ({figure.basis})"
    )
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


def model_parameters(name: str) -> int:
    """Parameters of a built-in model, counted on the meta device (no memory)."""
    import torch

    from torchscale.models import build_model, parameter_count

    with torch.device("meta"):
        return parameter_count(build_model(name).model)
