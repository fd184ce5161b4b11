"""Words for why a profile analysis' figure is null (`ProfileAnalysis.unavailable`: figure -> a
code and its figures), and the notes of a profiled run and its analysis (`ProfileRecord.notes`,
`ProfileAnalysis.notes`: codes with their figures; the trace's own in trace_notes.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases, say, spell
from torchscale.contracts.wording.figures import change_text

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
}


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
