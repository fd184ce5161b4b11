"""Device bandwidth for `validate --level perf`: memory copy and triad, host<->device with
pinned memory, and the GPU-to-GPU matrix.

Memory follows STREAM's conventions (docs/validate.md): arrays at least 4x the last-level
cache, so the figure is memory's, not the cache's. Timing is matmul_peak's loop. What cannot be
measured here (no GPU, one GPU) has no figure and says why.

A host copy can also read the GPU's PCIe link while copies are in flight (`read_link`): an idle
GPU drops its link to a power-saving rate, so only a reading under load says what it trained to.
"""

from __future__ import annotations

import contextlib
import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

import torch

from torchscale.contracts.finding import Finding
from torchscale.contracts.pcie_topology import PcieLink, fastest
from torchscale.contracts.schema.perf import BandwidthResult, P2PMatrix, P2PPair
from torchscale.rank.programs.matmul_peak import CudaLoopTimer, Timer, default_timer, loop_length

T = TypeVar("T")

MemoryKind = Literal["copy", "triad"]
Direction = Literal["h2d", "d2h"]
BYTES_MOVED = {"copy": 2, "triad": 3}  # per byte of one array, STREAM's count
TRIAD_SCALAR = 3.0
CACHE_MULTIPLE = 4  # arrays this many times the last-level cache: memory, not cache
CPU_FALLBACK_BYTES = 64 << 20  # when sysfs does not say the cache size
GPU_MIN_BYTES = 1 << 30
HOST_LINK_BYTES = 256 << 20
LATENCY_BYTES = 4
MIN_TIME_S, REPEATS = 0.2, 5  # each memory and host figure: the median of 5 loops of >= 0.2 s
P2P_MIN_TIME_S, P2P_REPEATS = 0.1, 3  # a pair's bandwidth (its latency: loops of a quarter)
# The link is read every LINK_READ_INTERVAL_S while LINK_BUSY_S of copies are in flight: the
# GPU has just copied for a second or more (the timed loops), and the reads keep the fastest.
# At most LINK_MAX_CALLS queued copies: CUDA's launch queue holds about a thousand, and a
# fuller one would block the host in the enqueue, reading only once the copies are done.
LINK_BUSY_S = 0.5
LINK_READ_INTERVAL_S = 0.02
LINK_MAX_CALLS = 512


def parse_cache_size(text: str) -> int | None:
    """Bytes in a sysfs cache size ('32K', '36608K', '2M'); None when unreadable."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if match is None:
        return None
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)]


def last_level_cache_bytes(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int | None:
    sizes = []
    for index in root.glob("index*"):
        try:
            size = parse_cache_size((index / "size").read_text(encoding="utf-8"))
        except OSError:
            continue
        if size:
            sizes.append(size)
    return max(sizes) if sizes else None


def default_array_bytes(device: torch.device) -> int:
    """Big enough for memory, small enough to fit: GPU 4x L2 and >= 1 GiB (three arrays within
    a quarter of free memory); CPU 4x the last-level cache."""
    if device.type == "cuda":
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0
        free, _ = torch.cuda.mem_get_info(device)
        return int(min(max(CACHE_MULTIPLE * l2, GPU_MIN_BYTES), free // 12))
    llc = last_level_cache_bytes()
    return CACHE_MULTIPLE * llc if llc else CPU_FALLBACK_BYTES


def time_per_call(
    fn: Callable[[], object], timer: Timer, min_time_s: float, repeats: int
) -> tuple[float, int]:
    """(median seconds per call over `repeats` loops, calls per loop): the loop grows until
    it lasts `min_time_s`, as matmul_peak's does."""
    fn()  # warm-up: allocation, first-touch pages, kernel selection
    calls = loop_length(fn, timer, min_time_s)
    per_call = [timer(fn, calls) / calls for _ in range(repeats)]
    return statistics.median(per_call), calls


def measure_memory(device: torch.device | str, kind: MemoryKind) -> BandwidthResult:
    """STREAM copy or triad on float32 arrays of `default_array_bytes` each."""
    dev = torch.device(device)
    size = default_array_bytes(dev)
    elements = max(1, size // 4)
    a = torch.ones(elements, dtype=torch.float32, device=dev)
    b = torch.full_like(a, 2.0)
    c = torch.full_like(a, 0.5)
    work: dict[str, Callable[[], object]] = {
        "copy": lambda: b.copy_(a),
        "triad": lambda: torch.add(b, c, alpha=TRIAD_SCALAR, out=a),
    }
    with torch.cuda.device(dev) if dev.type == "cuda" else contextlib.nullcontext():
        seconds, calls = time_per_call(work[kind], default_timer(dev), MIN_TIME_S, REPEATS)
    moved = BYTES_MOVED[kind] * elements * 4
    return BandwidthResult(
        check=f"memory.{kind}",
        device=str(dev),
        gbps=moved / seconds / 1e9 if seconds > 0 else None,
        bytes_per_call=moved,
        seconds_per_call=seconds,
        calls=calls,
        unavailable=None if seconds > 0 else Finding(code="bandwidth.timer_zero"),
    )


def no_gpu_reason(needed: int = 1) -> Finding | None:
    """Why the CUDA paths cannot run here, or None."""
    if torch.version.cuda is None and torch.version.hip is None:
        return Finding(code="bandwidth.cpu_only_torch", figures={"torch": str(torch.__version__)})
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < needed:
        return Finding(code="bandwidth.too_few_gpus", figures={"needed": needed, "count": count})
    return None


def sample_while(
    busy: Callable[[], bool],
    read: Callable[[], T],
    interval_s: float = LINK_READ_INTERVAL_S,
    max_reads: int = int(2 * LINK_BUSY_S / LINK_READ_INTERVAL_S),
    sleep: Callable[[float], None] = time.sleep,
) -> list[T]:
    """`read()` once, then every `interval_s` while `busy()`, at most `max_reads` reads."""
    readings = [read()]
    while len(readings) < max_reads and busy():
        sleep(interval_s)
        readings.append(read())
    return readings


def busy_calls(seconds_per_call: float, busy_s: float = LINK_BUSY_S) -> int:
    """Copies to queue so that they keep the link busy for about `busy_s`."""
    if seconds_per_call <= 0:
        return 1
    return max(1, min(LINK_MAX_CALLS, math.ceil(busy_s / seconds_per_call)))


def read_while_copying(
    copy: Callable[[], object], seconds_per_call: float, read: Callable[[], T]
) -> list[T]:
    """Queue copies for about LINK_BUSY_S on the current CUDA device and `read` while they
    run; returns when they are done."""
    stream = torch.cuda.current_stream()
    for _ in range(busy_calls(seconds_per_call)):
        copy()
    readings = sample_while(lambda: not stream.query(), read)
    stream.synchronize()
    return readings


def measure_host_device(
    gpu: int, direction: Direction, read_link: Callable[[], PcieLink | None] | None = None
) -> BandwidthResult:
    """Pinned host memory to GPU `gpu` (h2d) or back (d2h), non-blocking, CUDA events; with
    `read_link`, the GPU's link read while more of the same copies run (after the timing, so
    the reads never sit inside a timed loop)."""
    reason = no_gpu_reason()
    if reason is not None:
        return BandwidthResult(check=direction, device=f"cuda:{gpu}", gbps=None, unavailable=reason)
    dev, nbytes = torch.device("cuda", gpu), HOST_LINK_BYTES
    host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    on_gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    target, source = (on_gpu, host) if direction == "h2d" else (host, on_gpu)

    def copy() -> object:
        return target.copy_(source, non_blocking=True)

    link = None
    with torch.cuda.device(dev):
        seconds, calls = time_per_call(copy, CudaLoopTimer(), MIN_TIME_S, REPEATS)
        if read_link is not None and seconds > 0:
            link = fastest(read_while_copying(copy, seconds, read_link))
    return BandwidthResult(
        check=direction,
        device=str(dev),
        gbps=nbytes / seconds / 1e9 if seconds > 0 else None,
        bytes_per_call=nbytes,
        seconds_per_call=seconds,
        calls=calls,
        link=link,
    )


def measure_p2p_matrix(gpus: Sequence[int]) -> P2PMatrix:
    """Every ordered pair: one-way bandwidth and latency; a pair without peer access is still
    measured (through host memory) and flagged, which is the point."""
    reason = no_gpu_reason(needed=2)
    if reason is None and len(gpus) < 2:
        reason = Finding(code="bandwidth.too_few_gpus", figures={"needed": 2, "count": len(gpus)})
    if reason is not None:
        return P2PMatrix(gpus=list(gpus), unavailable=reason)
    pairs = [_measure_pair(src, dst) for src in gpus for dst in gpus if src != dst]
    return P2PMatrix(gpus=list(gpus), pairs=pairs)


def _measure_pair(src: int, dst: int) -> P2PPair:
    nbytes, latency_bytes, min_s = HOST_LINK_BYTES, LATENCY_BYTES, P2P_MIN_TIME_S
    big = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{src}")
    target = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{dst}")
    small = torch.empty(latency_bytes, dtype=torch.uint8, device=f"cuda:{src}")
    small_target = torch.empty(latency_bytes, dtype=torch.uint8, device=f"cuda:{dst}")
    timer = CudaLoopTimer()
    with torch.cuda.device(src):
        bw_s, _ = time_per_call(
            lambda: target.copy_(big, non_blocking=True), timer, min_s, P2P_REPEATS
        )
        lat_s, _ = time_per_call(
            lambda: small_target.copy_(small, non_blocking=True), timer, min_s / 4, P2P_REPEATS
        )
    return P2PPair(
        src=src,
        dst=dst,
        peer_access=bool(torch.cuda.can_device_access_peer(src, dst)),
        gbps=nbytes / bw_s / 1e9 if bw_s > 0 else None,
        latency_us=lat_s * 1e6 if lat_s > 0 else None,
    )
