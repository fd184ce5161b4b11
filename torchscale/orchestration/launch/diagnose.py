"""Where each rank of a hung cell is stuck: ask for Python stacks, then read them.

Before a timed-out cell is killed, every rank that registered
(torchscale/rank/worker/diagnostics.py) is sent SIGUSR1 and dumps all its threads' stacks with
faulthandler. Each dump is reduced to one line: the rank is waiting in a torch.distributed
collective, is inside backward (where DDP's gradient all-reduce waits, in C++ that no Python stack
shows), or is elsewhere, with the innermost frame of code outside torch. The rank that is elsewhere
while every other waits is the one they wait for.
"""

from __future__ import annotations

import contextlib
import os
import re
import sysconfig
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from torchscale.contracts.rank_diagnostics import (
    DIAGNOSTICS_ENV,
    STACK_SIGNAL,
    RankIdentity,
    stack_file,
)

STACK_WAIT_S = 2.0
_PID_FILE = re.compile(r"^rank(\d+)\.pid$")  # pid_file()
_IDENTITY_FILE = re.compile(r"^rank(\d+)\.identity\.json$")  # identity_file()
_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)\b.*\(most recent call first\):")
_STACK = re.compile(r"^Stack \(most recent call first\):")  # all_threads=False
_FRAME = re.compile(r'^\s+File "(?P<path>.*)", line (?P<line>\d+) in (?P<func>.+?)\s*$')
_TORCH = re.compile(r"[/\\]torch[/\\]")  # torch's own package, wherever it is installed
_TORCH_DISTRIBUTED = re.compile(r"[/\\]torch[/\\]distributed[/\\]")
_ELASTIC = re.compile(r"[/\\]torch[/\\]distributed[/\\]elastic[/\\]")  # @record, not a collective
_AUTOGRAD = re.compile(r"[/\\]torch[/\\](autograd[/\\]|_tensor\.py)")
_WRAPPERS = frozenset({"wrapper"})  # c10d_logger's decorators around every collective
_MAIN_ENTRIES = frozenset({"<module>", "_run_module_as_main"})


# ------------------------------------------------------------------------- asking for stacks


def read_pids(directory: Path) -> dict[int, int]:
    """rank -> pid, from the rank<N>.pid files the ranks wrote."""
    pids: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            match = _PID_FILE.match(path.name)
            if not match:
                continue
            with contextlib.suppress(OSError, ValueError):
                pids[int(match.group(1))] = int(path.read_text(encoding="utf-8").strip())
    return dict(sorted(pids.items()))


def read_identities(directory: Path) -> dict[int, RankIdentity]:
    """rank -> who it was, from the rank<N>.identity.json files the ranks wrote (none in a
    launch from before they were written, or whose ranks never got that far)."""
    found: dict[int, RankIdentity] = {}
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            if not _IDENTITY_FILE.match(path.name):
                continue
            with contextlib.suppress(OSError):
                identity = RankIdentity.from_json(path.read_text(encoding="utf-8"))
                if identity is not None:
                    found[identity.rank] = identity
    return dict(sorted(found.items()))


def belongs_to(pid: int, directory: Path) -> bool:
    """Whether `pid` is still a rank of this launch: its environment names `directory`.

    Guards against a recycled pid: SIGUSR1 kills a process that did not register for it.
    Without /proc (not Linux) nothing can be checked, and nothing is signalled.
    """
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{DIAGNOSTICS_ENV}={directory}".encode() in environ.split(b"\0")


def request_stacks(directory: Path, wait_s: float = STACK_WAIT_S) -> dict[int, Path]:
    """Send SIGUSR1 to every live rank of this launch (never to torchrun, which SIGUSR1 would
    kill) and wait up to `wait_s` for their dumps. Returns rank -> non-empty stack file."""
    asked: dict[int, tuple[Path, int]] = {}
    for rank, pid in read_pids(directory).items():
        if not belongs_to(pid, directory):
            continue
        path = stack_file(directory, rank)
        before = _size(path)
        try:
            os.kill(pid, STACK_SIGNAL)
        except OSError:
            continue
        asked[rank] = (path, before)
    deadline = time.monotonic() + wait_s
    while asked and time.monotonic() < deadline:
        if all(_size(path) > before for path, before in asked.values()):
            time.sleep(0.1)  # each dump is written in one go: let the last write land
            break
        time.sleep(0.05)
    return {rank: path for rank, (path, _) in asked.items() if _size(path) > 0}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# ------------------------------------------------------------------------- reading the stacks


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str

    @property
    def where(self) -> str:
        """'fault_models.py:39': the file's name, not its directory."""
        name = re.split(r"[/\\]", self.path)[-1]
        return f"{name}:{self.line}"

    @property
    def is_code(self) -> bool:
        """Code of the model, the harness or a library other than torch and the stdlib."""
        return not (_TORCH.search(self.path) or self.path.startswith("<") or _is_stdlib(self.path))


@dataclass(frozen=True)
class ThreadStack:
    thread: str  # "0x00007f..."
    current: bool  # the thread that ran the dump
    frames: tuple[Frame, ...]  # innermost first, as faulthandler prints them

    @property
    def is_main(self) -> bool:
        """Run by the interpreter itself (`python script.py`, `python -m module`); a thread
        started by threading begins in _bootstrap instead."""
        return bool(self.frames) and self.frames[-1].function in _MAIN_ENTRIES


def _is_stdlib(path: str) -> bool:
    """Under the standard library's directory, and not an installed package: under pyenv,
    conda, python Docker images and venvs (platstdlib is the venv's lib/pythonX.Y)
    site-packages lies inside that directory, and a model or a non-editable torchscale
    installed there is code. torch is told apart by its own patterns, wherever it lies."""
    if _PACKAGES.search(path) or _under(path, _PACKAGE_PREFIXES):
        return False
    return _under(path, _STDLIB_PREFIXES)


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == prefix or path.startswith(prefix + os.sep) for prefix in prefixes)


def _prefixes(*names: str) -> tuple[str, ...]:
    return tuple(sorted({p.rstrip("/\\") for p in map(sysconfig.get_path, names) if p}))


_PACKAGES = re.compile(r"[/\\](site|dist)-packages([/\\]|$)")
_PACKAGE_PREFIXES = _prefixes("purelib", "platlib")
_STDLIB_PREFIXES = _prefixes("stdlib", "platstdlib")


def parse_dump(text: str) -> list[ThreadStack]:
    """Every thread of the LAST dump in `text` (a stack file can hold several: one per
    SIGUSR1, and a fatal signal's). A thread id seen twice starts a new dump."""
    dumps: list[list[ThreadStack]] = [[]]
    thread: tuple[str, bool] | None = None
    frames: list[Frame] = []

    def close() -> None:
        if thread is None:
            return
        if any(t.thread == thread[0] for t in dumps[-1]):
            dumps.append([])
        dumps[-1].append(ThreadStack(thread[0], thread[1], tuple(frames)))

    for line in text.splitlines():
        header = _THREAD.match(line)
        if header or _STACK.match(line):
            close()
            thread = (header[2], header[1] == "Current thread") if header else ("", True)
            frames = []
            continue
        frame = _FRAME.match(line)
        if frame and thread is not None:
            frames.append(Frame(frame["path"], int(frame["line"]), frame["func"]))
    close()
    return dumps[-1]


def main_thread(threads: list[ThreadStack]) -> ThreadStack | None:
    """The thread that runs the training loop: the interpreter's own, else the one dumped."""
    for predicate in (lambda t: t.is_main, lambda t: t.current, lambda t: bool(t.frames)):
        for thread in threads:
            if predicate(thread):
                return thread
    return None


Kind = Literal["collective", "backward", "code", "unknown"]
WAITING: frozenset[str] = frozenset({"collective", "backward"})


@dataclass(frozen=True)
class RankPlace:
    """Where one rank was when its stack was dumped."""

    rank: int
    kind: Kind
    code: Frame | None = None  # innermost frame outside torch and the stdlib
    inside: Frame | None = None  # the torch.distributed call it waits in (kind collective)
    innermost: Frame | None = None  # the main thread's innermost frame, whatever its code

    @property
    def waiting(self) -> bool:
        return self.kind in WAITING

    def describe(self) -> str:
        """Short: 'waiting in all_reduce', 'in forward (fault_models.py:39)'."""
        if self.kind == "collective" and self.inside is not None:
            return f"waiting in {self.inside.function}"
        if self.kind == "backward":
            return "in backward (autograd: DDP gradient all-reduce, in C++)"
        if self.kind == "code" and self.code is not None:
            return f"in {self.code.function} ({self.code.where})"
        if self.kind == "code" and self.innermost is not None:  # dumped: torch/stdlib only
            where = self.innermost
            return f"in {where.function} ({where.where}), no model or harness code on its stack"
        if self.kind == "code":
            return "dumped its stack, but no Python frame was running in it"
        return "no stack dump (no pid file, or did not answer SIGUSR1)"

    def line(self) -> str:
        """Long, for the result's diagnosis: the frame it waits in and the code that called."""
        text = f"rank {self.rank} {self.describe()}"
        if self.kind == "collective" and self.inside is not None:
            text = f"rank {self.rank} waiting in {self.inside.function} ({self.inside.where})"
        if self.kind in WAITING and self.code is not None:
            text += f", called from {self.code.function} ({self.code.where})"
        return text


def locate(rank: int, text: str) -> RankPlace:
    """Reduce one rank's dump to where its main thread is."""
    thread = main_thread(parse_dump(text))
    if thread is None:
        return RankPlace(rank, "unknown")
    frames = thread.frames
    k = next((i for i, f in enumerate(frames) if f.is_code), len(frames))
    code = frames[k] if k < len(frames) else None
    library = frames[:k]  # what the code is calling into, innermost first
    distributed = [
        f
        for f in library
        if _TORCH_DISTRIBUTED.search(f.path)
        and not _ELASTIC.search(f.path)
        and f.function not in _WRAPPERS
    ]
    if distributed:
        c10d = [f for f in distributed if f.path.endswith("distributed_c10d.py")]
        inside = c10d[-1] if c10d else distributed[0]  # the call made, else the closest wait
        return RankPlace(rank, "collective", code, inside)
    if any(_AUTOGRAD.search(f.path) for f in library):
        return RankPlace(rank, "backward", code)
    return RankPlace(rank, "code", code, innermost=frames[0] if frames else None)


@dataclass(frozen=True)
class HangDiagnosis:
    places: tuple[RankPlace, ...]  # one per rank that wrote a pid file, by rank
    artifacts: tuple[Path, ...] = field(default=())

    @property
    def dumped(self) -> bool:
        return any(p.kind != "unknown" for p in self.places)

    @property
    def root_cause_rank(self) -> int | None:
        """The one rank not waiting while every other rank waits for it; else None."""
        stuck = [p for p in self.places if not p.waiting]
        return stuck[0].rank if len(stuck) == 1 and len(self.places) > 1 else None

    def lines(self) -> list[str]:
        return [place.line() for place in self._ordered()]

    def summary(self) -> str:
        """'rank 1 in forward (fault_models.py:39); rank 0 waiting in all_reduce', ranks with
        the same description grouped ('ranks 0, 2-7 waiting in all_reduce')."""
        groups: dict[str, list[int]] = {}
        for place in self._ordered():
            groups.setdefault(place.describe(), []).append(place.rank)
        return "; ".join(f"{rank_list(ranks)} {text}" for text, ranks in groups.items())

    def _ordered(self) -> list[RankPlace]:
        """The root cause first, then by rank."""
        root = self.root_cause_rank
        return sorted(self.places, key=lambda p: (p.rank != root, p.rank))


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
    label = "rank" if len(ordered) == 1 else "ranks"
    return f"{label} {', '.join(parts)}"


def diagnose_hang(directory: Path, stacks: Mapping[int, Path]) -> HangDiagnosis:
    """Every rank that registered in `directory`, located from its dump in `stacks` (rank ->
    file); artifacts are the dumps plus any NCCL flight-recorder files found there."""
    ranks = sorted(set(read_pids(directory)) | set(stacks))
    places = []
    for rank in ranks:
        path = stacks.get(rank)
        text = read_text(path) if path is not None else ""
        places.append(locate(rank, text) if text else RankPlace(rank, "unknown"))
    artifacts = [stacks[r] for r in sorted(stacks)]
    with contextlib.suppress(OSError):
        artifacts += sorted(directory.glob("nccl_trace_rank_*"))
    return HangDiagnosis(tuple(places), tuple(artifacts))


def read_text(path: Path) -> str:
    """The file's text ("" when it cannot be read)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
