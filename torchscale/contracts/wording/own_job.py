"""Words for a user's own job (`torchscale profile -- COMMAND`): why it measured
nothing (`CellError.why`: `own_job.*`), what its probe's rank files say and what torchscale
cannot know about someone else's job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

# Words for `torchscale profile -- COMMAND` (orchestration/own_job/): the user's own launch
# line run with the probe, each way it can end without a measurement said in one line, and what
# torchscale cannot know about someone else's job.

F = Mapping[str, Any]

_OUTPUT = "its output: {log}"


def _identity(f: F) -> str:
    """`batch`: the samples each rank's loader gave per step (None: unknown); `precision`: the
    one a sweep filled into the command's {precision} (None: unknown); `strategy`: the one the
    parameters showed (None: unknown)."""
    batch, precision, strategy = f.get("batch"), f.get("precision"), f.get("strategy")
    unknown = [
        *(["batch size"] if batch is None else []),
        *(["precision"] if precision is None else []),
        *(["parallel strategy"] if strategy is None else []),
    ]
    shown = [*(["b1"] if batch is None else []), *(["fp32"] if precision is None else [])]
    shown += ["ddp"] if strategy is None else []
    known = []
    if batch is None:
        known.append("a sample is one optimizer step")
    else:
        known.append(f"b{batch} is the samples each rank's loader gave per optimizer step")
    if strategy is not None:
        known.append(f"{strategy}: its parameters are sharded (FSDP2's DTensors)")
    if precision is not None and f.get("precision_counted"):
        known.append(f"{precision} is the precision most of its step's FLOPs ran in")
    elif precision is not None:
        known.append(f"{precision} is the precision the sweep filled into your command")
    judged = "the step is judged as data-parallel (every rank runs the whole step)"
    if not unknown:
        return f"your job's label: {'; '.join(known)}, and {judged}"
    said = f"placeholder{'s' if len(shown) > 1 else ''} ({', '.join(shown)})"
    said += (", " if batch is None else "; ") + "; ".join(known)
    what = unknown[0] if len(unknown) == 1 else f"{', '.join(unknown[:-1])} and {unknown[-1]}"
    return (
        f"your job's {what} {'is' if len(unknown) == 1 else 'are'} not known to torchscale: "
        f"its label shows {said}, and {judged}"
    )


# Words for the probe inside a user's own job (torchscale/rank/own_job/): what a rank's file
# says besides its measurement, and what the host found reading the files.


PHRASES: Phrases = {
    "own_job.command_not_found": (
        "{program}: command not found (give the launch line as you would run it, e.g. torchrun "
        "--nproc-per-node 2 train.py)"
    ),
    "own_job.not_executable": "{program}: not executable",
    "own_job.exited": (
        (
            "your job exited with {returncode} after {wall_s:s_whole} before any rank measured a "
            "step; "
        )
        + _OUTPUT
    ),
    "own_job.no_rank_files": (
        (
            "your job ended after {wall_s:s_whole} and no process wrote a measurement: none "
            "imported torch and stepped an optimizer, or python ran with -E, -I or -S (which "
            "ignore PYTHONPATH, where the probe is); "
        )
        + _OUTPUT
    ),
    "own_job.no_step_seen": (
        (
            "no optimizer step seen on {ranks} rank(s): the probe finds steps by torch's "
            "optimizer hooks (torch.optim.Optimizer.step); a loop that steps no torch.optim "
            "optimizer marks its steps with one line, torchscale.mark_step(); "
        )
        + _OUTPUT
    ),
    "own_job.too_few_steps": (
        (
            "no measured step: the probe discards the first {warmup} warm-up step(s) "
            "(--warmup-steps) and your job stepped fewer; "
        )
        + _OUTPUT
    ),
    "own_job.timed_out": (
        (
            "your job was stopped after the {timeout_s:s_set} --timeout (hung, or slower than "
            "expected: raise --timeout); "
        )
        + _OUTPUT
    ),
    "own_job.stopped": (
        "stopped by {signal}: your job's processes were stopped; what the ranks measured before "
        "is kept"
    ),
    "own_job.identity_unknown": _identity,
    "own_job.samples_given": lambda f: (
        f"samples per step: {f['given']} per rank as given (--samples-per-step), not counted; "
        + (
            f"the loader's batches held {f['counted']}"
            if f.get("counted") is not None
            else "the loader's batches could not be counted"
        )
    ),
    "own_job.no_flops": "your job's step has no FLOP count (the FLOPs' own line says why): no MFU",
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
    "own_job.trace_failed": lambda f: (
        "tracing failed"
        + (f" on rank {f['rank']}" if f.get("rank") is not None else "")
        + f": {f['error']}; the job ran on and its measurement is kept"
    ),
    "own_job.rank_file_unreadable": "rank {rank}'s file {file} could not be read: {error}",
    "unavailable.own_profiler": (
        "rank {rank} runs its own profiler (torch.profiler or the autograd profiler): one "
        "profiler at a time, so torchscale left it alone and traced nothing there"
    ),
}
