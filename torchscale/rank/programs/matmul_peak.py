"""Maximum achievable matmul FLOP/s (`validate --level perf`): the MAMF idea.

A spec sheet's peak is never reached by a real matmul; what a node can really do is the best
TFLOP/s over a search of matmul shapes (stas00's MAMF finder). `measure_matmul` times given
shapes; `find_peak` searches them until it has `converged` (the time budget is only a
backstop). The search, the timing and the spec-sheet guard are described in docs/validate.md;
a figure above the spec sheet (beyond `SPEC_TOLERANCE`) is physically impossible, so the
result is flagged `suspect` (a timing bug) and has no headline.
"""

from __future__ import annotations

import contextlib
import math
import platform
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import torch

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_peaks import MIG, lookup
from torchscale.contracts.schema.perf import PeakResult, Probe, Shape
from torchscale.contracts.wording.validate_measured import timer_read
from torchscale.rank.worker.timing import CudaEventTimer

Dtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
DTYPES: tuple[Dtype, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8")

# A measured figure may exceed the sheet by NVIDIA's rounding and boost-clock slack, not more
SPEC_TOLERANCE = 1.05
FP8_MIN_CAPABILITY = (8, 9)  # Ada and Hopper: the first fp8 tensor cores
TF32_MIN_CAPABILITY = (8, 0)  # Ampere
MAX_ITERS = 100_000

# Search grids: square shapes first (ascending, cheap first), then a local search around the
# best in steps of `step` (multiples of 256 on a GPU, as tensor-core tiles want)
GPU_SQUARES = (1024, 2048, 4096, 6144, 8192, 12288, 16384)
GPU_STEP = 512
GPU_MIN_STEP = 256
CPU_SQUARES = (64, 128, 256, 512, 1024)
CPU_STEP = 128
CPU_MIN_STEP = 64
# the search has converged when this many probes in a row add less than this to the best
PLATEAU_PROBES = 3
PLATEAU_GAIN = 0.01
GPU_MIN_TIME_S = 0.1  # a timed loop: ~70 bf16 matmuls of 8192^3 on an H100, read by CUDA events
CPU_MIN_TIME_S = 0.02
GPU_MAX_DIM = 32768  # no dimension beyond this: bounds memory (3 x 32768^2 x 4 B = 12 GiB)
CPU_MAX_DIM = 2048


def matmul_flops(shape: Shape) -> int:
    """FLOPs of one (M, K) @ (K, N) matmul: M*N dot products of K multiply-adds."""
    m, n, k = shape
    return 2 * m * n * k


class Timer(Protocol):
    """Seconds that `iters` calls of `run` take, the device synchronized at both ends."""

    def __call__(self, run: Callable[[], object], iters: int) -> float: ...


class ClockTimer:
    """Host clock timing (CPU): `clock` read before and after the loop."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock

    def __call__(self, run: Callable[[], object], iters: int) -> float:
        start = self.clock()
        for _ in range(iters):
            run()
        return self.clock() - start


class CudaLoopTimer:
    """CUDA events around the loop on the current device (the worker's step timer, for one
    step); no host sync inside it."""

    def __call__(self, run: Callable[[], object], iters: int) -> float:
        device = torch.device("cuda", torch.cuda.current_device())
        timer = CudaEventTimer(1, device)
        torch.cuda.synchronize(device)
        timer.start(0)
        for _ in range(iters):
            run()
        timer.stop(0)
        return timer.seconds()[0]


# --- what this device can run -------------------------------------------------------------


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name()


def _cpu_name() -> str:
    with contextlib.suppress(OSError), Path("/proc/cpuinfo").open(encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return "CPU: " + line.partition(":")[2].strip()
    return "CPU: " + (platform.processor() or platform.machine() or "unknown")


def unavailable_reason(dtype: str, device: torch.device) -> Finding | None:
    """Why `dtype` cannot be measured on `device` (None: it can)."""
    if dtype not in DTYPES:
        return Finding(code="matmul.unknown_dtype", figures={"dtype": dtype, "known": list(DTYPES)})
    if device.type == "cpu":
        if dtype == "tf32":
            return Finding(code="matmul.cpu_no_tf32")
        if dtype == "fp8":
            return Finding(code="matmul.cpu_no_fp8")
        return None
    if device.type != "cuda":
        return Finding(code="matmul.device_type", figures={"type": device.type})
    hip = getattr(torch.version, "hip", None)
    capability = torch.cuda.get_device_capability(device)
    if dtype == "tf32":
        if hip:
            return Finding(code="matmul.rocm_tf32")
        if capability < TF32_MIN_CAPABILITY:
            return Finding(code="matmul.no_tf32", figures={"capability": list(capability)})
    if dtype == "bf16" and not torch.cuda.is_bf16_supported():
        return Finding(code="matmul.no_bf16", figures={"device": device_name(device)})
    return _fp8_reason(device, capability, hip) if dtype == "fp8" else None


def _fp8_reason(
    device: torch.device, capability: tuple[int, int], hip: str | None
) -> Finding | None:
    if hip:
        return Finding(code="matmul.rocm_fp8")
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return Finding(code="matmul.torch_no_fp8", figures={"torch": str(torch.__version__)})
    if capability < FP8_MIN_CAPABILITY:
        return Finding(code="matmul.no_fp8", figures={"capability": list(capability)})
    try:  # the build may still lack the kernel (old cuBLAS): try one
        run = _matmul_fn("fp8", (16, 16, 16), device)
        run()
        torch.cuda.synchronize(device)
    except (RuntimeError, TypeError) as exc:
        figures = {"device": device_name(device), "error": str(exc)}
        return Finding(code="matmul.fp8_failed", figures=figures)
    return None


# --- measuring ------------------------------------------------------------------------------

_TORCH_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16}


@contextlib.contextmanager
def _tf32(enabled: bool) -> Iterator[None]:
    """fp32 matmuls on TF32 tensor cores or not, restored afterwards (torch >= 2.9 API first)."""
    matmul = torch.backends.cuda.matmul
    new_api = hasattr(matmul, "fp32_precision")
    name = "fp32_precision" if new_api else "allow_tf32"
    before = getattr(matmul, name)
    setattr(matmul, name, ("tf32" if enabled else "ieee") if new_api else enabled)
    try:
        yield
    finally:
        setattr(matmul, name, before)


def _matmul_fn(dtype: str, shape: Shape, device: torch.device) -> Callable[[], object]:
    """One matmul of `shape` in `dtype`, its inputs (and output) allocated once."""
    m, n, k = shape
    gen = torch.Generator(device=device).manual_seed(0)
    if dtype == "fp8":
        a = torch.randn(m, k, device=device, generator=gen).to(torch.float8_e4m3fn)
        # _scaled_mm wants its second operand column-major
        b = torch.randn(n, k, device=device, generator=gen).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch_dtype = torch.float16 if dtype == "fp16" else _TORCH_DTYPE[dtype]
    a = torch.randn(m, k, device=device, generator=gen, dtype=torch_dtype)
    b = torch.randn(k, n, device=device, generator=gen, dtype=torch_dtype)
    out = torch.empty(m, n, device=device, dtype=torch_dtype)
    return lambda: torch.mm(a, b, out=out)


def default_timer(device: torch.device) -> Timer:
    return CudaLoopTimer() if device.type == "cuda" else ClockTimer()


def loop_length(run: Callable[[], object], timer: Timer, min_time_s: float) -> int:
    """Calls of `run` whose loop lasts >= `min_time_s`: grown at most 10x a round, up to
    MAX_ITERS (a timer reading ~0 must not hang it)."""
    iters = 1
    while True:
        elapsed = timer(run, iters)
        if elapsed >= min_time_s or iters >= MAX_ITERS:
            return iters
        grow = min_time_s / elapsed * 1.2 if elapsed > 0 else 10.0
        iters = min(MAX_ITERS, max(iters * 2, math.ceil(iters * min(grow, 10.0))))


def measure_shape(
    run: Callable[[], object],
    shape: Shape,
    timer: Timer,
    min_time_s: float,
    repeats: int,
    warmup: int,
) -> Probe:
    """Warm up, find an iteration count whose loop lasts >= `min_time_s`, then time `repeats`
    such loops: the median loop gives the probe's TFLOP/s."""
    for _ in range(warmup):
        run()
    iters = loop_length(run, timer, min_time_s)
    flops = matmul_flops(shape) * iters
    times = [timer(run, iters) for _ in range(repeats)]
    median = statistics.median(times)
    m, n, k = shape
    if not median > 0 or not math.isfinite(median):
        return Probe(m=m, n=n, k=k, iters=iters, error=timer_read(median))
    return Probe(
        m=m,
        n=n,
        k=k,
        tflops=flops / median / 1e12,
        seconds_per_matmul=median / iters,
        iters=iters,
        repeats_tflops=[flops / t / 1e12 if t > 0 else math.inf for t in times],
    )


def measure_matmul(
    dtype: str,
    shapes: Sequence[Shape],
    device: str | torch.device = "cpu",
    min_time_s: float = 0.05,
    *,
    repeats: int = 3,
    warmup: int = 2,
    timer: Timer | None = None,
) -> list[Probe]:
    """Achieved TFLOP/s of each shape (2*M*N*K per matmul / median loop time per matmul).

    Raises ValueError where `dtype` cannot run on `device` (see `unavailable_reason`); a shape
    that fails (out of memory, a kernel error) gets a probe with its error.
    """
    dev = torch.device(device)
    reason = unavailable_reason(dtype, dev)
    if reason:
        raise ValueError(wording.say(reason))
    use_timer = timer or default_timer(dev)
    probes = []
    with _tf32(dtype == "tf32") if dev.type == "cuda" else contextlib.nullcontext():
        for shape in shapes:
            try:  # the inputs live inside this call only: freed before the next shape
                probe = measure_shape(
                    _matmul_fn(dtype, shape, dev), shape, use_timer, min_time_s, repeats, warmup
                )
            except RuntimeError as exc:  # torch.cuda.OutOfMemoryError is one
                m, n, k = shape
                probe = Probe(m=m, n=n, k=k, error=f"{type(exc).__name__}: {exc}")
            probes.append(probe)
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    return probes


# --- the spec-sheet figure and the plausibility guard ---------------------------------------


def spec_for(name: str, dtype: str) -> tuple[float | None, str | None, Finding | None]:
    """(spec TFLOP/s, its source, None) or (None, None, why not), from the gpu_peaks table."""
    if name.startswith("CPU"):
        return None, None, Finding(code="matmul.cpu_no_spec")
    if MIG.search(name):
        return None, None, Finding(code="matmul.mig_no_spec", figures={"name": name})
    row = lookup(name)
    if row is None:
        return None, None, Finding(code="matmul.no_table_entry", figures={"name": name})
    if dtype not in row.tflops:
        figures = {"dtype": dtype, "name": name, "model": row.model}
        return None, None, Finding(code="matmul.no_dtype_peak", figures=figures)
    return row.tflops[dtype], row.source, None


def judge(result: PeakResult) -> PeakResult:
    """Fill spec, ratio and the guard: best above spec * SPEC_TOLERANCE is a timing bug."""
    spec, source, note = spec_for(result.device_name, result.dtype)
    result.spec_tflops, result.spec_source, result.spec_note = spec, source, note
    best = result.best_tflops
    if spec is None or best is None:
        if best is not None:
            unchecked = {"note": note.model_dump() if note is not None else None}
            result.notes.append(Finding(code="matmul.not_spec_checked", figures=unchecked))
        return result
    result.ratio = best / spec
    if best > spec * SPEC_TOLERANCE:
        figures: dict[str, Any] = {
            "best": best,
            "shape": list(result.best_shape or ()),
            "dtype": result.dtype,
            "spec": spec,
            "ratio": result.ratio,
            "allowed": SPEC_TOLERANCE,
        }
        result.suspect = Finding(code="matmul.suspect", figures=figures)
    return result


# --- the search -----------------------------------------------------------------------------


def _neighbours(shape: Shape, step: int, max_dim: int) -> list[Shape]:
    out = []
    for axis in range(3):
        for sign in (1, -1):
            dims = list(shape)
            dims[axis] += sign * step
            if step <= dims[axis] <= max_dim:
                out.append((dims[0], dims[1], dims[2]))
    return out


def converged(tflops: Sequence[float | None]) -> bool:
    """Whether a search whose probes measured `tflops` (in order; None: a probe that failed)
    can stop: the last PLATEAU_PROBES of them raised the best figure before them by less than
    PLATEAU_GAIN (relative). A failed probe adds nothing; a search with no figure before the
    last PLATEAU_PROBES has not converged."""
    probes = PLATEAU_PROBES
    if len(tflops) <= probes:
        return False
    before = [t for t in tflops[:-probes] if t is not None]
    if not before:
        return False
    best_before = max(before)
    best_after = max([best_before, *(t for t in tflops[-probes:] if t is not None)])
    return best_after < best_before * (1.0 + PLATEAU_GAIN)


def find_peak(
    dtype: str,
    device: str | torch.device = "cpu",
    budget_s: float = 30.0,
    *,
    squares: Sequence[int] | None = None,
    step: int | None = None,
    min_step: int | None = None,
    max_dim: int | None = None,
    min_time_s: float | None = None,
    timer: Timer | None = None,
    clock: Callable[[], float] = time.monotonic,
    name: str | None = None,
) -> PeakResult:
    """Search matmul shapes for the best TFLOP/s until it has `converged`, within `budget_s`
    (read on `clock`) at most.

    Square shapes first (ascending), then a hill climb from the best: each dimension +/- `step`,
    moving while a neighbour is faster, halving the step down to `min_step` when none is; no
    dimension above `max_dim`. The search stops when it has `converged`; a probe starts only
    while the budget left covers the slowest probe so far. `name` overrides the device name
    used for the spec lookup.
    """
    dev = torch.device(device)
    gpu = dev.type == "cuda"
    started = clock()
    result = PeakResult(
        dtype=dtype, device=str(dev), device_name=name or device_name(dev), budget_s=budget_s
    )
    reason = unavailable_reason(dtype, dev)
    if reason:
        result.unavailable = reason
        return judge(result)
    if dev.type == "cpu":
        threads = {"threads": torch.get_num_threads()}
        result.notes.append(Finding(code="matmul.cpu_threads", figures=threads))
        if dtype in ("bf16", "fp16"):
            result.notes.append(Finding(code="matmul.cpu_half_slow", figures={"dtype": dtype}))
    sizes = list(squares or (GPU_SQUARES if gpu else CPU_SQUARES))
    step = step or (GPU_STEP if gpu else CPU_STEP)
    min_step = min_step or (GPU_MIN_STEP if gpu else CPU_MIN_STEP)
    max_dim = max_dim or (GPU_MAX_DIM if gpu else CPU_MAX_DIM)
    min_time = min_time_s if min_time_s is not None else (GPU_MIN_TIME_S if gpu else CPU_MIN_TIME_S)
    seen: dict[Shape, Probe] = {}
    slowest = 0.0  # the longest probe so far, in budget seconds
    why: list[Finding] = []  # why the search stopped before it ran out of shapes

    def probe(shape: Shape) -> Probe | None:
        nonlocal slowest
        if shape in seen:
            return seen[shape]
        if converged([p.tflops for p in seen.values()]):
            figures = {"last": PLATEAU_PROBES, "gain": PLATEAU_GAIN, "probes": len(seen)}
            why.append(Finding(code="matmul.converged", figures=figures))
            return None
        now = clock()
        if now - started + slowest > budget_s:
            figures = {"budget_s": budget_s, "probes": len(seen)}
            why.append(Finding(code="matmul.budget_reached", figures=figures))
            return None
        (found,) = measure_matmul(dtype, [shape], dev, min_time, timer=timer)
        slowest = max(slowest, clock() - now)
        seen[shape] = found
        return found

    def best() -> Probe | None:
        done = [p for p in seen.values() if p.tflops is not None]
        return max(done, key=lambda p: p.tflops or 0.0) if done else None

    stopped = any(probe((size, size, size)) is None for size in sorted(sizes))
    current = best()
    while current is not None and not stopped:
        moved = False
        for shape in _neighbours(current.shape, step, max_dim):
            if shape in seen:
                continue
            found = probe(shape)
            if found is None:
                stopped = True
                break
            if found.tflops is not None and found.tflops > (current.tflops or 0.0):
                current, moved = found, True
                break
        if stopped or (not moved and step // 2 < min_step):
            break
        if not moved:
            step //= 2
    if stopped:
        result.notes.append(why[0])
    result.probes = list(seen.values())
    top = best()
    if top is not None:
        result.best_tflops, result.best_shape = top.tflops, top.shape
    elif not result.probes:
        result.notes.append(Finding(code="matmul.no_probe"))
    result.elapsed_s = clock() - started
    return judge(result)
