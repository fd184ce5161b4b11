"""Words for the probe inside a user's own job (torchscale/rank/own_job/): what a rank's file
says besides its measurement, and what the host found reading the files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]


PHRASES: Phrases = {
    "own_job.no_optimizer_step": (
        "rank {rank} never stepped a torch.optim optimizer ({batches} batch(es) read, "
        "{backward_calls} backward call(s)): no step to measure (steps are found by torch's "
        "optimizer step hooks; a loop that steps no torch.optim optimizer calls "
        "torchscale.mark_step() once a step)"
    ),
    "own_job.ended_early": (
        "rank {rank} ended after {steps} optimizer step(s), before the {asked} asked: what it "
        "measured is kept"
    ),
    "own_job.probe_failed": (
        "the probe failed in rank {rank} (pid {pid}) and stopped measuring there; the job ran "
        "on: {error}"
    ),
    "unavailable.own_profiler": (
        "rank {rank} runs its own profiler (torch.profiler or the autograd profiler): one "
        "profiler at a time, so torchscale left it alone and traced nothing there"
    ),
    "own_job.trace_failed": lambda f: (
        "tracing failed"
        + (f" on rank {f['rank']}" if f.get("rank") is not None else "")
        + f": {f['error']}; the job ran on and its measurement is kept"
    ),
    "own_job.rank_file_unreadable": "rank {rank}'s file {file} could not be read: {error}",
}
