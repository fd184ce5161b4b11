"""Words for what was odd or missing in a rank's trace (`ProfileAnalysis.notes`:
codes with their figures): the trace readers' (offline/traces/) and the reducers' and matching's
(offline/analysis/trace/) notes. A note of one rank's trace carries `on_rank` and is said after
'rank <r>: ' (`LEADS`, contracts/wording/__init__.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]


def _several(f: F) -> str:
    others = ", ".join(f["others"])
    return (
        f"{f['process']} marked several ranks ({f['rank']}, {others}); using the first, {f['rank']}"
    )


def _skipped_calls(f: F) -> str:
    ops = ", ".join(f"{op} ({calls} calls, {runs} executions)" for op, calls, runs in f["ops"])
    return f"collective metadata not taken from the enqueuing calls, counts differ: {ops}"


def _kernel_disagrees(f: F) -> str:
    ops = ", ".join(
        f"named {named}, launched as {meta} ({count})" for named, meta, count in f["ops"]
    )
    return (
        f"{f['count']} communication kernel(s) whose name says another op than the call that "
        f"launched them ({ops}): the launch's op is used"
    )


def _different(f: F) -> str:
    spans = ", ".join(f"rank {rank}: {low}-{high}" for rank, low, high in f["spans"])
    how = "common seq numbers" if f["by_seq"] else "common prefix"
    return (
        f"group {f['group']}: the captures cover different collectives (seq {spans}); matched "
        f"the {f['matched']} {how}"
    )


PHRASES: Phrases = {
    "trace.dropped_events": "dropped {count} event(s) with a missing, negative, NaN or absurd "
    "(> 1 day) duration or timestamp",
    "trace.no_step_ranges": "no ProfilerStep#N ranges in this trace",
    "trace.no_collectives": "no collectives in this trace (single process, or communication "
    "not traced)",
    "trace.rank_disagrees": "distributedInfo says rank {rank}, the caller expected {expected}",
    "trace.rank_given": "no {field}: rank {rank} as given by the caller",
    "trace.rank_from_file_name": "no {field}: rank {rank} taken from the file name",
    "trace.nsys_export": "nsys export schema {schema} (nsys {version}), {process}",
    "trace.nsys_rank_mark": "rank {rank} from the NVTX mark '{mark}' of {process}",
    "trace.nsys_process_order": "{process} has no 'torchscale:rank=<r>' NVTX mark: rank {rank} "
    "assigned by process order (pid order), which matches torchrun's local ranks on one node "
    "but is a guess",
    "trace.nsys_unclosed": "{count} NVTX range(s) never closed (or ending before they start)",
    "trace.nsys_bad_events": "{count} CUDA event(s) with a missing or negative duration left out",
    "trace.nsys_no_kernels": "no CUDA kernels for this process: collectives are not visible as "
    "such in this capture (CPU/gloo run, or traced without --trace=cuda)",
    "trace.nsys_osrt_kept": "{count} OS runtime wait(s) of the training thread (tid {tid}) kept "
    "as kind 'runtime' rows named 'osrt:<call>'",
    "trace.nsys_osrt_left_out": "no step ranges: OS runtime waits left out",
    "trace.nsys_no_steps": "no ProfilerStep#<n> NVTX ranges for this process",
    "trace.no_events": "no events: no steps",
    "trace.pseudo_step": "no ProfilerStep ranges: the whole trace is one pseudo-step (step 0)",
    "trace.steps_unnumbered": "step ranges without a number: numbered by order",
    "trace.duplicate_steps": "{count} duplicate step range(s): kept the longest",
    "trace.cpu_no_launch_queue": "CPU rank: no launch queue, host wait not applicable (all idle "
    "is other)",
    "trace.no_collectives_anywhere": "no collectives on any rank: nothing to match",
    "trace.p2p_unmatched": "{count} point-to-point op(s) (send/recv) not matched: the peer of "
    "each is not recorded",
    "trace.group_one_rank": "group {group}: only rank {rank} is in the input: not matchable, no "
    "wait or stall figures for it",
    "trace.seq_partial": "group {group}: seq recorded on some ranks only: matched by order",
    "trace.captures_start_apart": "group {group}: captures begin at different steps: matched "
    "from step {step} on",
    "trace.group_too_few": "group {group}: fewer than two ranks left after trimming: not matched",
    "trace.no_matched_collectives": "no matched collectives (single rank, or none recorded): no "
    "sync stall",
    "trace.no_full_steps": "no full steps on the matched ranks: no stall percentage",
    "trace.no_clock_offsets": "no matched collectives: no clock offsets",
    "trace.clock_all_ops": "no all_reduce/all_gather-style collectives: offsets from all "
    "matched ops, whose ends may not coincide (less precise)",
    "trace.clock_via": "rank {rank} aligned through rank {via} (no instance with rank {ref})",
    "trace.clock_unaligned": "rank {rank} shares no collective with the others: clock not aligned",
    "trace.no_arrivals": "no aligned matched collectives: no arrivals",
    "trace.no_arrival_cross_check": "no instance has a clear last arriver by both methods: no "
    "cross-check",
    "trace.partial_step": (
        "step {step} lasted {step_us:us_whole}, under {fraction:times_set} the median "
        "{median_us:us_whole}: partial (cut by the capture), left out of the figures"
    ),
    "trace.nsys_several_ranks": _several,
    "trace.metadata_not_from_calls": _skipped_calls,
    "trace.different_collectives": _different,
    "trace.kernel_name_disagrees": _kernel_disagrees,
}
