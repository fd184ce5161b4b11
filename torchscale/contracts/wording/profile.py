"""Words for a profile analysis and its profiled run: why a figure is null
(`ProfileAnalysis.unavailable`: `profile.*`), the notes of the run, its analysis and each rank's
trace (`ProfileRecord.notes`, `ProfileAnalysis.notes`: `profile.*`, `trace.*`; one rank's said
after 'rank <r>: ') and the collectives the ranks' traces disagree on (`mismatches`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases, say, spell
from torchscale.contracts.wording.figures import change_text

# Words for why a profile analysis' figure is null (`ProfileAnalysis.unavailable`: figure -> a
# code and its figures), and the notes of a profiled run and its analysis (`ProfileRecord.notes`,
# `ProfileAnalysis.notes`: codes with their figures; the trace's own below).

F = Mapping[str, Any]


def _said(found: Any) -> str:
    return say(Finding.model_validate(found))


def _overhead(f: F) -> str:
    """'capture overhead (torch): traced steps 34.8 ms mean against 19.7 ms in the measured
    windows (+76 % ±20 %, Welch's t; ...)'; 'not measurable' where the interval includes 0."""
    low, high = f["low"], f["high"]
    if low is None or high is None:
        figure = f"{change_text(f['share'], None, None)}, no interval"
    elif not low <= 0.0 <= high:
        figure = f"{change_text(f['share'], low, high)}, Welch's t"
    else:
        ends = ", ".join(change_text(end, None, None) for end in (low, high))
        figure = f"not measurable: its interval [{ends}] reaches 0"
    return (
        f"capture overhead ({f['tool']}): traced steps {spell.ms_sig(f['traced_s'])} mean "
        f"against {spell.ms_sig(f['untraced_s'])} in the measured windows ({figure}; "
        f"{f['steps']} traced step(s) over {f['ranks']} rank(s), same step timer: {f['timing']})"
    )


def coded(code: str) -> Finding:
    """The finding of a figure-less reason: `coded('profile.no_step_model')`."""
    assert code in PHRASES, code
    return Finding(code=code)


def note(code: str, **figures: Any) -> Finding:
    """A note of a profiled run or its analysis: `note('trace.duplicate_steps', count=2)`;
    the figure `on_rank`: the rank whose trace or capture it is about."""
    return Finding(code=code, figures=figures)


def said(stored: Finding) -> str:
    """A note in words, by its code."""
    return say(stored)


def on_rank(found: Finding, rank: int) -> Finding:
    """A rank's note, said as that rank's ('rank <r>: ...')."""
    return found.model_copy(update={"figures": {**found.figures, "on_rank": rank}})


def distinct(notes: Iterable[Finding]) -> list[Finding]:
    """The notes in order, each once (a finding is no dict key)."""
    kept: list[Finding] = []
    for found in notes:
        if found not in kept:
            kept.append(found)
    return kept


# Words for what was odd or missing in a rank's trace (`ProfileAnalysis.notes`:
# codes with their figures): the trace readers' (offline/traces/) and the reducers' and matching's
# (offline/analysis/trace/) notes. A note of one rank's trace carries `on_rank` and is said after
# 'rank <r>: ' (`LEADS`, contracts/wording/__init__.py).


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


# Words for the collectives the ranks' traces disagree on (profile analysis `mismatches`,
# offline/analysis/trace/collective_matching.py). Figures: group; counts [[rank, collectives]],
# matched, by_seq; count, kinds, examples [{index, ranks [[rank, op, nelems, dtype]]}].

Figures = Mapping[str, Any]


def _unequal(figures: Figures) -> str:
    counts = ", ".join(f"rank {rank}: {n}" for rank, n in figures["counts"])
    how = "common seq numbers" if figures["by_seq"] else "common prefix"
    return (
        f"group {figures['group']}: ranks recorded different numbers of collectives ({counts}); "
        f"matched the {figures['matched']} {how}"
    )


def _example(example: Figures) -> str:
    def rank(rank: int, op: str, nelems: int | None, dtype: str | None) -> str:
        size = "?" if nelems is None else f"{nelems} elems"
        return f"rank {rank}: {op} {size} {dtype or ''}".rstrip()

    return f"#{example['index']} ({'; '.join(rank(*r) for r in example['ranks'])})"


def _disagreeing(figures: Figures) -> str:
    return (
        f"group {figures['group']}: {figures['count']} collective(s) disagree on "
        f"{'/'.join(figures['kinds'])} across ranks, left out of the figures: "
        + ", ".join(_example(e) for e in figures["examples"])
    )


PHRASES: Phrases = {
    "profile.no_step_model": "no step model",
    "profile.no_complete_step": "no complete step on any rank",
    "profile.no_step_on_every_rank": "no step complete on every rank",
    "profile.no_communication": "no communication in the traced steps",
    "profile.no_memory_events": "no allocator figures in these traces: torchscale's profiled "
    "steps do not record memory events (torch.profiler profile_memory) and the trace reader "
    "does not read them; the peaks of the measured windows are in the run's result.json "
    "(memory)",
    # a note of a profiled run or its analysis; one rank's is said after 'rank <r>: '
    "profile.no_measured_step": "no measured step time to compare the traced steps with",
    "profile.no_traced_step_times": "the ranks recorded no traced step times "
    "(rank<k>.phases.json step_s)",
    "profile.steps_left_out": "step model: {count} step(s) not complete on every rank left out",
    "profile.steps_by_position": "step model: the ranks share no step number; steps paired by "
    "position",
    "profile.no_findings": "no step model: no findings",
    "profile.not_written": "{file} not written: {error}",
    "profile.capture_failed": "nsys capture {what} failed: {error}",
    "profile.trigger_cpu": "nsys waits for cudaProfilerStart, which a CPU rank cannot call",
    "profile.trigger_no_nvtx": "nsys waits for the NVTX range {range}, and this rank has no NVTX",
    "profile.nvtx_torch": "NVTX from torch.cuda.nvtx: default NVTX domain (it takes none); "
    "ranges are named torchscale:<phase> and ProfilerStep#<n>",
    "profile.nvtx_missing": "no NVTX on this CPU build of torch and the nvtx package is not "
    "installed (pip install 'nvtx<0.2.12'): no phase or step ranges in the Nsight Systems report",
    "profile.nvtx_too_new": "nvtx {version} on a CPU build: with Nsight Systems 2022.4 only nvtx "
    "< 0.2.12 records anything from a CPU-only process; newer Nsight Systems may work",
    "profile.capture_overhead": _overhead,
    "profile.overhead_unknown": "capture overhead: unknown ({why:finding})",
    "profile.nothing_captured": "{why:finding}: nothing is captured",
    "profile.devices_differ": "ranks report different devices: {devices}",
    "profile.whole_run": lambda f: (
        "nsys captured the whole run, not only the profiled steps: the ranks have no NVTX "
        f"to start a capture range with ({_said(f['why']) if f['why'] else 'no NVTX backend'})"
    ),
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
    "trace.unequal_counts": _unequal,
    "trace.disagreeing_collectives": _disagreeing,
}
