"""Words for why a cell measured nothing (a cell result's `error.why`, orchestration/launch/
failure.py, the Slurm driver and its follower), said with the evidence the error holds beside
its code (`CellError.finding`: the rank, its exception, the signal, where each rank was)."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Mapping
from typing import Any

from torchscale.contracts.signals import signal_name
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import limit_s

F = Mapping[str, Any]
RESUME = "run again with torchscale benchmark --resume"

# what usually sends each signal, in the words an operator acts on
SIGNAL_CAUSES: dict[int, str] = {
    signal.SIGKILL: "often the kernel's OOM killer: see dmesg",
    signal.SIGSEGV: "a segmentation fault in native code (a C++/CUDA extension, a driver)",
    signal.SIGABRT: "aborted in native code (a failed C++ check or std::terminate, e.g. an "
    "NCCL or c10d watchdog)",
    signal.SIGBUS: "a bus error, classically a /dev/shm too small for shared memory (Docker: "
    "--shm-size or --ipc=host)",
    signal.SIGTERM: "someone or something stopped it (a job scheduler, a user, a container "
    "runtime)",
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGHUP: "its terminal or session went away",
    signal.SIGFPE: "an arithmetic fault in native code",
    signal.SIGILL: "an illegal instruction: a binary built for another CPU",
}


def _rank(f: F) -> str:
    return f"rank {f['rank']}" if f.get("rank") is not None else "a rank"


def _torchrun_note(f: F, error: str) -> str:
    """'torchrun itself failed reading rank 0's error file, which did not parse (...)'."""
    if not f.get("unparsed"):
        return f"torchrun itself failed ({error})"
    whose = f"rank {f['unparsed_rank']}'s" if f.get("unparsed_rank") is not None else "a rank's"
    return f"torchrun itself failed reading {whose} error file, which did not parse ({error})"


def _noted(f: F, text: str) -> str:
    error = f.get("torchrun_error")
    return f"{text}; {_torchrun_note(f, error)}" if error else text


def _killed(who: str, signum: int) -> str:
    """'rank 1 was killed by SIGKILL (signal 9), often the kernel's OOM killer: see dmesg'."""
    text = f"{who} was killed by {signal_name(signum)} (signal {signum})"
    cause = SIGNAL_CAUSES.get(signum)
    return f"{text}, {cause}" if cause else text


def _frame(frame: F) -> str:
    """'all_reduce (x.py:12)': the function and the file's name, not its directory."""
    name = re.split(r"[/\\]", frame["file"])[-1]
    return f"{frame['function']} ({name}:{frame['line']})"


def place_short(place: F) -> str:
    """Where a rank was, short: 'waiting in all_reduce', 'in forward (fault_models.py:39)'."""
    kind, frame = place["kind"], place.get("frame")
    if kind == "collective" and frame:
        return f"waiting in {frame['function']}"
    if kind == "backward":
        return "in backward (autograd: DDP gradient all-reduce, in C++)"
    if kind == "code" and frame:
        return f"in {_frame(frame)}"
    if kind == "library" and frame:
        return f"in {_frame(frame)}, no model or harness code on its stack"
    if kind in ("code", "library"):
        return "dumped its stack, but no Python frame was running in it"
    return "no stack dump (no pid file, or did not answer SIGUSR1)"


def place_line(place: F) -> str:
    """Long: 'rank 0 waiting in all_reduce (x.py:12), called from step (train.py:40)'."""
    frame, caller = place.get("frame"), place.get("caller")
    where = f"waiting in {_frame(frame)}" if place["kind"] == "collective" and frame else None
    text = f"rank {place['rank']} {where or place_short(place)}"
    return f"{text}, called from {_frame(caller)}" if caller else text


def rank_list(ranks: Iterable[int]) -> str:
    """'rank 3', 'ranks 0, 2-7'."""
    ordered = sorted(set(ranks))
    parts: list[str] = []
    start = prev = ordered[0]
    for rank in [*ordered[1:], None]:
        if rank is not None and rank == prev + 1:
            prev = rank
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if rank is not None:
            start = prev = rank
    return f"{'rank' if len(ordered) == 1 else 'ranks'} {', '.join(parts)}"


def hang_summary(places: Iterable[F]) -> str:
    """'rank 1 in forward (fault_models.py:39); ranks 0, 2-7 waiting in all_reduce': ranks
    where alike grouped, in the order stored (the root cause first)."""
    groups: dict[str, list[int]] = {}
    for place in places:
        groups.setdefault(place_short(place), []).append(place["rank"])
    return "; ".join(f"{rank_list(ranks)} {text}" for text, ranks in groups.items())


def _timeout(f: F) -> str:
    text = f"killed after the {limit_s(f['limit_s'])} cell timeout"
    places = f.get("places") or []
    if any(p["kind"] != "unknown" for p in places):
        return f"{text}: {hang_summary(places)}"
    return f"{text} (hang or far slower than expected; no rank dumped its stack)"


def _slurm_ended(f: F, when: str) -> str:
    state = f["state"] + (f", {f['state_reason']}" if f.get("state_reason") else "")
    text = f"Slurm job {f['job_id']} ended ({state}) {when}"
    if f.get("stopped"):  # the driver's own word on why (e.g. the time-limit warning)
        from torchscale.contracts.finding import Finding
        from torchscale.contracts.wording import say

        text += f": {say(Finding.model_validate(f['stopped']))}"
    return text + (f" (exit code {f['exit_code']})" if f.get("exit_code") else "")


PHRASES: Phrases = {
    "failure.oom": lambda f: _noted(f, f"out of memory: {f.get('exception') or 'see log'}"),
    "failure.raised": lambda f: _noted(f, f"{_rank(f)} raised {f['exception']}"),
    "failure.torchrun": lambda f: (
        f"{_torchrun_note(f, f['exception'])}; no rank left an error of its own"
    ),
    "failure.killed": lambda f: _killed(_rank(f), f["signum"]),
    "failure.torchrun_killed": lambda f: _killed("torchrun", f["signum"]),
    "failure.torchrun_exit": "torchrun exited with {returncode}",
    "failure.timeout": _timeout,
    "slurm.ended_during": lambda f: _slurm_ended(f, "while this cell ran"),
    "slurm.ended_before": lambda f: "not run: " + _slurm_ended(f, "before this cell started"),
    "slurm.time_limit_warning": lambda f: (
        "stopped before the Slurm job's time limit (SIGUSR1, the warning sent "
        f"{'?' if f.get('grace_s') is None else limit_s(f['grace_s'])} ahead): {RESUME}"
    ),
    "slurm.stopped": (
        (
            "stopped by Slurm ({signal}): the job was cancelled, preempted or reached its time "
            "limit; "
        )
        + RESUME
    ),
}
