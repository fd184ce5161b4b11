"""What a pasted nccl-tests output leaves unsaid, read from what it does say (pure functions).

Outputs as people paste them (vendor docs, blogs, issues, acceptance reports) often lack the
lines that name the test (`# Collective test starting`) and its ranks (`#  Rank` lines). What is
left still says a lot, and the nccl_tests/ import uses this module to read it:

- the op from the command line printed before a run (`./build/all_gather_perf -b 8 -g 8`, a
  shell prompt, `Running: ...`, a `===begin X_perf===` label) or from the file's name
  (`all_reduce_perf.txt`, `allreduce-8gpu.log`);
- the ranks from that command line: processes (`mpirun -np`, `srun -n`) x `-t` x `-g`;
- the ranks from the bandwidths: busbw = algbw x factor(op, n), and both are printed to two
  decimals, so each row allows a range of n. The n that most rows allow is taken when it is
  one number; a tie is ambiguous and nccl_tests/op_and_ranks.py refuses rather than guess.

Nothing here guesses: every function returns None (or a range) when the text does not decide.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from torchscale.contracts.collective_facts import sweep_facts

MAX_RANKS = 1 << 20  # an upper bound where a row's busbw/algbw allows any larger n
RELATIVE_SLACK = 1e-4  # beyond the printed rounding: nccl-tests' %g figures and float arithmetic
# the op names a file name may carry, compound names before the bare "reduce"
FILE_NAME_OPS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("all_reduce", re.compile(r"all[_-]?reduce")),
    ("all_gather", re.compile(r"all[_-]?gather")),
    ("reduce_scatter", re.compile(r"reduce[_-]?scatter")),
    ("all_to_all", re.compile(r"all[_-]?to[_-]?all|(?<![a-z0-9])a2a(?![a-z0-9])")),
    ("broadcast", re.compile(r"broadcast|bcast")),
    ("send_recv", re.compile(r"send[_-]?recv")),
    ("reduce", re.compile(r"(?<![a-z])reduce(?![a-z])")),
)
# a program token: ./build/all_gather_perf, all_reduce_perf_mpi, ===begin reduce_perf test===
PROGRAM = re.compile(r"(?:^|(?<=[\s/=:>\"'(]))([a-z][a-z0-9_]*?_perf(?:_mpi)?)(?=$|[\s\"'`;|&)=])")
LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun", "srun", "prun", "aprun"})
LABEL_WORDS = 6  # a line this short naming one program is a label, not prose
BUILD_LOG = frozenset({"Compiling", "Linking"})  # `make` prints every program it links


@dataclass(frozen=True)
class Command:
    """A command line (or a label) naming the nccl-tests program of the run after it."""

    text: str
    program: str
    ranks: int | None  # processes x threads x GPUs; None when the processes are not given
    how: str  # how `ranks` was counted, for messages
    label: bool = False  # a line naming the program only (`===begin X_perf test===`)

    @property
    def kind(self) -> str:
        return "label" if self.label else "command line"


@dataclass(frozen=True)
class RankRange:
    """The n that the most rows' busbw/algbw allow: lo..hi (lo == hi: one n)."""

    lo: int
    hi: int
    agree: int  # rows that allow every n in lo..hi
    informative: int  # rows whose algbw is large enough to bound n
    ratio: float  # busbw/algbw of the most precise row, for messages

    @property
    def exact(self) -> bool:
        return self.lo == self.hi


# --- the op from a file name --------------------------------------------------------------------


def file_name_op(name: str) -> str | None:
    """The one torchscale op a file's name spells (all_reduce_perf.log, allgather_8gpu.txt),
    or None when it names none or several."""
    stem = PurePosixPath(name).name.lower()
    found = []
    for op, pattern in FILE_NAME_OPS:
        if pattern.search(stem):
            found.append(op)
            stem = pattern.sub(" ", stem)
    return found[0] if len(found) == 1 else None


# --- the op and the ranks from a command line ---------------------------------------------------


def parse_command(line: str) -> Command | None:
    """The nccl-tests program a line runs or labels, with the ranks it asks for; None for a
    line that is not one (prose mentioning a program, nccl-tests' own 'concluded' line)."""
    if "Collective test" in line:
        return None
    programs = {m.group(1) for m in PROGRAM.finditer(line)}
    if len(programs) != 1:
        return None
    program = programs.pop()
    tokens = line.split()
    at = next(i for i, token in enumerate(tokens) if program in token)
    after = tokens[at + 1 :]
    if tokens[0] in BUILD_LOG or (at > 0 and tokens[at - 1] in (">", ">>")):
        return None
    label = bool(after) and not after[0].startswith("-")
    if label and len(tokens) > LABEL_WORDS:
        return None
    text = " ".join(tokens)
    if label:  # `===begin all_reduce_perf test===` names the program, not its options
        return Command(text=text, program=program, ranks=None, how="a label", label=True)
    ranks, how = _command_ranks(tokens[:at], after)
    return Command(text=text, program=program, ranks=ranks, how=how)


def _command_ranks(launch: Sequence[str], args: Sequence[str]) -> tuple[int | None, str]:
    """processes x threads x GPUs: mpirun/srun's count (one process without a launcher), then
    nccl-tests' -t and -g (1 each when absent)."""
    threads = _option(args, "-t", "--nthreads") or 1
    gpus = _option(args, "-g", "--ngpus") or 1
    launcher = next((t for t in launch if PurePosixPath(t).name in LAUNCHERS), None)
    if launcher is None:
        return threads * gpus, " x ".join(("one process", f"-t {threads}", f"-g {gpus}"))
    processes = _option(launch, "-np", "--np", "-n", "--ntasks", "-c")
    if processes is None:
        return None, f"{PurePosixPath(launcher).name} without a process count"
    return processes * threads * gpus, " x ".join(
        (f"-np {processes}", f"-t {threads}", f"-g {gpus}")
    )


def _option(tokens: Sequence[str], *names: str) -> int | None:
    """The integer value of the last of `names` in `tokens`: '-g 8', '-g8', '--ngpus=8'."""
    value: str | None = None
    for index, token in enumerate(tokens):
        for name in names:
            if token == name and index + 1 < len(tokens):
                value = tokens[index + 1]
            elif token.startswith(name + "="):
                value = token.partition("=")[2]
            elif len(name) == 2 and token.startswith(name) and token[2:].isdigit():
                value = token[2:]
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else None


# --- the ranks from busbw / algbw ---------------------------------------------------------------


def ranks_from_bandwidth(
    op: str, figures: Iterable[tuple[float, float, float, float]]
) -> RankRange | None:
    """The n that most (algbw, algbw_res, busbw, busbw_res) figures allow for `op`, whose
    factor must depend on n (all_reduce, all_gather, reduce_scatter, all_to_all); None when
    no figure's algbw is large enough to bound n."""
    kind = sweep_facts(op).busbw_factor
    if kind == "1":
        raise ValueError(f"{op}'s busbw factor is 1 for any n: its bandwidths cannot tell n")
    bounds = []
    best: tuple[float, float] | None = None  # (algbw, ratio) of the most precise figure
    for algbw, algbw_res, busbw, busbw_res in figures:
        span = _figure_ranks(kind, algbw, algbw_res, busbw, busbw_res)
        if span is None:
            continue
        bounds.append(span)
        if best is None or algbw > best[0]:
            best = (algbw, busbw / algbw)
    if not bounds or best is None:
        return None
    lo, hi, agree = _most_allowed(bounds)
    return RankRange(lo=lo, hi=hi, agree=agree, informative=len(bounds), ratio=best[1])


def _figure_ranks(
    kind: str, algbw: float, algbw_res: float, busbw: float, busbw_res: float
) -> tuple[int, int] | None:
    """The integers n whose factor(n) lies within this figure's busbw/algbw, as printed."""
    if algbw - algbw_res <= 0:
        return None
    low = max(0.0, busbw - busbw_res) / (algbw + algbw_res) * (1 - RELATIVE_SLACK)
    high = (busbw + busbw_res) / (algbw - algbw_res) * (1 + RELATIVE_SLACK)
    ceiling = 2.0 if kind == "2(n-1)/n" else 1.0
    if high >= ceiling and low <= 0:
        return None  # any n fits
    first = max(1, math.ceil(_ranks_at(kind, low) - 1e-9))
    top = _ranks_at(kind, high)
    last = MAX_RANKS if math.isinf(top) else min(MAX_RANKS, math.floor(top + 1e-9))
    return (first, last) if first <= last else (first, first - 1)


def _ranks_at(kind: str, factor: float) -> float:
    """The inverse of the busbw factor: 2(n-1)/n = f -> n = 2 / (2 - f); (n-1)/n = f -> 1/(1-f)."""
    ceiling = 2.0 if kind == "2(n-1)/n" else 1.0
    return math.inf if factor >= ceiling else ceiling / (ceiling - factor)


def _most_allowed(bounds: Sequence[tuple[int, int]]) -> tuple[int, int, int]:
    """lo, hi and count of the integers allowed by the most bounds (an empty bound allows
    none); several separate best stretches are reported as their overall lo..hi."""
    events: dict[int, int] = {}
    for first, last in bounds:
        if first <= last:
            events[first] = events.get(first, 0) + 1
            events[last + 1] = events.get(last + 1, 0) - 1
    best, lo, hi, count = 0, 0, -1, 0
    points = sorted(events)
    for here, following in itertools.pairwise(points):
        count += events[here]
        if count > best:
            best, lo, hi = count, here, following - 1
        elif count == best and best > 0:
            hi = following - 1
    return (lo, hi, best) if best > 0 else (0, -1, 0)
