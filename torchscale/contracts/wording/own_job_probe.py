"""Words for the probe inside a user's own job (torchscale/rank/own_job/): what a rank's file
says besides its measurement, and what the host found reading the files."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

F = Mapping[str, Any]


PHRASES: dict[str, Callable[[F], str]] = {
    "own_job.no_optimizer_step": lambda f: (
        f"rank {f['rank']} never stepped a torch.optim optimizer ({f['batches']} batch(es) "
        f"read, {f['backward_calls']} backward call(s)): no step to measure (steps are found by "
        "torch's optimizer step hooks; a loop that steps no torch.optim optimizer calls "
        "torchscale.mark_step() once a step)"
    ),
    "own_job.ended_early": lambda f: (
        f"rank {f['rank']} ended after {f['steps']} optimizer step(s), before the "
        f"{f['asked']} asked: what it measured is kept"
    ),
    "own_job.probe_failed": lambda f: (
        f"the probe failed in rank {f['rank']} (pid {f['pid']}) and stopped measuring there; "
        f"the job ran on: {f['error']}"
    ),
    "unavailable.own_profiler": lambda f: (
        f"rank {f['rank']} runs its own profiler (torch.profiler or the autograd profiler): "
        "one profiler at a time, so torchscale left it alone and traced nothing there"
    ),
    "own_job.trace_failed": lambda f: (
        "tracing failed"
        + (f" on rank {f['rank']}" if f.get("rank") is not None else "")
        + f": {f['error']}; the job ran on and its measurement is kept"
    ),
    "own_job.rank_file_unreadable": lambda f: (
        f"rank {f['rank']}'s file {f['file']} could not be read: {f['error']}"
    ),
}
