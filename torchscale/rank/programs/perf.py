"""Runs inside every rank of `validate --level perf` (started by torchrun through the harness of
rank/worker/harness.py, one rank per GPU; one rank on a CPU node, which then uses all its
threads).

Every rank measures its own device at the same time as the others, a barrier starting each
phase, every barrier and the one gather on gloo (why: docs/validate.md, "What `perf`
measures"). The phases: the matmul peak per dtype (matmul_peak.py), device memory and host
copies (bandwidth.py), each GPU alone in turn and all at once; then rank 0 alone the PCIe
topology and the GPU-to-GPU matrix (every GPU in one process). Each CUDA rank also reads its
power limits (a capped node is below its matmul bar on every GPU, healthy). Rank 0 writes each
phase into the spec's phase_dir as it ends (what a stopped run keeps), then everything as JSON
(contracts/schema/perf.py) for the parent to judge (orchestration/validate/perf.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from torchscale.contracts.finding import Finding
from torchscale.contracts.pcie_topology import read_gpu_link, read_host_topology
from torchscale.contracts.power_limit import PowerLimit, read_power_limit
from torchscale.contracts.schema.perf import BandwidthResult, PerfRun, PerfSpec, RankPerf
from torchscale.rank.programs.bandwidth import (
    Direction,
    measure_host_device,
    measure_memory,
    measure_p2p_matrix,
)
from torchscale.rank.programs.matmul_peak import device_name, find_peak
from torchscale.rank.telemetry.nvml_source import uuid_candidates
from torchscale.rank.telemetry.rank import torch_uuid
from torchscale.rank.worker.harness import Group, Join, Program, spec_file

# the CPU backend of every barrier: see the module docstring
BACKEND = "gloo"
# also every collective's timeout: the others wait at a barrier while rank 0 measures every GPU
# pair (8 GPUs: 56 pairs, under a minute) and a search may overrun its budget by one probe
INIT_TIMEOUT = timedelta(minutes=10)


def _phase(device: torch.device) -> None:
    """Every rank starts the next phase together, its GPU idle while it waits."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()


PhaseDone = Callable[[str, RankPerf], None]


def measure_rank(spec: PerfSpec, device: torch.device, done: PhaseDone | None = None) -> RankPerf:
    """This rank's phases, each started with its peers; `done` hears each finished phase's
    name and this rank's figures of that phase alone (every rank calls it at the same
    points, so it may run a collective)."""
    mine = RankPerf(rank=dist.get_rank(), device=str(device), device_name=device_name(device))
    if device.type == "cuda":
        mine.power_limit = gpu_power_limit(device)
        with contextlib.suppress(Exception):  # a torch that cannot describe it: index only
            mine.uuid = torch_uuid(device)

    def finished(phase: str, **figures: list[Any]) -> None:
        if done is not None:
            done(phase, mine.model_copy(update=figures))

    for dtype in spec.dtypes:
        _phase(device)
        peak = find_peak(dtype, device, spec.matmul_budget_s)
        mine.matmul.append(peak)
        finished(f"matmul-{dtype}", matmul=[peak], bandwidth=[])
    if spec.memory:
        for kind in ("copy", "triad"):
            _phase(device)
            figure = measure_memory(device, kind)
            mine.bandwidth.append(figure)
            finished(f"memory-{kind}", matmul=[], bandwidth=[figure])
    if spec.host_link:
        for direction in ("h2d", "d2h"):
            if device.type == "cuda":
                figures = host_link(direction, device)
            else:
                _phase(device)
                figures = [measure_host_device(0, direction)]  # says why not
            mine.bandwidth += figures
            finished(f"host-{direction}", matmul=[], bandwidth=figures)
    return mine


def gpu_power_limit(device: torch.device) -> PowerLimit:
    """This GPU's power limits, found in NVML by the UUID torch gives it (CUDA ordinals and
    NVML indices differ under CUDA_VISIBLE_DEVICES); never raises."""
    try:
        uuid = torch_uuid(device)
    except Exception as exc:  # a torch that cannot describe the device
        why = {"device": str(device), "error": str(exc)}
        return PowerLimit(unavailable=Finding(code="power_limit.device_undescribed", figures=why))
    return read_power_limit(uuid_candidates(uuid) if uuid else [])


def host_link(direction: Direction, device: torch.device) -> list[BandwidthResult]:
    """This GPU's copies to or from pinned host memory: alone (the GPUs take turns, the
    others wait at the barrier; the GPU's link read while it copies), then with every GPU at
    once (checked `<direction>.all`)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    gpu = device.index or 0
    alone: BandwidthResult | None = None
    for turn in range(world):
        _phase(device)
        if turn == rank:
            alone = measure_host_device(
                gpu, direction, read_link=functools.partial(read_gpu_link, torch, gpu)
            )
    assert alone is not None
    if world == 1:
        return [alone]  # one GPU: alone is all at once
    _phase(device)
    together = measure_host_device(gpu, direction)
    return [alone, together.model_copy(update={"check": f"{direction}.all", "gpus_at_once": world})]


def phase_writer(spec: PerfSpec, group: Group) -> PhaseDone:
    """Each finished phase, every rank's figures of it gathered, written by rank 0 as
    `NN-<phase>.json` in the spec's phase_dir (atomically: a stopped run keeps whole files)."""
    count = [0]

    def write(phase: str, figures: RankPerf) -> None:
        gathered = group.gather(figures.model_dump())
        count[0] += 1
        if spec.phase_dir is None:
            return
        run = PerfRun(
            world_size=group.size, ranks=[RankPerf.model_validate(one) for one in gathered]
        )
        group.write(
            Path(spec.phase_dir) / f"{str(count[0]).zfill(2)}-{phase}.json",
            run.model_dump_json(indent=2),
        )

    return write


def body(spec: PerfSpec, group: Group) -> None:
    """Every rank's phases (each written as it ends), then rank 0 alone measures the pairs
    and writes everything; the others wait at the harness's last barrier, on the CPU."""
    write_phase = phase_writer(spec, group)
    mine = measure_rank(spec, group.device, write_phase)
    gathered = group.gather(mine.model_dump())
    if group.rank == 0:
        p2p = None
        if spec.p2p:
            gpus = list(range(torch.cuda.device_count())) if spec.device == "cuda" else []
            p2p = measure_p2p_matrix(gpus)
        topology = None
        if spec.device == "cuda" and spec.host_link:
            topology = read_host_topology(torch, group.size)
        run_result = PerfRun(
            world_size=group.size,
            ranks=[RankPerf.model_validate(one) for one in gathered],
            p2p=p2p,
            host_topology=topology,
        )
        group.write(spec.result_path, run_result.model_dump_json(indent=2))


PROGRAM = Program(
    "torchscale validate --level perf (one rank)",
    spec_file(PerfSpec, "torchscale validate --level perf (one rank)"),
    lambda spec: Join(BACKEND, spec.device, INIT_TIMEOUT),
    body,
)
