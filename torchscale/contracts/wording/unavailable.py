"""Words for why a figure of a cell is null (`CellResult.unavailable`: metric -> a code and its
figures): the worker's own reasons, `unavailable.*`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases

META_COUNT_FAILED = (
    "the FLOP count runs the step on the meta device (shapes only, no memory), where this "
    "model failed; a count on the device could need more memory than a measured step"
)


def ranks_differ(figures: Mapping[str, Any]) -> str:
    return "; ".join(str(why(reason_of(r))) for r in figures["reasons"])


def reason_of(stored: Any) -> Finding:
    """A reason stored inside a finding's figures, as the finding it is."""
    return Finding.model_validate(stored)


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
}


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


def why(reason: Finding | None) -> str | None:
    """A null figure's reason in words, by its code."""
    if reason is None:
        return None
    from torchscale.contracts import wording

    return wording.say(reason)


def reasons(unavailable: Mapping[str, Finding]) -> dict[str, str]:
    """Every reason of an `unavailable` map in words, by metric."""
    return {metric: str(why(reason)) for metric, reason in unavailable.items()}
