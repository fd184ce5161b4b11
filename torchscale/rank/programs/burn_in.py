"""Runs inside every rank of `validate --level burn` (torchrun, through the harness of
rank/worker/harness.py: one rank per GPU; 2 gloo ranks, one thread each, on a CPU node).

What each interval runs, the correctness fingerprint (the same seeded work hashed on every
rank, compared bit for bit) and the ECC counters are described in docs/validate.md, "Burn-in".
Rank 0 gathers everything and writes it as JSON (atomically, types in contracts/schema/burn_in.py)
for the parent (orchestration/validate/burn_in.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import statistics
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from torchscale.contracts.cell_settings import TelemetryConfig
from torchscale.contracts.clock_reasons import IGNORED_REASONS, decode_clock_reasons
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.burn_in import BurnRun, BurnSpec, Fingerprint, Interval, RankBurn
from torchscale.rank.programs.matmul_peak import device_name
from torchscale.rank.telemetry.nvml_source import uuid_candidates
from torchscale.rank.telemetry.rank import rank_sampler, torch_uuid
from torchscale.rank.telemetry.samples import WindowSamples
from torchscale.rank.worker.harness import Group, Join, Program, spec_file
from torchscale.rank.worker.timing import synchronize

SEED = 20261123
WORK_SIZE = 256  # the seeded work: a chain of WORK_STEPS (256 x 256) matmuls and tanh
WORK_STEPS = 8


def seeded_work(device: torch.device) -> torch.Tensor:
    """The same work on every rank: seeded inputs, a fixed chain of matmuls (fp32, no TF32)."""
    generator = torch.Generator(device=device).manual_seed(SEED)
    x = torch.randn(WORK_SIZE, WORK_SIZE, generator=generator, device=device)
    w = torch.randn(WORK_SIZE, WORK_SIZE, generator=generator, device=device) / WORK_SIZE**0.5
    for _ in range(WORK_STEPS):
        x = torch.tanh(x @ w)
    return x


def fingerprint(result: torch.Tensor, corrupt: bool = False) -> str:
    """sha256 of the result's bytes; `corrupt` flips one bit first (the detector's test)."""
    data = bytearray(result.detach().cpu().contiguous().numpy().tobytes())
    if corrupt:
        data[len(data) // 2] ^= 0x01
    return hashlib.sha256(bytes(data)).hexdigest()


def _timed_loop(fn: Any, device: torch.device, budget_s: float) -> tuple[int, float]:
    """(calls, seconds) of calling `fn` in batches until `budget_s` has passed."""
    calls, start = 0, time.perf_counter()
    batch = 1
    while True:
        for _ in range(batch):
            fn()
        synchronize(device)
        calls += batch
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s:
            return calls, elapsed
        batch = min(batch * 2, 64)


def _telemetry(samples: WindowSamples, interval: Interval) -> None:
    def median(name: str) -> float | None:
        values = [v for v in samples.column(name) if v is not None]
        return float(statistics.median(values)) if values else None

    interval.sm_clock_mhz = median("sm_clock_mhz")
    interval.temperature_c = median("temperature_c")
    interval.power_w = median("power_w")
    reasons: set[str] = set()
    for mask in samples.column("clock_reasons"):
        if mask is not None:
            reasons.update(decode_clock_reasons(int(mask)))
    interval.slowdown = sorted(reasons - IGNORED_REASONS)


def _failed(exc: Exception) -> Finding:
    return Finding(code="nvml.read_failed", figures={"error": type(exc).__name__})


def read_error_counters(device: torch.device) -> tuple[dict[str, int], dict[str, Finding]]:
    """NVML's uncorrected ECC errors (volatile) and remapped rows, where NVML has them."""
    if device.type != "cuda":
        return {}, {"error_counters": Finding(code="nvml.cpu_no_counters")}
    try:
        import pynvml

        pynvml.nvmlInit()
        uuid = torch_uuid(device)
        if uuid is None:
            return {}, {"error_counters": Finding(code="nvml.no_uuid", figures={"what": "device"})}
        handle = None
        for candidate in uuid_candidates(uuid):
            with contextlib.suppress(Exception):
                handle = pynvml.nvmlDeviceGetHandleByUUID(candidate)
                break
        if handle is None:
            figures = {"what": "device", "uuid": uuid}
            return {}, {"error_counters": Finding(code="nvml.no_gpu_with_uuid", figures=figures)}
    except Exception as exc:  # no pynvml, no driver
        error = {"error": f"{type(exc).__name__}: {exc}"}
        return {}, {"error_counters": Finding(code="nvml.unavailable", figures=error)}
    counters: dict[str, int] = {}
    missing: dict[str, Finding] = {}
    try:
        counters["ecc_uncorrected"] = int(
            pynvml.nvmlDeviceGetTotalEccErrors(
                handle, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
            )
        )
    except Exception as exc:
        missing["ecc_uncorrected"] = _failed(exc)
    try:
        _corrected, uncorrected, pending, failure = pynvml.nvmlDeviceGetRemappedRows(handle)
        counters.update(
            remapped_uncorrected=int(uncorrected),
            remap_pending=int(pending),
            remap_failure=int(failure),
        )
    except Exception as exc:
        missing["remapped_rows"] = _failed(exc)
    missing["xid"] = Finding(code="nvml.xid_not_read")
    return counters, missing


def burn_rank(spec: BurnSpec, device: torch.device, rank: int) -> RankBurn:
    mine = RankBurn(rank=rank, device=str(device), device_name=device_name(device))
    mine.counters_start, mine.unavailable = read_error_counters(device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(spec.gemm_n, spec.gemm_n, device=device, dtype=dtype)
    b = torch.randn(spec.gemm_n, spec.gemm_n, device=device, dtype=dtype)
    src = torch.empty(spec.copy_bytes // 4, device=device)
    dst = torch.empty_like(src)
    sampler = rank_sampler(TelemetryConfig(interval_ms=200), device)

    def check(index: int) -> None:
        corrupt = spec.corrupt_rank == rank and len(mine.fingerprints) >= 1
        mine.fingerprints.append(
            Fingerprint(interval=index, sha256=fingerprint(seeded_work(device), corrupt))
        )

    check(0)
    dist.barrier()
    started = time.perf_counter()
    index = 0
    while time.perf_counter() - started < spec.duration_s:
        index += 1
        if sampler is not None:
            sampler.start()
        calls, seconds = _timed_loop(lambda: a @ b, device, spec.interval_s * 0.7)
        copies, copy_s = _timed_loop(lambda: dst.copy_(src), device, spec.interval_s * 0.3)
        interval = Interval(
            index=index,
            t_s=time.perf_counter() - started,
            tflops=2 * spec.gemm_n**3 * calls / seconds / 1e12 if seconds > 0 else None,
            copy_gbps=2 * src.numel() * 4 * copies / copy_s / 1e9 if copy_s > 0 else None,
        )
        if sampler is not None:
            _telemetry(sampler.stop(), interval)
        mine.intervals.append(interval)
        if index % spec.fingerprint_every == 0:
            check(index)
    if not mine.fingerprints or mine.fingerprints[-1].interval != index:
        check(index)
    mine.counters_end, _ = read_error_counters(device)
    return mine


def body(spec: BurnSpec, group: Group) -> None:
    """Every rank burns; rank 0 gathers and writes everything."""
    mine = burn_rank(spec, group.device, group.rank)
    gathered = group.gather(mine.model_dump())
    if group.rank == 0:
        burn = BurnRun(
            world_size=group.size,
            duration_s=spec.duration_s,
            ranks=[RankBurn.model_validate(one) for one in gathered],
        )
        group.write(Path(spec.result_path), burn.model_dump_json(indent=2))


def _join(spec: BurnSpec) -> Join:
    # the burn outlasts the default collective timeout's purpose: the gather waits for peers
    # that may finish their last interval a little later
    timeout = timedelta(seconds=spec.duration_s + 600)
    return Join("nccl" if spec.device == "cuda" else "gloo", spec.device, timeout)


PROGRAM = Program(
    "torchscale validate --level burn (one rank)",
    spec_file(BurnSpec, "torchscale validate --level burn (one rank)"),
    _join,
    body,
)
