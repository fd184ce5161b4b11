"""Words for why a plan skips a cell (`CellError.why`: `plan.*`) or a parallel
layout cannot train a model (`layout.*`: the plan's skip or a worker's refusal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

# Words for why a parallel layout cannot train a model (rank/parallel/rank_layout.py and the
# models' ParallelPlans): a cell the plan skips, or a worker's refusal. Figures: world, dp, tp,
# pp, microbatches, the batch, the model's class and the width, heads, blocks or vocabulary that
# does not split.

Figures = Mapping[str, Any]


def _at(f: Figures) -> str:
    """Which layer or block the figure belongs to ('block 2: '), when one does."""
    for noun in ("block", "layer"):
        if noun in f:
            return f"{noun} {f[noun]}: "
    return ""


def _too_few_blocks(f: Figures) -> str:
    virtual = " x 2 virtual stages" if f["stages_per_rank"] > 1 else ""
    return (
        f"{f['model_class']} has {f['blocks']} blocks, fewer than the "
        f"{f['stage_modules']} stage modules of {f['pp']} pipeline ranks{virtual}"
    )


def _mlp_width(f: Figures) -> str:
    where = _at(f) + "MLP" if _at(f) else "MLP hidden"
    return f"{where} width {f['width']} is not divisible by tp={f['tp']}"


# Words for why a plan skips a cell by design (orchestration/plan.py; figures: gpus a cell
# needs per node, have: a node's GPUs, nodes, source: where the count came from when not from
# the planning node; world, tp, pp: the mesh; the data source and the models it feeds). Why a
# layout cannot train a model is worded above (`layout.*`).


def _source(figures: Mapping[str, Any]) -> str:
    return f" ({figures['source']})" if figures.get("source") else ""


def _no_gpu(figures: Mapping[str, Any]) -> str:
    if figures.get("source"):
        return f"device 'cuda' requested but a node has no GPU{_source(figures)}"
    return "device 'cuda' requested but no CUDA GPU is visible"


def _needs_gpus(figures: Mapping[str, Any]) -> str:
    have = f"has {figures['have']}{_source(figures)}"
    if figures.get("nodes", 1) == 1:
        which = "a node" if figures.get("source") else "this node"
        return f"needs {figures['gpus']} GPUs; {which} {have}"
    return f"needs {figures['gpus']} GPUs on each of {figures['nodes']} nodes; a node {have}"


def _mesh_indivisible(f: Mapping[str, Any]) -> str:
    inner = f"tp {f['tp']}" if "tp" in f else f"pp {f['pp']}"
    return f"world size {f['world']} is not divisible by the mesh ({inner})"


def _tp_spans_nodes(f: Mapping[str, Any]) -> str:
    per_node = f["per_node"]
    keep = (
        f"hybrid fsdp_tp with parallel.tp {per_node} keeps TP inside each node"
        if per_node > 1
        else "give each node several ranks and use hybrid fsdp_tp"
    )
    return (
        f"tensor-parallel groups of {f['tp']} ranks would span nodes ({f['nodes']} nodes x "
        f"{per_node} ranks): {keep}, or set training.parallel.tp_across_nodes: true"
    )


PHRASES: Phrases = {
    "layout.below_one": "world, tp, pp, dp and microbatches must all be at least 1",
    "layout.model_said": "the model's parallel plan: {said}",
    "layout.not_product": "world {world} is not dp x tp x pp = {dp} x {tp} x {pp}",
    "layout.tp_whole_world": (
        "strategy tp runs one TP group over the whole world (tp = world >= 2, pp = 1); use "
        "hybrid fsdp_tp for data parallelism across TP groups"
    ),
    "layout.pp_whole_world": (
        "strategy pp runs one pipeline over the whole world (pp = world >= 2, tp = 1); use "
        "hybrid ddp_pp for data parallelism across pipelines"
    ),
    "layout.fsdp_tp_degrees": "hybrid fsdp_tp needs tp >= 2 and pp = 1",
    "layout.ddp_pp_degrees": "hybrid ddp_pp needs pp >= 2 and tp = 1",
    "layout.unknown": "strategy {strategy!r} with hybrid {hybrid!r} is not a layout",
    "layout.sp_without_tp": "sequence parallelism applies to tensor-parallel layouts only",
    "layout.unknown_schedule": (
        "pipeline schedule {schedule!r} is not gpipe, 1f1b or interleaved_1f1b"
    ),
    "layout.microbatches_without_pp": "microbatches and schedule apply to pipeline layouts only",
    "layout.1f1b_microbatches": (
        "1f1b needs at least as many micro-batches as stages ({microbatches} < {pp})"
    ),
    "layout.interleaved_microbatches": (
        "interleaved_1f1b needs micro-batches ({microbatches}) to be a multiple of max(1, "
        "microbatches // pp) = {rounds}"
    ),
    "layout.batch_not_positive": "batch size {batch} is not positive",
    "layout.fp16_scaler": (
        "fp16 needs GradScaler, whose inf/NaN check sees only this rank's gradient shards or "
        "stages, so ranks could disagree on skipping a step; use bf16 or fp32"
    ),
    "layout.channels_last_pipeline": (
        "channels_last with pipeline parallelism: torch's stage-to-stage sends need contiguous "
        "activations (and contiguous boundaries crashed gloo ranks in torch 2.13)"
    ),
    "layout.pipeline_grad_accum": (
        "gradient accumulation over pipeline steps is not supported (torch's schedules rescale "
        "the whole .grad at each step's last backward); raise microbatches instead"
    ),
    "layout.no_tp_plan": (
        "no tensor-parallel plan for plug-in model class {model_class} (its ModelBundle declares "
        "no tp_plan)"
    ),
    "layout.no_pp_split": (
        "no pipeline split for plug-in model class {model_class} (its ModelBundle declares no "
        "pp_split)"
    ),
    "layout.microbatches_split": (
        "{microbatches} micro-batches do not divide the per-replica batch {batch}"
    ),
    "layout.microbatch_samples": (
        "{microbatches} micro-batches of the per-replica batch {batch} hold {samples} sample "
        "each, fewer than the {least} a pipeline's micro-batch must hold; raise the batch or "
        "lower microbatches"
    ),
    "layout.too_few_blocks": _too_few_blocks,
    "layout.sequence_split": (
        "sequence length {seq_len} is not divisible by tp={tp} (sequence parallelism)"
    ),
    "layout.mlp_too_shallow": "no tensor-parallel plan for an MLP with fewer than 2 hidden layers",
    "layout.mlp_width": _mlp_width,
    "layout.mlp_no_sequence": (
        "sequence parallelism needs a sequence dimension; the MLP's inputs have none"
    ),
    "layout.ffn_width": lambda f: (
        f"{_at(f)}feed-forward width {f['width']} is not divisible by tp={f['tp']}"
    ),
    "layout.vocab": (
        "vocabulary {vocab} (embedding and output projection rows) is not divisible by tp={tp}"
    ),
    "layout.heads": lambda f: (
        f"{_at(f)}{f['heads']} attention heads are not divisible by tp={f['tp']}"
    ),
    "layout.seq2seq_no_sp": (
        "no sequence-parallel plan for the encoder-decoder transformer: its attention stays "
        "replicated under TP (nn.MultiheadAttention's packed in_proj_weight), so there is no "
        "column/row-parallel pair around it whose all-reduces could become all-gather + "
        "reduce-scatter over sequence shards"
    ),
    "layout.resnet_no_tp": (
        "no tensor-parallel plan for ResNet: its layers are convolutions and BatchNorm "
        "(channel-split convolutions are not among torch's ColwiseParallel/RowwiseParallel "
        "styles)"
    ),
    "plan.needs_gpus": _needs_gpus,
    "plan.no_gpu": _no_gpu,
    "plan.nccl_without_cuda": "backend 'nccl' needs CUDA GPUs; none is visible",
    "plan.nccl_shared_gpu": (
        "{ranks} ranks would share each GPU (launcher.ranks_per_gpu) and NCCL refuses two ranks "
        "on one GPU: leave backend to 'auto' (gloo where ranks share a GPU)"
    ),
    "plan.gloo_cuda_p2p": (
        "a pipeline of {pp} stages sends activations with send/recv, which gloo does not copy "
        "off a GPU (only its collectives do): pipelines on CUDA need NCCL, a GPU per rank"
    ),
    "plan.partial_nodes": (
        "{world} GPUs do not fill whole nodes of {per_node} (launcher gpus_per_node); give "
        "launcher.nodes to choose the split"
    ),
    "plan.data_synthetic_only": (
        "plug-in models train on synthetic data only (their batch format is their own); "
        "data.source '{source}' cannot feed them"
    ),
    "plan.data_images_only": (
        "data.source '{source}' holds RGB images: it feeds image models only ({models:list})"
    ),
    "plan.tp_not_world": (
        "strategy tp runs one tensor-parallel group over the whole world: parallel.tp {tp} != "
        "world size {world} (hybrid fsdp_tp adds data parallelism across TP groups)"
    ),
    "plan.pp_not_world": (
        "strategy pp runs one pipeline over the whole world: parallel.pp {pp} != world size "
        "{world} (hybrid ddp_pp adds data parallelism across pipelines)"
    ),
    "plan.mesh_indivisible": _mesh_indivisible,
    "plan.tp_spans_nodes": _tp_spans_nodes,
    "plan.compiled_pipeline": (
        "training.compile with pipelining is not supported: the schedule calls each stage module "
        "itself (run the pp cells without compile)"
    ),
}
