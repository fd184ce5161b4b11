"""Words for what was odd or missing in a rank's trace (`ProfileAnalysis.notes`, schema 10:
codes with their figures): the trace readers' (offline/traces/) and the reducers' and matching's
(offline/analysis/trace/) notes. A note of one rank's trace carries `on_rank` and is said after
'rank <r>: ' (`ranked`, contracts/wording/profile_notes.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording import spelled
from torchscale.contracts.wording.profile_notes import ranked

F = Mapping[str, Any]


def _partial(f: F) -> str:
    return (
        f"step {f['step']} lasted {spelled.us_whole(f['step_us'])}, under "
        f"{spelled.plain_times(f['fraction'])} the median {spelled.us_whole(f['median_us'])}: "
        "partial (cut by the capture), left out of the figures"
    )


def _skipped_calls(f: F) -> str:
    ops = ", ".join(f"{op} ({calls} calls, {runs} executions)" for op, calls, runs in f["ops"])
    return f"collective metadata not taken from the enqueuing calls, counts differ: {ops}"


def _different(f: F) -> str:
    spans = ", ".join(f"rank {rank}: {low}-{high}" for rank, low, high in f["spans"])
    how = "common seq numbers" if f["by_seq"] else "common prefix"
    return (
        f"group {f['group']}: the captures cover different collectives (seq {spans}); matched "
        f"the {f['matched']} {how}"
    )


NOTES: dict[str, Callable[[F], str]] = {
    "trace.dropped_events": lambda f: (
        f"dropped {f['count']} event(s) with a missing, negative, NaN or absurd (> 1 day) "
        "duration or timestamp"
    ),
    "trace.no_step_ranges": lambda f: "no ProfilerStep#N ranges in this trace",
    "trace.no_collectives": lambda f: (
        "no collectives in this trace (single process, or communication not traced)"
    ),
    "trace.rank_disagrees": lambda f: (
        f"distributedInfo says rank {f['rank']}, the caller expected {f['expected']}"
    ),
    "trace.rank_given": lambda f: f"no {f['field']}: rank {f['rank']} as given by the caller",
    "trace.rank_from_file_name": lambda f: (
        f"no {f['field']}: rank {f['rank']} taken from the file name"
    ),
    "trace.nsys_export": lambda f: (
        f"nsys export schema {f['schema']} (nsys {f['version']}), {f['process']}"
    ),
    "trace.nsys_several_ranks": lambda f: (
        f"{f['process']} marked several ranks ({f['rank']}, {', '.join(f['others'])}); "
        f"using the first, {f['rank']}"
    ),
    "trace.nsys_rank_mark": lambda f: (
        f"rank {f['rank']} from the NVTX mark '{f['mark']}' of {f['process']}"
    ),
    "trace.nsys_process_order": lambda f: (
        f"{f['process']} has no 'torchscale:rank=<r>' NVTX mark: rank {f['rank']} assigned by "
        "process order (pid order), which matches torchrun's local ranks on one node but "
        "is a guess"
    ),
    "trace.nsys_unclosed": lambda f: (
        f"{f['count']} NVTX range(s) never closed (or ending before they start)"
    ),
    "trace.nsys_bad_events": lambda f: (
        f"{f['count']} CUDA event(s) with a missing or negative duration left out"
    ),
    "trace.nsys_no_kernels": lambda f: (
        "no CUDA kernels for this process: collectives are not visible as such in "
        "this capture (CPU/gloo run, or traced without --trace=cuda)"
    ),
    "trace.nsys_osrt_kept": lambda f: (
        f"{f['count']} OS runtime wait(s) of the training thread (tid {f['tid']}) "
        "kept as kind 'runtime' rows named 'osrt:<call>'"
    ),
    "trace.nsys_osrt_left_out": lambda f: "no step ranges: OS runtime waits left out",
    "trace.nsys_no_steps": lambda f: "no ProfilerStep#<n> NVTX ranges for this process",
    "trace.no_events": lambda f: "no events: no steps",
    "trace.pseudo_step": lambda f: (
        "no ProfilerStep ranges: the whole trace is one pseudo-step (step 0)"
    ),
    "trace.steps_unnumbered": lambda f: "step ranges without a number: numbered by order",
    "trace.duplicate_steps": lambda f: f"{f['count']} duplicate step range(s): kept the longest",
    "trace.partial_step": _partial,
    "trace.cpu_no_launch_queue": lambda f: (
        "CPU rank: no launch queue, host wait not applicable (all idle is other)"
    ),
    "trace.metadata_not_from_calls": _skipped_calls,
    "trace.no_collectives_anywhere": lambda f: "no collectives on any rank: nothing to match",
    "trace.p2p_unmatched": lambda f: (
        f"{f['count']} point-to-point op(s) (send/recv) not matched: the peer of each "
        "is not recorded"
    ),
    "trace.group_one_rank": lambda f: (
        f"group {f['group']}: only rank {f['rank']} is in the input: not matchable, no wait "
        "or stall figures for it"
    ),
    "trace.seq_partial": lambda f: (
        f"group {f['group']}: seq recorded on some ranks only: matched by order"
    ),
    "trace.captures_start_apart": lambda f: (
        f"group {f['group']}: captures begin at different steps: matched from step {f['step']} on"
    ),
    "trace.group_too_few": lambda f: (
        f"group {f['group']}: fewer than two ranks left after trimming: not matched"
    ),
    "trace.different_collectives": _different,
    "trace.no_matched_collectives": lambda f: (
        "no matched collectives (single rank, or none recorded): no sync stall"
    ),
    "trace.no_full_steps": lambda f: "no full steps on the matched ranks: no stall percentage",
    "trace.no_clock_offsets": lambda f: "no matched collectives: no clock offsets",
    "trace.clock_all_ops": lambda f: (
        "no all_reduce/all_gather-style collectives: offsets from all matched ops, whose "
        "ends may not coincide (less precise)"
    ),
    "trace.clock_via": lambda f: (
        f"rank {f['rank']} aligned through rank {f['via']} (no instance with rank {f['ref']})"
    ),
    "trace.clock_unaligned": lambda f: (
        f"rank {f['rank']} shares no collective with the others: clock not aligned"
    ),
    "trace.no_arrivals": lambda f: "no aligned matched collectives: no arrivals",
    "trace.no_arrival_cross_check": lambda f: (
        "no instance has a clear last arriver by both methods: no cross-check"
    ),
}

PHRASES = {code: ranked(phrase) for code, phrase in NOTES.items()}
