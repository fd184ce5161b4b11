"""Words for a diagnosis' ranked problems (`Diagnosis.findings`, a
cell result's and a profile analysis' alike: `problem.*`): a problem stores its code and
figures (offline/analysis/diagnosis/findings.py makes them); its title, evidence and next step
are said here when shown, the next step for the run it is shown for (one host, synthetic data,
a user's job in its framework's own terms)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.schema.cell_result import CellResult, JobFacts
from torchscale.contracts.schema.diagnosis import Estimate, Problem
from torchscale.contracts.wording import Phrases, diagnosis_straggler, spell
from torchscale.contracts.wording.figures import change_text, share_text
from torchscale.contracts.wording.spell import pct

# Words for the diagnosis' ranked problems (`diagnosis.Problem`): a problem stores its code
# and figures (offline/analysis/diagnosis/findings.py makes them); its title, evidence and next
# step are said here when shown, so a fix reworded here reads so in every stored result. The next
# step may depend on the run it is shown for (one host, synthetic data), given as context, never
# cut out of stored words.

Figures = Mapping[str, Any]

who, _device_word, _phase = (
    diagnosis_straggler.who,
    diagnosis_straggler.device_word,
    diagnosis_straggler.phase_words,
)


def _estimate(value: Any) -> Estimate | None:
    return None if value is None else Estimate.model_validate(value)


def _share(figures: Figures, name: str) -> str:
    return share_text(_estimate(figures.get(name)))


def _who(figures: Figures, name: str = "rank") -> str:
    return who(figures.get("device", "cpu"), figures[name])


# ---- titles -------------------------------------------------------------------------------


def _host_bound_busy_title(f: Figures) -> str:
    from torchscale.contracts import wording
    from torchscale.contracts.finding import Finding

    verdict = f.get("verdict")
    return wording.say(Finding.model_validate(verdict)) if verdict is not None else ""


def _mfu_shown(f: Figures) -> str:
    interval = _estimate(f.get("mfu_interval"))
    if interval is not None and interval.value is not None:
        return share_text(interval)
    return spell.pct_small(f["mfu"])


def _inflation(f: Figures) -> str:
    if f.get("low") is None or f.get("high") is None:
        return f"{change_text(f['share'], None, None)} (no interval)"
    return change_text(f["share"], f["low"], f["high"])


# ---- evidence -----------------------------------------------------------------------------


def _imbalance_evidence(f: Figures) -> list[str]:
    lines = [f"ranks wait for peers {_share(f, 'stall')} of the step (mean over ranks)"]
    waits = f.get("rank_waits") or []
    if waits:
        lines.append(
            "wait for peers by rank (share of its own step): "
            + ", ".join(f"rank {r} {share_text(_estimate(e))}" for r, e in waits)
        )
    if f.get("compute_spread") is not None:
        lines.append(
            f"compute time differs between the fastest and slowest rank by "
            f"{pct(f['compute_spread'])} of the step (median over steps)"
        )
    return lines


def _exposed_evidence(f: Figures) -> list[str]:
    how = (
        "waiting for peers excluded"
        if f.get("waits_known")
        else "may include waiting for peers: no other rank matched to separate it"
    )
    lines = [
        f"exposed transfer (communication with nothing computing, {how}): "
        f"{_share(f, 'exposed')} of the step"
    ]
    if f.get("comm_frac") is not None:
        lines.append(f"all communication, hidden or not: {pct(f['comm_frac'])} of the step")
    if f.get("overlap_pct") is not None:
        lines.append(
            f"compute/communication overlap: {spell.percent_whole(f['overlap_pct'])} of the "
            "communication time (HTA definition)"
        )
    return lines


def _data_evidence(f: Figures) -> list[str]:
    lines = [
        f"waiting for data with nothing else running: {_share(f, 'data')} of the step (mean "
        "over ranks)"
    ]
    if f.get("worst_rank") is not None:
        lines.append(f"slowest: {_who(f, 'worst_rank')} at {pct(f['worst_share'])} of its step")
    return lines


def _busy_evidence(f: Figures) -> list[str]:
    if f.get("gpu_busy_s") is not None and f.get("step_s") is not None:
        return [
            f"GPU busy {spell.trace_seconds(f['gpu_busy_s'])} of a "
            f"{spell.trace_seconds(f['step_s'])} step"
        ]
    return [f"GPU busy {pct(f['busy_share'])} of the step"]


EVIDENCE: dict[str, Callable[[Figures], list[str]]] = {
    "problem.straggler": diagnosis_straggler.evidence,
    "problem.imbalance.host": _imbalance_evidence,
    "problem.imbalance.disputed": _imbalance_evidence,
    "problem.imbalance.waited_for": _imbalance_evidence,
    "problem.imbalance.turns": _imbalance_evidence,
    "problem.exposed_comm": _exposed_evidence,
    "problem.data_wait": _data_evidence,
    "problem.launch_wait": lambda f: [
        f"the device idles with nothing queued {_share(f, 'host_wait')} of the step (part of "
        "the step model's rest: the next kernel was launched only after the previous one ended)"
    ],
    "problem.host_bound.busy": _busy_evidence,
    "problem.host_bound.arithmetic": lambda f: [
        f"MFU {_mfu_shown(f)}, under {pct(f['threshold'])}: at its peak the GPU would finish "
        "the step's arithmetic in that share of the step (no busy trace: judged by arithmetic)"
    ],
}

# ---- the next step ------------------------------------------------------------------------

HOST_FIX = (
    "{who}'s training thread was ready to run and waited for a CPU for most of its extra "
    "time: other work shares its cores. Check what runs there (`top -H`, `ps -eLo "
    "psr,pcpu,comm`), give each rank cores of its own (fewer ranks or threads per node, CPU "
    "pinning) and move other work off the node; the code is not slower."
)


def _straggler_fix(f: Figures, run: Run) -> str:
    name, kind = _who(f), f.get("kind")
    phase = "data" if kind == "input" else f.get("phase")
    if kind == "host":
        return HOST_FIX.format(who=name)
    if kind == "communication":
        return (
            f"{name} launches its collectives after the others with its work on par: look at "
            "what runs between its backward and its all-reduce (a DDP communication hook, "
            "gradient compression, a per-bucket callback, logging), its NIC or link (`ibstat`, "
            "NCCL_DEBUG=INFO) and, on GPUs, a stream that launches the collective late."
        )
    if phase in ("forward", "backward"):
        if f.get("device", "cpu") != "cpu":
            return (
                f"Check {name}: SM clock and throttle reasons in the telemetry (thermal, power "
                "cap; `nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE`), other processes on "
                "that GPU (`nvidia-smi`), its PCIe/NVLink link; if the hardware is healthy, "
                "look for uneven inputs on that rank (longer sequences, larger batch)."
            )
        return (
            f"Check the host of {name}: CPU frequency scaling and other processes on its cores "
            "(`top`, `lscpu`), OMP_NUM_THREADS and core pinning (`taskset`/`numactl`) so ranks "
            "do not share cores; if the host is healthy, look for uneven inputs on that rank."
        )
    if phase == "data":
        settings = (
            "raise num_workers, set pin_memory=True and persistent_workers=True, "
            "prefetch_factor >= 4"
            if run.job is None
            else f"set {loader(run.job, run.gpu)}"
        )
        return (
            f"{name} waits on its DataLoader: {settings}; check that rank's storage or "
            "network read speed and that its data shard is not larger than the others."
        )
    if phase == "optimizer":
        return (
            f"The optimizer step on {name} is slower: use the fused/foreach optimizer "
            "implementation (`fused=True`), check for CPU offload or host contention on that "
            "rank."
        )
    return (
        f"{name} loses the time outside the marked phases: look for extra work on that rank "
        "(logging, checkpointing, evaluation, host syncs) and mark phases with "
        "`record_function` ranges to narrow it down."
    )


# a tp, pp or hybrid cell's communication is not DDP's gradient all-reduce: other remedies
MODEL_PARALLEL_FIX = {
    "tp": (
        "Tensor-parallel all-reduces sit inside every layer's forward and backward, on the "
        "critical path: keep each TP group inside one node (NVLink), use a smaller tp with "
        "more data parallelism (hybrid fsdp_tp) if memory allows, and consider sequence "
        "parallelism (reduce-scatter + all-gather, less activation memory); on CPU/gloo TP "
        "communication is rarely worth it beyond measuring."
    ),
    "pp": (
        "Pipeline transfers and waits between stages: more micro-batches, the 1f1b or "
        "interleaved_1f1b schedule, and stages of equal cost (see parallel.stages in the "
        "benchmark result)."
    ),
    "hybrid": (
        "A 2-D mesh communicates on both axes: keep the inner axis (tp or pp) inside a node "
        "and the data-parallel axis across nodes, and compare with the pure layouts in the "
        "report's strategies view before tuning collectives."
    ),
}


def _exposed_fix(f: Figures, run: Run) -> str:
    model_parallel = MODEL_PARALLEL_FIX.get(f.get("strategy") or "")
    if model_parallel is not None:
        return model_parallel
    nodes = 1 if run.single_node else f.get("nodes")
    # which network interface carries the traffic is a question only across hosts
    across = "" if nodes == 1 else ("across hosts, " if nodes is None else "")
    if run.job is not None and f.get("strategy") != "fsdp":
        return _job_sync_fix(run.job, f, None if nodes == 1 else across)
    if f.get("gloo"):
        interface = "" if nodes == 1 else f"; {across}set GLOO_SOCKET_IFNAME to the fast interface"
        return (
            "Hide or shrink gradient communication: DDP bucket_cap_mb (smaller buckets start "
            "earlier and overlap more of backward; larger ones cut per-call overhead), "
            f"gradient_as_bucket_view=True, gradient accumulation under no_sync() ({ONCE_PER_N}), "
            f"a bf16/fp16 compression comm hook{interface}."
        )
    transport = (
        ""
        if nodes == 1
        else f" {across.capitalize()}check NCCL uses the fast transport (NCCL_DEBUG=INFO; "
        "NCCL_IB_HCA / NCCL_SOCKET_IFNAME; do not force NCCL_ALGO/NCCL_PROTO)."
    )
    return (
        "Hide or shrink gradient communication: tune DDP bucket_cap_mb, set "
        f"gradient_as_bucket_view=True and {STATIC_GRAPH_WHEN}, accumulate gradients under "
        f"no_sync() ({ONCE_PER_N}), register a bf16 compression comm hook; for FSDP enable "
        f"forward/backward prefetch.{transport}"
    )


def _job_sync_fix(job: JobFacts, f: Figures, across: str | None) -> str:
    """Gradient communication in the job's own settings (`gradient_sync`), then which interface
    carries it across hosts by backend (`across`: its lead-in; None: one host, no network)."""
    own = gradient_sync(job)
    if across is None:
        return f"Hide or shrink gradient communication, in the job's own settings: {own}."
    network = (
        "set GLOO_SOCKET_IFNAME to the fast interface."
        if f.get("gloo")
        else "check NCCL uses the fast transport (NCCL_DEBUG=INFO; NCCL_IB_HCA / "
        "NCCL_SOCKET_IFNAME)."
    )
    said = across + network
    return (
        f"Hide or shrink gradient communication, in the job's own settings: {own}. "
        f"{said[0].upper()}{said[1:]}"
    )


def _turns_fix(f: Figures, run: Run) -> str:
    # synthetic batches are the same size on every rank already: no sampler to set
    sampler = "" if run.synthetic else f" ({equal_work(run.job)})"
    return (
        f"Give every rank the same work per step: equal batch sizes{sampler}, sequences "
        "bucketed or padded to equal lengths per step (length-grouped sampling), no "
        "rank-dependent extra work; check dynamic shapes or expert routing that vary by rank."
    )


def _host_bound_fix(f: Figures, run: Run) -> str:
    if f.get("compiled"):  # a compiled cell has had its launches cut once already
        return (
            "Give the GPU more work per launch: a bigger batch or model, or CUDA graphs "
            "(torch.compile mode='reduce-overhead'; this cell was compiled in the default "
            "mode); a host-bound step is noisier, so judge its spread after that."
        )
    return (
        "Give the GPU more work per launch: a bigger batch or model, CUDA graphs "
        "(torch.compile mode='reduce-overhead'), or torch.compile to cut launches; a "
        "host-bound step is noisier, so judge its spread after that."
    )


class Run:
    """What the run a problem is shown for says about its next step: one host (no network
    interface to pick), synthetic data (no sampler to set), a user's job (its own settings
    named, `loader`) on a GPU or not. Unknown: the stored figures rule."""

    def __init__(
        self,
        single_node: bool = False,
        synthetic: bool = False,
        job: JobFacts | None = None,
        gpu: bool = False,
    ) -> None:
        self.single_node = single_node
        self.synthetic = synthetic
        self.job = job
        self.gpu = gpu


def run_of(result: CellResult | None) -> Run:
    """The run facts of a result (none: the stored figures rule)."""
    if result is None:
        return Run()
    synthetic = result.data is not None and result.data.source == "synthetic"
    return Run(
        single_node=(result.cell.nodes or 1) == 1,
        synthetic=synthetic,
        job=result.job,
        gpu=result.cell.device == "cuda",
    )


FIXES: dict[str, Callable[[Figures, Run], str]] = {
    "problem.straggler": _straggler_fix,
    "problem.imbalance.host": lambda f, run: HOST_FIX.format(who=_who(f)),
    "problem.imbalance.disputed": lambda f, run: (
        "The own-work test found a slower rank but another check points elsewhere (see the "
        "verdict): profile again with more steps (--profile-steps) on a quiet machine "
        "before acting on one rank."
    ),
    "problem.imbalance.waited_for": lambda f, run: (
        f"{_who(f)} is late outside the work the timers measure, or by too little per step for "
        "the test: check its host (other processes on its cores, CPU frequency, "
        "`top`/`lscpu`), logging or host syncs on that rank, and measure more steps "
        "(--steps) so a smaller gap can be tested."
    ),
    "problem.imbalance.turns": _turns_fix,
    "problem.exposed_comm": _exposed_fix,
    "problem.data_wait": lambda f, run: (
        (
            "Feed the loop ahead of time: DataLoader num_workers > 0 (about the cores per "
            "rank), pin_memory=True with .to(device, non_blocking=True), "
            "persistent_workers=True, prefetch_factor 4"
            if run.job is None
            else f"Feed the loop ahead of time: set {loader(run.job, run.gpu)}"
        )
        + "; move decoding and augmentation out of the step."
    ),
    "problem.launch_wait": lambda f, run: (
        "Give the device more work per launch: a larger batch per GPU, CUDA graphs "
        "(torch.compile(mode='reduce-overhead')), torch.compile to fuse small kernels, and no "
        "host syncs (.item(), .cpu(), printing tensors) inside the step."
    ),
    "problem.host_bound.busy": _host_bound_fix,
    "problem.host_bound.arithmetic": _host_bound_fix,
}


def evidence(finding: Any, notes: list[Any] = ()) -> list[str]:  # type: ignore[assignment]
    """A problem's evidence lines, then its notes (each a finding, said by its code)."""
    from torchscale.contracts import wording

    make = EVIDENCE.get(finding.code)
    lines = make(finding.figures) if make is not None else []
    return [*lines, *(wording.say(note) for note in notes)]


def recommendation(finding: Any, run: Run | None = None) -> str:
    """A problem's next step for the run it is shown for (`run`: its facts; none: as stored)."""
    make = FIXES.get(finding.code)
    return make(finding.figures, run or Run()) if make is not None else ""


# the figures a problem's title and next step are made of, by code: two runs' problems with
# the same code and these figures are one problem (the rest are each run's measurements)
SAID_BY: dict[str, tuple[str, ...]] = {
    "problem.straggler": ("device", "rank", "backend", "op", "kind", "phase", "peer"),
    "problem.imbalance.host": ("device", "rank"),
    "problem.imbalance.disputed": (),
    "problem.imbalance.waited_for": ("device", "rank"),
    "problem.imbalance.turns": (),
    "problem.exposed_comm": ("backend", "strategy", "nodes", "gloo"),
    "problem.data_wait": (),
    "problem.launch_wait": ("device",),
    "problem.host_bound.busy": ("verdict", "compiled"),
    "problem.host_bound.arithmetic": ("mfu", "mfu_interval", "compiled"),
}


def group(finding: Any) -> str | None:
    """What makes problems of different runs one: its code and the figures its words are made
    of (SAID_BY), never its run's name or measurements."""
    names = SAID_BY.get(finding.code, tuple(sorted(finding.figures)))
    said = {name: finding.figures.get(name) for name in names}
    return json.dumps([finding.code, said], sort_keys=True)


def title(problem: Problem) -> str:
    """A problem's title: its code's phrase."""
    from torchscale.contracts import wording

    return wording.say(problem.finding)


Problem.words = sys.modules[__name__]

# A next step in a user's job's own terms: the settings its framework exposes for the loader,
# gradient communication and per-rank work (TrainingArguments for the Hugging Face Trainer,
# Lightning's Trainer and DDPStrategy, accelerate's Accelerator, a plain loop's DataLoader and
# DistributedDataParallel), from what the probe saw of the job (`JobFacts`). A built-in cell's
# advice stays in torchscale's terms (contracts/wording/diagnosis_problems.py).

PREFETCH = 4  # the prefetch factor the loader advice names; one already at least this is kept

# where a framework's job builds the DataLoader the advice is about (the Trainer's: its own)
LOADER_PLACE = {
    "lightning": " in train_dataloader()",
    "accelerate": " before accelerator.prepare()",
}

# what gradient accumulation changes besides the all-reduce: the samples an optimizer step sees
ONCE_PER_N = (
    "the all-reduce then runs once per N micro-batches, and each optimizer step trains on N "
    "times the samples: keep the learning rate right for that larger global batch, or cut the "
    "per-device batch by N"
)
# static_graph=True is right only for a model whose graph and used parameters never change
STATIC_GRAPH_WHEN = (
    "static_graph=True only where every step runs the same graph and uses the same parameters "
    "(no control flow that skips layers)"
)


def _loader_settings(job: JobFacts, gpu: bool, prefix: str) -> str:
    """The loader's settings to change, `name=value` with the framework's `prefix`; the ones
    already set as advised are left out (pinned memory only where a GPU copies)."""
    settings = [f"{prefix}num_workers=N"]
    if not job.persistent_workers:
        settings.append(f"{prefix}persistent_workers=True")
    if job.prefetch_factor is None or job.prefetch_factor < PREFETCH:
        settings.append(f"{prefix}prefetch_factor={PREFETCH}")
    if gpu and not job.pin_memory:
        settings.append(f"{prefix}pin_memory=True")
    return ", ".join(settings)


def loader(job: JobFacts, gpu: bool) -> str:
    """What to set where the job builds its loader, N said against its own workers."""
    if job.framework == "hf_trainer":
        where = f"TrainingArguments({_loader_settings(job, gpu, 'dataloader_')})"
    else:
        place = LOADER_PLACE.get(job.framework or "", "")
        where = f"DataLoader({_loader_settings(job, gpu, '')}){place}"
    workers = job.num_workers
    than = f"more than its {workers}, " if workers is not None else ""
    return f"{where}, N {than}about the cores per rank"


DDP_SETTINGS = "bucket_cap_mb=..., gradient_as_bucket_view=True, static_graph=True"

GRADIENT_SYNC = {
    "hf_trainer": (
        f"TrainingArguments(ddp_bucket_cap_mb=..., gradient_accumulation_steps=N), {ONCE_PER_N}"
    ),
    "lightning": (
        f"Trainer(strategy=DDPStrategy({DDP_SETTINGS}), accumulate_grad_batches=N), {ONCE_PER_N}; "
        f"{STATIC_GRAPH_WHEN}"
    ),
    "accelerate": (
        "Accelerator(gradient_accumulation_steps=N, kwargs_handlers=["
        f"DistributedDataParallelKwargs({DDP_SETTINGS})]) with accelerator.accumulate(model), "
        f"{ONCE_PER_N}; {STATIC_GRAPH_WHEN}"
    ),
    "pytorch": (
        f"DistributedDataParallel(model, {DDP_SETTINGS}), gradient accumulation under "
        f"model.no_sync() ({ONCE_PER_N}), a bf16 compression hook (model.register_comm_hook); "
        f"{STATIC_GRAPH_WHEN}"
    ),
}


def gradient_sync(job: JobFacts) -> str:
    """Where the job sets DDP's buckets and gradient accumulation, and what to set there."""
    return GRADIENT_SYNC[job.framework or "pytorch"]


# what each framework leaves to the user for equal batches on every rank: Lightning and
# accelerate shard the loader themselves (Lightning's use_distributed_sampler, accelerate's
# prepare with even_batches), so a DistributedSampler of the user's is not theirs to add
EQUAL_WORK = {
    "hf_trainer": (
        'TrainingArguments(train_sampling_strategy="group_by_length", dataloader_drop_last=True)'
    ),
    "lightning": (
        "DataLoader(drop_last=True); Lightning adds the DistributedSampler itself "
        "(Trainer(use_distributed_sampler=True), its default)"
    ),
    "accelerate": (
        "accelerator.prepare(dataloader) shards it and evens the last batch "
        "(DataLoaderConfiguration(even_batches=True), its default); DataLoader(drop_last=True) "
        "drops it instead"
    ),
    "pytorch": "DistributedSampler with drop_last=True",
}


def equal_work(job: JobFacts | None) -> str:
    """What the job sets for equal batches on every rank, in its framework's terms."""
    return EQUAL_WORK[(job.framework if job is not None else None) or "pytorch"]


PHRASES: Phrases = {
    "problem.straggler": diagnosis_straggler.title,
    "problem.imbalance.host": lambda f: (
        f"Ranks wait for {_who(f)}, which the host held back (it waited for a CPU)"
    ),
    "problem.imbalance.disputed": (
        "Waiting for peers: the slowest rank's own work is disputed by other evidence"
    ),
    "problem.imbalance.waited_for": lambda f: (
        f"Ranks wait for {_who(f)}, though its measured work is not significantly slower"
    ),
    "problem.imbalance.turns": "Load imbalance: ranks take turns waiting for each other",
    "problem.exposed_comm": lambda f: (
        f"Exposed {f['backend'] + ' ' if f.get('backend') else ''}communication"
    ),
    "problem.data_wait": "Training waits for data",
    "problem.launch_wait": lambda f: (
        f"{_device_word(f.get('device', 'cuda'))} idle waiting for the host to launch work"
    ),
    "problem.host_bound.busy": _host_bound_busy_title,
    "problem.host_bound.arithmetic": lambda f: (
        f"host-bound (by arithmetic): MFU {_mfu_shown(f)}, the step's FLOPs at the GPU's "
        "peak fill that share of the step; the GPU waits for Python/launches"
    ),
    "problem.profiler_slower": lambda f: (
        f"in the traced steps, {_inflation(f)} slower under the profiler"
    ),
}
