"""Why a cell did not produce a result: timeout, out of memory, a rank that raised, or a rank
(or torchrun) killed by a signal (docs/troubleshooting.md: "torchrun itself failed", "Which rank
failed").

torchrun's "Root Cause" block (a negative exit code: the killing signal) and the ranks' error
files are both read, neither is required; a hang is explained by the ranks' stack dumps
(diagnose.py). Global ranks are never derived from where a log lies (torch's rendezvous orders
nodes by host name and pid, not by Slurm's node id): the ranks' identity records and pid files
lead back to them (RankMap).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.rank_diagnostics import RankIdentity, stack_file
from torchscale.contracts.schema.cell_result import CellError, RankPlace
from torchscale.contracts.signals import signal_name
from torchscale.contracts.wording import say
from torchscale.orchestration.launch.diagnose import (
    HangDiagnosis,
    diagnose_hang,
    locate,
    read_identities,
    read_pids,
    read_text,
)
from torchscale.orchestration.launch.error_files import (
    node_errors,
    read_error_file,
    unreadable_replies,
)
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.launch.torchrun import LaunchCommand

OOM_MARKERS = (
    "OutOfMemoryError",
    "CUDA out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "DefaultCPUAllocator: can't allocate memory",
    "MemoryError",
)
_ROOT_CAUSE = re.compile(r"^Root Cause[^\n]*\n(?P<block>.*?)(?:^={10,}|\Z)", re.S | re.M)
_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)(?:\s*\(local_rank:\s*(\d+)\))?", re.M)
_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)(?:\s*\(pid:\s*(\d+)\))?", re.M)
# the agent's own line, when the summary block is missing: a local rank and a pid only
_FAILED_LINE = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)(?: \(pid: (\d+)\))?")
# ranks/node<k>/: Slurm node k (torchscale/orchestration/schedulers/slurm/node.py)
_NODE_DIR = re.compile(r"^node(\d+)$")


@dataclass(frozen=True)
class CellFailure:
    status: Status  # FAILED, OOM or TIMEOUT
    why: Finding  # failure.* (contracts/wording/cell_errors.py)
    root_cause_rank: int | None
    exception: str | None
    log_tail: str
    exit_signal: str | None = None  # "SIGKILL", when a rank (or torchrun) was killed by one
    places: tuple[RankPlace, ...] = ()  # where each rank was (hangs, fatal-signal dumps)
    artifacts: tuple[str, ...] = ()  # stack dumps, flight-recorder dumps

    def as_error(self) -> CellError:
        return CellError(
            why=self.why,
            root_cause_rank=self.root_cause_rank,
            exception=self.exception,
            exit_signal=self.exit_signal,
            places=list(self.places),
            artifacts=list(self.artifacts),
            log_tail=self.log_tail,
        )

    @property
    def reason(self) -> str:
        """Its words, by today's phrase (a comm run stores them as its error)."""
        return say(self.as_error().finding)


@dataclass(frozen=True)
class RankExit:
    """The first failed rank torchrun reports, and how it ended. `rank` is global, as the
    Root Cause block gives it; the agent's own line gives only `local_rank` and `pid`."""

    rank: int | None
    exitcode: int | None
    local_rank: int | None = None
    pid: int | None = None

    @property
    def signum(self) -> int | None:
        """The signal that killed it (torchrun reports those as negative exit codes)."""
        return -self.exitcode if self.exitcode is not None and self.exitcode < 0 else None


def root_cause(log: str) -> RankExit:
    """Rank and exit code of torchrun's "Root Cause (first observed failure)", else of the
    agent's "failed (exitcode: N) local_rank: R" line."""
    block = _ROOT_CAUSE.search(log)
    if block:
        rank = _RANK.search(block["block"])
        code = _EXITCODE.search(block["block"])
        return RankExit(
            _group_int(rank, 1), _group_int(code, 1), _group_int(rank, 2), _group_int(code, 2)
        )
    line = _FAILED_LINE.search(log)
    if line:
        return RankExit(None, int(line[1]), int(line[2]), _group_int(line, 3))
    return RankExit(None, None)


def _group_int(match: re.Match[str] | None, group: int) -> int | None:
    return int(match[group]) if match and match[group] is not None else None


@dataclass(frozen=True)
class RankMap:
    """What tells a failed process's global rank, from what the ranks left in the
    diagnostics directory (their identities, their pid files) and the launch's node count."""

    identities: Mapping[int, RankIdentity]
    pids: Mapping[int, int]  # rank -> pid, also in layouts from before identities
    one_node: bool  # then a local rank is the global rank

    @classmethod
    def read(cls, command: LaunchCommand) -> RankMap:
        directory = command.diagnostics_dir
        return cls(read_identities(directory), read_pids(directory), one_node(command.argv))

    def of_exit(self, failed: RankExit) -> int | None:
        """torchrun's global rank; else, on one node, the local rank; else the one rank that
        had the failed process's pid (pids repeat across nodes: ambiguous is None)."""
        if failed.rank is not None:
            return failed.rank
        if self.one_node and failed.local_rank is not None:
            return failed.local_rank
        if failed.pid is None:
            return None
        pids = dict(self.pids) | {rank: who.pid for rank, who in self.identities.items()}
        owners = [rank for rank, pid in pids.items() if pid == failed.pid]
        return owners[0] if len(owners) == 1 else None

    def of_error_file(self, path: Path, ranks_dir: Path) -> int | None:
        """The rank whose torchrun error file `path` is (it recorded that file as its
        TORCHELASTIC_ERROR_FILE; compared below `ranks_dir`, whatever the mount's name); without
        a record, a one-node launch's local rank (the directory's name)."""
        tail = path.relative_to(ranks_dir).parts
        for identity in self.identities.values():
            if identity.error_file and Path(identity.error_file).parts[-len(tail) :] == tail:
                return identity.rank
        local = path.parent.name
        other_node = any(_NODE_DIR.match(p) and p != "node0" for p in tail)
        return int(local) if self.one_node and local.isdigit() and not other_node else None


def one_node(argv: Sequence[str]) -> bool:
    """Whether torchrun's argv asks for one node (`--standalone`, `--nnodes=1`)."""
    if "--standalone" in argv:
        return True
    for i, arg in enumerate(argv):
        if arg.startswith("--nnodes="):
            return arg.partition("=")[2] == "1"
        if arg == "--nnodes" and i + 1 < len(argv):
            return argv[i + 1] == "1"
    return False


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
    return next((e for e in errors if not is_secondary(e)), errors[0] if errors else None)


def rank_error_files(ranks_dir: Path) -> list[Path]:
    """Each rank's own error file, where torchrun puts them below its --log-dir:
    `[node<k>/]<run>/attempt_<n>/<local rank>/error.json`."""
    with contextlib.suppress(OSError):
        return sorted(ranks_dir.glob("**/attempt_*/*/error.json"))
    return []


def rank_errors(log_dir: Path, ranks: RankMap) -> list[tuple[int | None, str]]:
    """Every rank's own error file (torchrun's `ranks/[node<k>/]<run>/attempt_<n>/<local>/`),
    as (global rank, exception line), by rank; the rank is None where no record tells it."""
    found: list[tuple[int | None, str]] = []
    ranks_dir = log_dir / "ranks"
    for path in rank_error_files(ranks_dir):
        error = read_error_file(path)
        if error:
            found.append((ranks.of_error_file(path, ranks_dir), error))
    return sorted(found, key=lambda found_error: (found_error[0] is None, found_error[0] or 0))


def primary_failure(
    exception: str | None, rank: int | None, errors: list[tuple[int | None, str]]
) -> tuple[str | None, int | None]:
    """torchrun names the rank whose error it recorded first; when that error only follows
    another rank's (a collective whose peer died: "Connection closed by peer"), the rank that
    failed on its own is the root cause, if one left its error file (`errors`: rank_errors)."""
    if exception is None:
        return exception, rank
    if not is_secondary(exception):
        return exception, _owner(exception, rank, errors)
    for other_rank, error in errors:
        if not is_secondary(error):
            return error, other_rank
    return exception, rank


def _owner(exception: str, rank: int | None, errors: list[tuple[int | None, str]]) -> int | None:
    """The rank whose own error file holds `exception`. torchrun's pick when it is one of them
    (ranks can raise alike) or none is known; otherwise its pick came from another node's
    Root Cause block (every node's torchrun prints one into a multi-node log) and is wrong."""
    owners = [owner for owner, error in errors if owner is not None and error == exception]
    return rank if not owners or rank in owners else owners[0]


def ranks_own_failure(
    named: int | None, errors: list[tuple[int | None, str]]
) -> tuple[str | None, int | None]:
    """The root cause when torchrun failed itself and its node file holds its own exception:
    the error of the rank its Root Cause block named (`named`), when that error is the rank's
    own; else the first rank's own error (by rank); else the first error a rank left."""
    ordered = sorted(errors, key=lambda found: named is None or found[0] != named)
    for rank, error in ordered:
        if not is_secondary(error):
            return error, rank
    return (ordered[0][1], ordered[0][0]) if ordered else (None, named)


def torchrun_failure(error: str, log: str, ranks: RankMap, log_dir: Path) -> dict[str, Any]:
    """What torchrun raised of its own, and whose error file it could not parse, if it says
    (torchrun logs the path as the rank saw it, which need not be where the logs lie here):
    the figures of its note (contracts/wording/cell_errors.py)."""
    ranks_dir = log_dir / "ranks"
    files = rank_error_files(ranks_dir)
    for logged in unreadable_replies(log):
        for path in files:
            tail = path.relative_to(ranks_dir).parts
            if Path(logged).parts[-len(tail) :] == tail:
                rank = ranks.of_error_file(path, ranks_dir)
                return {"torchrun_error": error, "unparsed": True, "unparsed_rank": rank}
    return {"torchrun_error": error}


def classify_failure(
    outcome: ProcessOutcome, command: LaunchCommand, timeout_s: float
) -> CellFailure:
    """Turn a cell run that left no result into its status and a one-line reason."""
    log = read_text(outcome.log_path)
    tail = "\n".join(log.splitlines()[-30:])
    if outcome.timed_out:
        return _timeout(diagnose_hang(command.diagnostics_dir, outcome.stacks), timeout_s, tail)
    recorded = node_errors(command.error_file)
    exception = _first_cause([e.exception for e in recorded if not e.by_torchrun])
    torchruns_own = [e.exception for e in recorded if e.by_torchrun]
    ranks = RankMap.read(command)
    first = root_cause(log)
    errors = rank_errors(command.log_dir, ranks)
    if exception is None and torchruns_own:
        exception, rank = ranks_own_failure(ranks.of_exit(first), errors)
    else:
        exception, rank = primary_failure(exception, ranks.of_exit(first), errors)
    # a torchrun stopped or cut off because another node failed (SignalException, a lost
    # store) says nothing new; one that failed on its own account (a reply file it could not
    # parse) is said after the root cause
    torchrun_error = next((e for e in torchruns_own if not is_secondary(e)), None)
    note: dict[str, Any] = {}
    if torchrun_error is not None:
        note = torchrun_failure(torchrun_error, log, ranks, command.log_dir)
    evidence = exception if exception else log  # the exception itself, when known
    if any(marker in evidence for marker in OOM_MARKERS):
        return CellFailure(Status.OOM, _why("oom", **note), rank, exception, tail)
    if exception:
        return CellFailure(Status.FAILED, _why("raised", **note), rank, exception, tail)
    if torchrun_error is not None:
        note.pop("torchrun_error")  # the exception
        return CellFailure(Status.FAILED, _why("torchrun", **note), rank, torchrun_error, tail)
    if first.signum is not None:
        return _killed(first.signum, rank, command.diagnostics_dir, tail)
    if outcome.returncode is not None and outcome.returncode < 0:  # torchrun itself
        signum = -outcome.returncode
        why = _why("torchrun_killed", signum=signum)
        return CellFailure(Status.FAILED, why, rank, None, tail, signal_name(signum))
    why = _why("torchrun_exit", returncode=outcome.returncode)
    return CellFailure(Status.FAILED, why, rank, None, tail)


def _why(code: str, **figures: Any) -> Finding:
    return Finding(code=f"failure.{code}", figures=figures)


def _timeout(diagnosis: HangDiagnosis, timeout_s: float, tail: str) -> CellFailure:
    artifacts = tuple(str(p) for p in diagnosis.artifacts)
    why, places = _why("timeout", limit_s=timeout_s), tuple(diagnosis.ordered())
    rank = diagnosis.root_cause_rank
    return CellFailure(Status.TIMEOUT, why, rank, None, tail, None, places, artifacts)


def _killed(signum: int, rank: int | None, diagnostics: Path, tail: str) -> CellFailure:
    """A rank died of a signal; a catchable one (SIGSEGV, SIGABRT, SIGBUS) left a faulthandler
    dump of where it was."""
    places: tuple[RankPlace, ...] = ()
    artifacts: tuple[str, ...] = ()
    if rank is not None:
        dump = stack_file(diagnostics, rank)
        text = read_text(dump)
        place = locate(rank, text) if text.strip() else None
        if place is not None and place.kind != "unknown":
            places, artifacts = (place,), (str(dump),)
    why = _why("killed", signum=signum)
    return CellFailure(Status.FAILED, why, rank, None, tail, signal_name(signum), places, artifacts)
