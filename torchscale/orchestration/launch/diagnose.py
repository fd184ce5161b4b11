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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from torchscale.contracts.rank_diagnostics import (
    DIAGNOSTICS_ENV,
    STACK_SIGNAL,
    RankIdentity,
    stack_file,
)
from torchscale.contracts.schema.cell_result import RankPlace, StackFrame

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


WAITING: frozenset[str] = frozenset({"collective", "backward"})


def _stored(frame: Frame | None) -> StackFrame | None:
    return StackFrame(function=frame.function, file=frame.path, line=frame.line) if frame else None


def locate(rank: int, text: str) -> RankPlace:
    """Reduce one rank's dump to where its main thread is: waiting in a collective (the call
    it waits in, the code that called), in backward (DDP's all-reduce waits in C++), in the
    innermost frame of code outside torch and the stdlib, or (library) in torch or the stdlib
    only."""
    thread = main_thread(parse_dump(text))
    if thread is None:
        return RankPlace(rank=rank, kind="unknown")
    frames = thread.frames
    k = next((i for i, f in enumerate(frames) if f.is_code), len(frames))
    code = _stored(frames[k]) if k < len(frames) else None
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
        return RankPlace(rank=rank, kind="collective", frame=_stored(inside), caller=code)
    if any(_AUTOGRAD.search(f.path) for f in library):
        return RankPlace(rank=rank, kind="backward", caller=code)
    if code is None:  # dumped, torch and the stdlib only
        return RankPlace(rank=rank, kind="library", frame=_stored(frames[0]) if frames else None)
    return RankPlace(rank=rank, kind="code", frame=code)


@dataclass(frozen=True)
class HangDiagnosis:
    places: tuple[RankPlace, ...]  # one per rank that wrote a pid file, by rank
    artifacts: tuple[Path, ...] = field(default=())

    @property
    def root_cause_rank(self) -> int | None:
        """The one rank not waiting while every other rank waits for it; else None."""
        stuck = [p for p in self.places if p.kind not in WAITING]
        return stuck[0].rank if len(stuck) == 1 and len(self.places) > 1 else None

    def ordered(self) -> list[RankPlace]:
        """Every rank's place, the root cause first, then by rank."""
        root = self.root_cause_rank
        return sorted(self.places, key=lambda p: (p.rank != root, p.rank))


def diagnose_hang(directory: Path, stacks: Mapping[int, Path]) -> HangDiagnosis:
    """Every rank that registered in `directory`, located from its dump in `stacks` (rank ->
    file); artifacts are the dumps plus any NCCL flight-recorder files found there."""
    ranks = sorted(set(read_pids(directory)) | set(stacks))
    places = []
    for rank in ranks:
        path = stacks.get(rank)
        text = read_text(path) if path is not None else ""
        places.append(locate(rank, text) if text else RankPlace(rank=rank, kind="unknown"))
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
