"""Words for why a cell result's figure is null or has no interval:
`CellResult.unavailable` (`unavailable.*`, `peak.*`), `Estimate.reason` (`estimate.*`), the input
pipeline's notes (`data.notes`, `data.*`), the busy share's verdict and reason
(`host_bound.*`), the two kinds of interval (`intervals.*`) and which peak an MFU divides by
(`compute.peak_basis`, `compute.measured_peak_basis`: `peak.spec`, `peak.measured`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.wording import Phrases, reason_of, render, why
from torchscale.contracts.wording.figures import share_text
from torchscale.contracts.wording.spell import as_set, pct, pct_set, pct_small, spec_tflops

F = Mapping[str, Any]

# Words for why a figure of a cell is null (`CellResult.unavailable`: metric -> a code and its
# figures): the worker's own reasons, `unavailable.*`.

META_COUNT_FAILED = (
    "the FLOP count runs the step on the meta device (shapes only, no memory), where this "
    "model failed; a count on the device could need more memory than a measured step"
)


def ranks_differ(figures: Mapping[str, Any]) -> str:
    return "; ".join(str(why(reason_of(r))) for r in figures["reasons"])


def coded(code: str) -> Finding:
    """The finding of a figure-less reason: `coded('unavailable.telemetry_off')`."""
    assert code in PHRASES, code
    return Finding(code=code)


def one_reason(reasons: Iterable[Finding]) -> Finding:
    """The ranks' reasons for one null figure as one: the reason they share, else each rank's
    distinct reason (`unavailable.ranks_differ`, worded one after another)."""
    distinct = {reason.model_dump_json(): reason for reason in reasons}
    if len(distinct) == 1:
        return next(iter(distinct.values()))
    stored = [distinct[key].model_dump() for key in sorted(distinct)]
    return Finding(code="unavailable.ranks_differ", figures={"reasons": stored})


def reasons(unavailable: Mapping[str, Finding]) -> dict[str, str]:
    """Every reason of an `unavailable` map in words, by metric."""
    return {metric: str(why(reason)) for metric, reason in unavailable.items()}


# Words for why a figure has no interval or is not measurable (`Estimate.reason`, a code and
# its figures).


def _noise(f: Mapping[str, Any]) -> str:
    edge = as_set(f["edge"]) if "edge" in f else f"above {as_set(f['above'])}"
    return f"not measurable above noise: its 95 % interval reaches {edge}"


def _not_separable(f: Mapping[str, Any]) -> str:
    """`world_size`: one rank of it in the input; None: no collective matched across ranks."""
    size = f.get("world_size")
    cause = f"one rank of {size} in the input" if size else "no collective matched across the ranks"
    return (
        f"not separable: {cause}; the wait is inside exposed transfer (collective time with "
        "nothing computing)"
    )


# Words for what a cell's input pipeline notes (`CellResult.data.notes`: codes with
# their figures) and why it counted no bytes read (`unavailable["data.read_bytes_per_s"]`).


# Words for the findings of a GPU cell whose step is host time (the GPU's busy share).

# what the step split's compute part is on a host-bound GPU: the host issuing kernels
LAUNCH_TIME = "launch time"


def _traced(figures: Mapping[str, Any]) -> str:
    """'3 traced steps, threshold 50.0 %', and where collectives ran alone, that their time
    is left out of the step the share is of."""
    said = render("{steps} traced steps, threshold {threshold:share}", figures)
    if figures.get("collective_s"):
        said += render(", less {collective_s:ms} a step of collectives alone", figures)
    return said


def compute_part(figures: Mapping[str, Any], share: str) -> str:
    """The step split's compute figure on a host-bound GPU: '91.5 % launch time (GPU busy
    12.0 %)', never a bare share a reader takes for the GPU computing."""
    return f"{share} {LAUNCH_TIME} (GPU busy {pct(figures['busy_share'])})"


# Words for why a GPU cell's busy share is null (`CellResult.host_bound.reason`: a code and its
# figures): the busy trace's own reasons (rank/worker/busy_trace.py) and what the reader's
# arithmetic fallback found (offline/results/host_bound.py).

CAPTURE_FAILED = "the CUDA trace of the busy share failed"

_WHY = "{why:finding}"


def _mfu(f: F) -> str:
    """The MFU as tables spell it: with its interval where the result gives one."""
    interval = f.get("interval")
    return share_text(Estimate.model_validate(interval)) if interval else pct_small(f["mfu"])


# Words for why a cell has no MFU: no spec-sheet peak to divide by (contracts/gpu_peaks.py),
# no measured peak (rank/worker/measured_peak.py), or an MFU above 100 % of one (a bug, not a
# figure). Stored in `CellResult.unavailable` (`mfu`, `mfu_measured`) as codes with figures.

RUN_PERF = "run `torchscale validate --level perf` on the node first"


def mfu_above_peak(f: F) -> str:
    """Why an MFU above 100 % of a peak is no figure."""
    return (
        f"MFU above 100 % of the {f['which']} peak ({f['mfu']:.2f}): a FLOP count or peak bug, "
        "not reported"
    )


# Words for a cell's two kinds of interval: the rate's (samples/s, and MFU, its same share),
# where a rerun lands; the step times', how closely this run's steps pin each percentile.


def _two_scopes(figures: Mapping[str, Any]) -> str:
    """figures (each optional): repeats, steps: what each interval is taken over; mfu: an MFU
    is shown, whose interval is the rate's."""
    repeats = f"{figures['repeats']} repeats" if figures.get("repeats") else "its repeats"
    steps = f"{figures['steps']} steps" if figures.get("steps") else "steps"
    rate = "samples/s and MFU (the same share of it)" if figures.get("mfu") else "samples/s"
    return (
        f"{rate}: where a rerun of the cell lands ({repeats} and the drift between runs); step "
        f"times: how closely this run's {steps} pin each percentile, blind to what moves a "
        "rerun, so theirs is the narrower interval"
    )


# which peak an MFU divides by: the spec sheet's row (contracts/gpu_peaks.py `cell_peak`) or
# the measured one (rank/worker/measured_peak.py)
UNITS = {"conv": "cuDNN convolutions", "matmul": "cuBLAS matmuls"}


def _spec(f: F) -> str:
    """'NVIDIA H100 80GB HBM3 (as H100 SXM): fp32 dense peak 67 TFLOP/s (no TF32: ...)'."""
    row = f" (as {f['row']})" if f.get("row") else ""
    peak = f" {spec_tflops(f['tflops'])}" if f.get("tflops") is not None else ""
    text = f"{f['device']}{row}: {f['dtype']} dense peak{peak}"
    settings = f.get("tf32") or []
    on = [s for s in settings if s["on"]]
    why = "; ".join(f"{UNITS[s['unit']]} may use TF32: {s['source']}" for s in on)
    if on and f["dtype"] == "fp32":
        why += "; no TF32 units on this GPU"
    elif settings and not on:
        why = "no TF32: " + ", ".join(s["source"] for s in settings)
    return f"{text} ({why})" if why else text


def _report(r: F) -> str:
    where = f"on {r['host']} at {r['created_at']}: {r['dtype']} ({r['path']})"
    return f"measured by `torchscale validate` {where}"


def _measured(f: F) -> str:
    reports = f["reports"]
    said = "; ".join(map(_report, reports))
    return said if len(reports) == 1 else f"mean over {f['ranks']} ranks: {said}"


def peak_basis(basis: Finding | None, tflops: float | None) -> str | None:
    """The spec-sheet peak's basis with the peak it names (a field beside it)."""
    if basis is None:
        return None
    return _spec({**basis.figures, "tflops": tflops})


PHRASES: Phrases = {
    # the words each figure-less code says
    "unavailable.one_rank_straggler": "world size 1: no other rank to be slower than",
    "unavailable.one_rank_communication": "world size 1: no gradient communication to expose",
    "unavailable.not_language_model": "not a language model",
    "unavailable.no_allocator_on_cpu": "no CUDA caching allocator on CPU (see peak_rss_bytes)",
    "unavailable.nothing_reserved": "the allocator reserved nothing in the windows",
    "unavailable.no_window_time": "no measured window time",
    "unavailable.not_measurable": "not measurable above noise",
    "unavailable.synthetic_nothing_read": (
        "synthetic batches are made on the device: nothing is read"
    ),
    "unavailable.no_data_phase": "no phase timing: the data wait was not measured",
    "unavailable.phase_timing_off": "phase timing was off",
    "unavailable.flops_not_counted": "not counted",
    "unavailable.no_flop_count": "no FLOP count",
    "unavailable.no_stage_busy_time": "no busy time was recorded by the stages",
    "unavailable.compile_time_unread": "torch._dynamo's compile time could not be read",
    "unavailable.no_price": (
        "no price: set cost.per_gpu_hour in the config or --cost-per-gpu-hour in the report"
    ),
    "unavailable.no_tokens": "the model has no tokens (tokens/s is not defined for it)",
    "unavailable.no_phase_split": (
        "no phase timing with backward split at the last gradient on every rank"
    ),
    "unavailable.model_parallel": (
        "tp, pp and hybrid: communication runs inside forward and backward, so the phase timers "
        "cannot separate it (tensor parallelism: parallel.profiled_comm; pipelines: the bubble)"
    ),
    "unavailable.fsdp_no_split": (
        "FSDP: its forward and backward phases contain all-gather/reduce-scatter waits (backward "
        "is not split at the last gradient), so no step model separates compute from "
        "communication or names a straggler; profile the cell (`torchscale profile`) for both"
    ),
    "unavailable.host_bound_cpu": "CPU device: every step is host time; host-bound applies to GPUs",
    "unavailable.host_bound_own_job": (
        "no busy capture in this job (taken over the steps after the measured ones with the "
        "torch tool; not under nsys, nor when the job is measured to its end): its GPU's busy "
        "share is not measured"
    ),
    "unavailable.pipeline_phases": (
        "pipelines interleave the micro-batches' forward and backward inside the schedule: no "
        "per-phase split; the stage's busy time and the bubble stand in for it (parallel in the "
        "result)"
    ),
    "unavailable.no_allocator_stats_on_cpu": (
        "no CUDA caching allocator on CPU (torch.cuda.memory_stats is CUDA only)"
    ),
    "unavailable.telemetry_off": "measurement.telemetry.enabled is false",
    "unavailable.flops_off": "measurement.flops is off",
    "unavailable.compile_counters_unread": "torch._dynamo's counters were not read",
    "unavailable.cpu_device_init": "CPU device: no CUDA context to create",
    "unavailable.not_timed_by_rank": "not timed by this rank",
    "unavailable.parent_not_torchrun": (
        "the worker's parent is not torchrun: no launch time to count from"
    ),
    "unavailable.fsdp2_hooks": (
        "FSDP2 runs post-accumulate-grad hooks on the sharded parameters after each "
        "reduce-scatter, so they mark gradient reduction, not production: backward is reported "
        "whole (its communication waits included)"
    ),
    "unavailable.marked_steps": (
        "steps marked by torchscale.mark_step(), which names no parameters: no gradient hook "
        "marks the end of backward compute, so backward is reported whole (its communication "
        "waits included)"
    ),
    "unavailable.own_job_setup_whole": (
        "your job's set-up (its process group, CUDA context, model, optimizer and loader) is "
        "timed whole, from torch imported to the first training step, and shown as the model "
        "build: the probe sees no boundary inside it"
    ),
    "unavailable.no_trainable_parameters": (
        "no trainable parameters: no gradient hook marks the end of backward compute"
    ),
    "unavailable.hooks_missed": (
        "in some steps the gradient hooks did not fire as expected: those steps report backward "
        "whole"
    ),
    "unavailable.no_flops_counted": (
        "FlopCounterMode counted no FLOPs (no op of the step has a FLOP formula)"
    ),
    "unavailable.no_rank_sampled": "no rank was sampled",
    "unavailable.no_energy_used": "the windows used 0 J",
    "unavailable.no_host_readings": "no host readings from any rank",
    "unavailable.profiled_launch": (
        "this launch was profiled by torchscale profile: its analysis.json holds the "
        "communication of the profiled steps"
    ),
    "unavailable.probe_one_rank": "fewer than two ranks have profiled steps",
    "unavailable.probe_no_step": "the profiled steps held no complete step on some rank",
    "unavailable.flop_count_failed": (META_COUNT_FAILED + " ({error})"),
    "unavailable.own_job_flop_count_failed": (
        "counting the FLOPs of your job's step {step} failed ({error}); the step ran as it would "
        "have"
    ),
    "unavailable.own_job_flops_warmup": lambda f: (
        f"FLOPs are counted on your job's step {f['step']}, a warm-up step with one more after "
        f"it: give --warmup-steps {f['step'] + 1} or more"
    ),
    "unavailable.own_job_flops_compiled": (
        "your job runs torch.compile'd code: counting its ops would run a step outside the "
        "compiled graphs, so its FLOPs are not counted"
    ),
    "unavailable.own_job_flops_unfinished": (
        "the counted step ({step}) did not end with the count innermost (the job ended inside "
        "it, or entered a dispatch mode of its own there): FLOPs not counted"
    ),
    "unavailable.parent_unreadable": "the parent process could not be read ({error})",
    "unavailable.compile_counters_failed": "torch._dynamo's counters could not be read ({error})",
    "unavailable.ranks_differ": ranks_differ,
    # a figure the torchscale that wrote a result did not record (tools/convert_results.py)
    "unavailable.not_recorded": (
        "not recorded by the torchscale that wrote this file (its schema {schema})"
    ),
    "unavailable.probe_failed": "rank {rank}: profiled steps failed: {error}",
    "unavailable.probe_no_trace": lambda f: (
        "; ".join(str(why(reason_of(n))) for n in f["notes"]) or "the profiled steps left no trace"
    ),
    "unavailable.schedstat_unreadable": (
        "{path} unreadable ({error}): the CPU wait and CPU time are measured on Linux only "
        "(run_delay of CONFIG_SCHED_INFO)"
    ),
    "estimate.one_rank": "one rank: no peers to wait for",
    "estimate.one_step": "one step",
    "estimate.no_step_time": "no step time",
    "estimate.no_interval": "no interval",
    "estimate.few_steps_a_side": "fewer than two steps on a side",
    "estimate.no_busy_probe": "the GPU's busy time was not measured (no busy probe)",
    "estimate.one_unit": "one {unit}: spread unknown",
    "estimate.inside_noise": _noise,
    "estimate.range_only": "range of {n} {unit}s, no interval",
    "estimate.wait_not_separable": _not_separable,
    "data.plugin_drawn": (
        "batches from the plug-in's own iterable (ModelBundle.batches), one per micro-batch, "
        "drawn inside the data phase: the data wait is the step's wait for them"
    ),
    "data.plugin_not_read": "plug-in batches: their bytes are the plug-in's own, not counted",
    "data.plugin_not_model_parallel": (
        "the plug-in's batches are not drawn under tp, pp or hybrid (the ranks of a "
        "tensor-parallel group or a pipeline must see one batch, which an iterable per rank "
        "cannot promise): this cell trained on one make_batch batch reused every step, so its "
        "data wait is about 0"
    ),
    "data.cifar_in_memory": (
        "CIFAR-100 is read into memory when the cell starts: the data phase measures the loader, "
        "the copy and the on-device resize, not the storage"
    ),
    "data.labels_mod": (
        "labels taken mod {classes} (the model has {classes} classes, CIFAR-100 "
        "{dataset_classes}): throughput is unaffected, accuracy would be meaningless"
    ),
    "data.page_cache": (
        "the dataset ({dataset_bytes:mb}) is smaller than this host's memory "
        "({memory_bytes:gb1}): after the first epoch samples may come from the page cache, not "
        "the storage (each rank read {epochs:cv} epochs of its share in this cell)"
    ),
    "data.no_fadvise": "this platform has no posix_fadvise: the page cache was not dropped",
    "data.cache_not_dropped": lambda f: "page cache not dropped for " + "; ".join(f["failed"]),
    "host_bound.launch_time": lambda f: (
        f"host-bound: the GPU is busy {render('{busy_share:share}', f)} of the step "
        f"({_traced(f)}): its compute is {LAUNCH_TIME}, the GPU waits for Python/launches"
    ),
    "host_bound.gpu_busy": lambda f: (
        f"not host-bound: the GPU is busy {render('{busy_share:share}', f)} of the step "
        f"({_traced(f)})"
    ),
    "host_bound.shared_gpu": (
        "{ranks_per_gpu} ranks share each GPU: a rank's trace holds its own kernels, not the "
        "GPU's, so its busy share is not measured"
    ),
    "host_bound.no_device_rows": (
        "the busy trace recorded no GPU work (another profiler may hold CUPTI, as Nsight "
        "Systems does): not measured"
    ),
    "host_bound.probe_launch_time": (
        (
            "host-bound: the GPU is busy {busy_share:share} of the step (sleep probe): its "
            "compute is "
        )
        + LAUNCH_TIME
        + ", the GPU waits for Python/launches"
    ),
    "host_bound.pipeline": (
        "pipeline cells: each stage waits for its neighbours' activations and gradients inside "
        "the schedule, so a stage's idle GPU time is the bubble, not the host"
    ),
    "host_bound.trace_failed": (CAPTURE_FAILED + " ({error})"),
    "host_bound.peer_failed": (CAPTURE_FAILED + " on another rank, so no rank traced"),
    "host_bound.none_traced": "no rank traced a step",
    "host_bound.no_probe": "no busy trace was recorded",
    "host_bound.no_mfu": (_WHY + "; no MFU to judge by arithmetic"),
    "host_bound.arithmetic": lambda f: f"{render(_WHY, f)}; MFU {_mfu(f)}",
    "host_bound.not_judged": lambda f: (
        f"{render(_WHY, f)}; MFU {_mfu(f)}, at least {pct_set(f['floor'])}: not judged"
    ),
    "peak.mig_slice": (
        "'{device}' is a MIG slice: its share of the GPU's peak FLOP/s is not in the table, so "
        "no MFU"
    ),
    "peak.not_in_table": "no peak FLOP/s table entry for '{device}'",
    "peak.no_dtype": "no {dtype} peak known for {device} (read as {model})",
    "peak.tf32_unknown": (
        "cannot tell whether fp32 kernels may use TF32 ({unreadable:list} unreadable), so which "
        "peak applies is unknown"
    ),
    "peak.not_measured": ("no measured peak for host {host}: " + RUN_PERF),
    "peak.dtype_not_measured": "no measured {dtype} peak for host {host} in {path}",
    "peak.not_looked_for": "not looked for",
    "peak.cpu": "MFU is defined against GPU peak FLOP/s; none on CPU",
    "peak.own_job_dtype": (
        "most of your job's FLOPs ran in {dtype}, which has no peak in the table: no MFU"
    ),
    "peak.mfu_above_peak": mfu_above_peak,
    "intervals.two_scopes": _two_scopes,
    "peak.spec": _spec,
    "peak.measured": _measured,
}
