"""Every rank of `torchscale comm`: `python -m torchscale.rank.programs comm --spec F`, run by the
harness of rank/worker/harness.py.

Per op and size (docs/comm.md): a check run, warm-up, a barrier, `iters` operations timed at
the two ends (the headline), then a second window timing each operation (the spread), so the
per-op timestamps never weigh on the headline. Timestamps are CUDA events on the current
stream, which waits for NCCL's stream, or perf_counter on CPU, where gloo calls return when
done. Rank 0 rewrites the result after every row and names the row it is about to run in the
progress file, so a hang or crash loses no finished row and the parent can mark the one that hung.
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import time
from pathlib import Path

import torch

from torchscale.contracts.comm_spec import CommSpec
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommPair, CommResult, CommRow
from torchscale.offline.analysis.nccl_bandwidth import count_for_size, size_bytes
from torchscale.offline.comm.nccl_footer import add_footer
from torchscale.offline.comm.rows import RankTiming, measured_row, pair_result, unmeasured_row
from torchscale.rank.programs.collective_ops import Prepared, Unsupported, exchange, prepare
from torchscale.rank.worker.harness import Group, Join, Program, spec_file
from torchscale.rank.worker.run_environment import capture_environment
from torchscale.rank.worker.timing import settle

# what backends say when they lack an op (gloo before reduce_scatter_tensor, for one)
UNSUPPORTED_MESSAGE = re.compile(r"not support|unsupported|not implement", re.IGNORECASE)


class Stamps:
    """Timestamps at iteration edges: CUDA events (read after one synchronize) or perf_counter."""

    def __init__(self, device: torch.device, iters: int) -> None:
        self._cuda = device.type == "cuda"
        self._device = device
        self._events = (
            [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)] if self._cuda else []
        )
        self._times = [0.0] * (iters + 1)

    def mark(self, index: int) -> None:
        if self._cuda:
            self._events[index].record()
        else:
            self._times[index] = time.perf_counter()

    def intervals(self) -> tuple[float, list[float]]:
        """(window seconds, per-iteration seconds), after the last mark."""
        if self._cuda:
            torch.cuda.synchronize(self._device)
            first = self._events[0]
            edges = [first.elapsed_time(e) / 1e3 for e in self._events]
        else:
            edges = [t - self._times[0] for t in self._times]
        return edges[-1], [b - a for a, b in itertools.pairwise(edges)]


def _itemsize(dtype: str) -> int:
    return torch.empty(0, dtype=getattr(torch, dtype)).element_size()


def _first_call(prepared: Prepared) -> None:
    """Run once; a backend that lacks the op raises Unsupported with its own words."""
    try:
        prepared.run()
    except (RuntimeError, NotImplementedError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, NotImplementedError) or UNSUPPORTED_MESSAGE.search(first):
            raise Unsupported(f"unsupported by backend: {first}") from exc
        raise


def time_op(
    op: str, count: int, spec: CommSpec, device: torch.device, rank: int, ranks: int, host: str
) -> RankTiming:
    """This rank's check and timed window of `op` with `count` elements per rank."""
    dtype = getattr(torch, spec.dtype)
    wrong = None
    if spec.check:
        checked = prepare(op, count, dtype, device, rank=rank, ranks=ranks, check=True)
        settle(device)
        _first_call(checked)
        wrong = checked.verify()
        del checked
    timed = prepare(op, count, dtype, device, rank=rank, ranks=ranks, check=False)
    for i in range(spec.warmup_iters):
        if i == 0 and not spec.check:
            _first_call(timed)
        else:
            timed.run()
    # the figure nccl-tests prints: `iters` ops back to back, timestamps at the ends only
    settle(device)
    ends = Stamps(device, 1)
    ends.mark(0)
    for _ in range(spec.iters):
        timed.run()
    ends.mark(1)
    window = ends.intervals()[0]
    # the spread: a second window with a timestamp between every two ops (on one H100 an event
    # per op cost about 8 us, 20 % of a 40 us launch-bound op, so it is kept out of the first)
    settle(device)
    stamps = Stamps(device, spec.iters)
    stamps.mark(0)
    for i in range(spec.iters):
        timed.run()
        stamps.mark(i + 1)
    iterations = stamps.intervals()[1]
    return RankTiming(rank, host, window, iterations, wrong)


def _row(
    op: str, size: int, spec: CommSpec, group: Group, host: str, state: dict[str, str]
) -> CommRow | None:
    """One row, agreed by every rank (gathered after the window); None on ranks other than 0."""
    device, rank, ranks = group.device, group.rank, group.size
    itemsize = _itemsize(spec.dtype)
    count = count_for_size(op, size, itemsize, ranks)
    actual = size_bytes(op, count, itemsize, ranks)
    mine: RankTiming | str
    if op in state:
        mine = state[op]
    else:
        try:
            mine = time_op(op, count, spec, device, rank, ranks, host)
        except Unsupported as exc:
            mine = state[op] = str(exc)  # the op's later sizes are not tried again
    gathered = group.gather(mine)
    if rank != 0:
        return None
    reasons = [g for g in gathered if isinstance(g, str)]
    if reasons:
        return unmeasured_row(op, actual, count, spec.dtype, "unsupported", reasons[0])
    return measured_row(
        op, actual, count, spec.dtype, gathered, spec.iters, ranks, spec.across_ranks
    )


def _pairs(spec: CommSpec, group: Group, host: str) -> list[CommPair]:
    """Every pair of ranks exchanges `pairs_bytes` both ways while the others wait."""
    assert spec.pairs_bytes is not None
    device, rank, ranks = group.device, group.rank, group.size
    dtype = getattr(torch, spec.dtype)
    itemsize = _itemsize(spec.dtype)
    count = max(1, spec.pairs_bytes // itemsize)
    windows: dict[tuple[int, int], float] = {}
    for a, b in itertools.combinations(range(ranks), 2):
        settle(device)
        if rank not in (a, b):
            continue
        run = exchange(b if rank == a else a, count, dtype, device)
        for _ in range(spec.warmup_iters):
            run()
        stamps = Stamps(device, spec.iters)
        stamps.mark(0)
        for i in range(spec.iters):
            run()
            stamps.mark(i + 1)
        windows[(a, b)] = stamps.intervals()[0]
    settle(device)
    gathered = group.gather((host, windows))
    hosts = {r: g[0] for r, g in enumerate(gathered)}
    pairs = []
    for a, b in itertools.combinations(range(ranks), 2):
        measured = [g[1][(a, b)] for g in gathered if (a, b) in g[1]]
        pairs.append(pair_result(a, b, hosts, count * itemsize, measured, spec.iters))
    return pairs


def _skipped(spec: CommSpec, ranks: int) -> list[Finding]:
    itemsize = _itemsize(spec.dtype)
    notes = []
    for op in spec.ops:
        small = [s for s in spec.sizes if count_for_size(op, s, itemsize, ranks) == 0]
        if small:
            below = size_bytes(op, 1, itemsize, ranks)
            figures = {"op": op, "sizes": len(small), "below_bytes": below, "dtype": spec.dtype}
            notes.append(Finding(code="comm.sizes_left_out", figures=figures))
    return notes


def _write(spec: CommSpec, result: CommResult, group: Group) -> None:
    add_footer(result)
    group.write(spec.result_path, result.model_dump_json(indent=2))


def body(spec: CommSpec, group: Group) -> None:
    """Every op and size in turn, then the pairs; rank 0 rewrites the result after each row."""
    device, rank, ranks = group.device, group.rank, group.size
    host = socket.gethostname()
    itemsize = _itemsize(spec.dtype)
    result = CommResult(
        id=spec.run_id,
        world_size=ranks,
        nodes=int(os.environ.get("GROUP_WORLD_SIZE", "1")),
        device=spec.device,
        backend=spec.backend,
        device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        dtype=spec.dtype,
        warmup_iters=spec.warmup_iters,
        iters=spec.iters,
        check=spec.check,
        across_ranks=spec.across_ranks,
        skipped=_skipped(spec, ranks),
        environment=capture_environment() if rank == 0 else {},
    )
    if ranks == 1:
        result.warnings.append(Finding(code="comm.one_rank"))
    unsupported: dict[str, str] = {}
    for op in spec.ops:
        for size in spec.sizes:
            if count_for_size(op, size, itemsize, ranks) == 0:
                continue
            group.write(spec.progress_path, f"{op} {size}\n")
            row = _row(op, size, spec, group, host, unsupported)
            if row is not None:
                result.rows.append(row)
                _write(spec, result, group)
    if spec.pairs_bytes is not None:
        if ranks < 2:
            result.unavailable["pairs"] = Finding(code="comm.pairs.one_rank")
        else:
            group.write(spec.progress_path, f"pairs {spec.pairs_bytes}\n")
            result.pairs = _pairs(spec, group, host)
    if rank == 0:
        Path(spec.progress_path).unlink(missing_ok=True)
        _write(spec, result, group)


PROGRAM = Program(
    "torchscale comm worker (one rank)",
    spec_file(CommSpec, "torchscale comm worker (one rank)"),
    lambda spec: Join(spec.backend, spec.device),
    body,
)
