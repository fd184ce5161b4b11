"""Why a cell did not produce a result: timeout, out of memory, a rank that raised, or a rank
(or torchrun) killed by a signal.

torchrun names the first failing rank in its "Root Cause" block, with its exit code (negative:
the signal that killed it), and the worker's @record writes that rank's exception to the error
file; both are read here, neither is required. A hang is explained by the stacks the ranks
dumped before the kill (torchscale/launch/diagnose.py).
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
from dataclasses import dataclass
from pathlib import Path

from torchscale.cell import Status
from torchscale.launch.diagnose import HangDiagnosis, diagnose_hang, locate
from torchscale.launch.process import ProcessOutcome
from torchscale.launch.torchrun import LaunchCommand
from torchscale.rank_diagnostics import stack_file
from torchscale.schema.cell_result import CellError
from torchscale.signals import signal_name

OOM_MARKERS = (
    "OutOfMemoryError",
    "CUDA out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "DefaultCPUAllocator: can't allocate memory",
    "MemoryError",
)
_ROOT_CAUSE = re.compile(r"^Root Cause[^\n]*\n(?P<block>.*?)(?:^={10,}|\Z)", re.S | re.M)
_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)", re.M)
_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)", re.M)
# the agent's own line, when the summary block is missing (single node: local rank == rank)
_FAILED_LINE = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)")

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


@dataclass(frozen=True)
class CellFailure:
    status: Status  # FAILED, OOM or TIMEOUT
    reason: str
    root_cause_rank: int | None
    exception: str | None
    log_tail: str
    exit_signal: str | None = None  # "SIGKILL", when a rank (or torchrun) was killed by one
    diagnosis: tuple[str, ...] = ()  # one line per rank (hangs, fatal-signal dumps)
    artifacts: tuple[str, ...] = ()  # stack dumps, flight-recorder dumps

    def as_error(self) -> CellError:
        return CellError(
            reason=self.reason,
            root_cause_rank=self.root_cause_rank,
            exception=self.exception,
            exit_signal=self.exit_signal,
            diagnosis=list(self.diagnosis),
            artifacts=list(self.artifacts),
            log_tail=self.log_tail,
        )


@dataclass(frozen=True)
class RankExit:
    """The first failed rank torchrun reports, and how it ended."""

    rank: int | None
    exitcode: int | None

    @property
    def signum(self) -> int | None:
        """The signal that killed it (torchrun reports those as negative exit codes)."""
        return -self.exitcode if self.exitcode is not None and self.exitcode < 0 else None


def read_error_file(path: Path) -> str | None:
    """The exception line ("RuntimeError: ...") from a torchelastic error file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, dict):
        message = message.get("message")
    if not message:
        return None
    lines = str(message).strip().splitlines()
    return lines[-1] if lines else None


def root_cause(log: str) -> RankExit:
    """Rank and exit code of torchrun's "Root Cause (first observed failure)", else of the
    agent's "failed (exitcode: N) local_rank: R" line."""
    block = _ROOT_CAUSE.search(log)
    if block:
        rank = _RANK.search(block["block"])
        code = _EXITCODE.search(block["block"])
        return RankExit(
            int(rank[1]) if rank else None,
            int(code[1]) if code else None,
        )
    line = _FAILED_LINE.search(log)
    if line:
        return RankExit(int(line[2]), int(line[1]))
    return RankExit(None, None)


def signal_reason(who: str, signum: int) -> str:
    """'rank 1 was killed by SIGKILL (signal 9), often the kernel's OOM killer: see dmesg'."""
    name = signal_name(signum)
    cause = SIGNAL_CAUSES.get(signum)
    text = f"{who} was killed by {name} (signal {signum})"
    return f"{text}, {cause}" if cause else text


def _node_errors(error_file: Path) -> list[str]:
    """The exceptions recorded by this launch's torchrun(s): `error_file`, then those of the
    other nodes of a Slurm step (node k writes error-node<k>.json, torchscale/slurm/node.py)."""
    paths = [error_file]
    with contextlib.suppress(OSError):
        paths += sorted(error_file.parent.glob(f"{error_file.stem}-node*{error_file.suffix}"))
    return [e for e in (read_error_file(p) for p in paths) if e]


# failures that follow another rank's: the peer's socket closed under a collective, the
# SIGTERM torchrun (or srun) sent the survivors, or (multi-node) a node's torchrun losing the
# rendezvous store once the node hosting it had stopped (seen under Slurm: the failing node's
# agent then records RendezvousConnectionError over its worker's own error)
SECONDARY_MARKERS = (
    "SignalException",
    "Connection closed by peer",
    "remote worker crashing",
    "Connection reset by peer",
    "RendezvousConnectionError",
    "The connection to the C10d store has failed",
)


def is_secondary(error: str) -> bool:
    return any(marker in error for marker in SECONDARY_MARKERS)


def _first_cause(errors: list[str]) -> str | None:
    """The exception that started it: when one node's rank fails, srun stops the others'
    torchrun with SIGTERM, whose error file then says SignalException, not why; a node's
    torchrun may also lose the rendezvous store as the others stop (see SECONDARY_MARKERS)."""
    for error in errors:
        if not is_secondary(error):
            return error
    return errors[0] if errors else None


def _rank_errors(log_dir: Path) -> list[tuple[int | None, str]]:
    """Every rank's own error file (torchrun's `ranks/<run>/attempt_<n>/<local rank>/`), as
    (rank, exception line); the rank is None for other nodes' ranks (`ranks/node<k>/...`),
    whose global rank this side does not know."""
    found: list[tuple[int | None, str]] = []
    with contextlib.suppress(OSError):
        for path in sorted((log_dir / "ranks").glob("**/attempt_*/*/error.json")):
            error = read_error_file(path)
            if not error:
                continue
            local = int(path.parent.name) if path.parent.name.isdigit() else None
            other_node = any(
                part.startswith("node") and part != "node0"
                for part in path.relative_to(log_dir).parts
            )
            found.append((None if other_node else local, error))
    return found


def primary_failure(
    exception: str | None, rank: int | None, log_dir: Path
) -> tuple[str | None, int | None]:
    """torchrun names the rank whose error it recorded first; when that error only follows
    another rank's (a collective whose peer died: "Connection closed by peer"), the rank that
    failed on its own is the root cause, if one left its error file."""
    if exception is None or not is_secondary(exception):
        return exception, rank
    for other_rank, error in _rank_errors(log_dir):
        if not is_secondary(error):
            return error, other_rank
    return exception, rank


def classify_failure(
    outcome: ProcessOutcome, command: LaunchCommand, timeout_s: float
) -> CellFailure:
    """Turn a cell run that left no result into its status and a one-line reason."""
    log = ""
    with contextlib.suppress(OSError):
        log = outcome.log_path.read_text(encoding="utf-8", errors="replace")
    tail = "\n".join(log.splitlines()[-30:])
    if outcome.timed_out:
        return _timeout(diagnose_hang(command.diagnostics_dir, outcome.stacks), timeout_s, tail)
    exception = _first_cause(_node_errors(command.error_file))
    first = root_cause(log)
    exception, rank = primary_failure(exception, first.rank, command.log_dir)
    evidence = exception if exception else log  # the exception itself, when known
    if any(marker in evidence for marker in OOM_MARKERS):
        reason = f"out of memory: {exception or 'see log'}"
        return CellFailure(Status.OOM, reason, rank, exception, tail)
    if exception:
        where = f"rank {rank}" if rank is not None else "a rank"
        return CellFailure(Status.FAILED, f"{where} raised {exception}", rank, exception, tail)
    if first.signum is not None:
        return _killed(first.signum, rank, command.diagnostics_dir, tail)
    if outcome.returncode is not None and outcome.returncode < 0:  # torchrun itself
        signum = -outcome.returncode
        reason = signal_reason("torchrun", signum)
        return CellFailure(Status.FAILED, reason, rank, None, tail, signal_name(signum))
    reason = f"torchrun exited with {outcome.returncode}"
    return CellFailure(Status.FAILED, reason, rank, None, tail)


def _timeout(diagnosis: HangDiagnosis, timeout_s: float, tail: str) -> CellFailure:
    reason = f"killed after the {timeout_s:g} s cell timeout"
    if diagnosis.dumped:
        reason += f": {diagnosis.summary()}"
    else:
        reason += " (hang or far slower than expected; no rank dumped its stack)"
    return CellFailure(
        Status.TIMEOUT,
        reason,
        diagnosis.root_cause_rank,
        None,
        tail,
        diagnosis=tuple(diagnosis.lines()),
        artifacts=tuple(str(p) for p in diagnosis.artifacts),
    )


def _killed(signum: int, rank: int | None, diagnostics: Path, tail: str) -> CellFailure:
    """A rank died of a signal; a catchable one (SIGSEGV, SIGABRT, SIGBUS) left a faulthandler
    dump of where it was."""
    who = f"rank {rank}" if rank is not None else "a rank"
    reason = signal_reason(who, signum)
    diagnosis: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    if rank is not None:
        dump = stack_file(diagnostics, rank)
        text = ""
        with contextlib.suppress(OSError):
            text = dump.read_text(encoding="utf-8", errors="replace")
        place = locate(rank, text) if text.strip() else None
        if place is not None and place.kind != "unknown":
            diagnosis, artifacts = (place.line(),), (str(dump),)
    return CellFailure(
        Status.FAILED,
        reason,
        rank,
        None,
        tail,
        signal_name(signum),
        diagnosis,
        artifacts,
    )
