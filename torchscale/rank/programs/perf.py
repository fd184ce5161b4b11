"""Runs inside every rank of `validate --level perf` (started by torchrun through the harness of
rank/programs/harness.py, one rank per GPU; one rank on a CPU node, which then uses all its
threads).

Every rank measures its own device at the same time as the others (a barrier starts each
phase), because a node's GPUs share power, cooling and PCIe switches: a GPU measured alone on
an idle node looks better than it will in training. The phases: the matmul peak per dtype
(rank/programs/matmul_peak.py), device memory copy and triad, then host-to-device and
device-to-host with pinned memory (rank/programs/bandwidth.py), twice: each GPU alone in turn (its
own PCIe link, judged against the link's rate) and all at once (what the board gives when
GPUs behind one PCIe switch split its uplink). Rank 0 then reads the PCIe topology
(contracts/pcie_topology.py) and measures the GPU-to-GPU matrix, which needs every GPU in one
process, while the others wait. Each CUDA rank also reads its GPU's power limits from NVML
(contracts/power_limit.py): a node capped below the SKU's default power is below its matmul bar
on every GPU, healthy. Rank 0 writes everything as JSON (atomically, types in
contracts/schema/perf.py) for the parent, which judges it (orchestration/validate/perf.py).

Every barrier and the one gather run on gloo, on CUDA too: a rank waiting in an NCCL barrier
has a kernel spinning on its GPU until the last rank arrives, and that kernel shares the GPU
with the copies a peer is timing into it (rank 0's GPU-to-GPU pairs, a lone host copy). On
gloo a waiting rank blocks in its CPU thread and its GPU is idle. No figure here crosses GPUs
through a collective (NCCL's bus bandwidth is `comm`'s own run), so nothing needs NCCL.
"""

from __future__ import annotations

import functools
from datetime import timedelta

import torch
import torch.distributed as dist

from torchscale.contracts.pcie_topology import read_gpu_link, read_host_topology
from torchscale.contracts.power_limit import PowerLimit, read_power_limit
from torchscale.contracts.schema.perf import (
    BandwidthResult,
    PerfRun,
    PerfSpec,
    RankPerf,
)
from torchscale.rank.programs.bandwidth import (
    Direction,
    measure_host_device,
    measure_memory,
    measure_p2p_matrix,
)
from torchscale.rank.programs.harness import Group, Join, Program, spec_file
from torchscale.rank.programs.matmul_peak import device_name, find_peak
from torchscale.rank.telemetry.nvml_source import uuid_candidates
from torchscale.rank.telemetry.rank import torch_uuid

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


def measure_rank(spec: PerfSpec, device: torch.device) -> RankPerf:
    """This rank's phases, each started with its peers."""
    mine = RankPerf(rank=dist.get_rank(), device=str(device), device_name=device_name(device))
    if device.type == "cuda":
        mine.power_limit = gpu_power_limit(device)
    for dtype in spec.dtypes:
        _phase(device)
        mine.matmul.append(find_peak(dtype, device, spec.matmul_budget_s))
    if spec.memory:
        for kind in ("copy", "triad"):
            _phase(device)
            mine.bandwidth.append(measure_memory(device, kind))
    if spec.host_link:
        for direction in ("h2d", "d2h"):
            if device.type == "cuda":
                mine.bandwidth += host_link(direction, device)
            else:
                _phase(device)
                mine.bandwidth.append(measure_host_device(0, direction))  # says why not
    return mine


def gpu_power_limit(device: torch.device) -> PowerLimit:
    """This GPU's power limits, found in NVML by the UUID torch gives it (CUDA ordinals and
    NVML indices differ under CUDA_VISIBLE_DEVICES); never raises."""
    try:
        uuid = torch_uuid(device)
    except Exception as exc:  # a torch that cannot describe the device
        return PowerLimit(unavailable=f"torch cannot describe {device}: {exc}")
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


def body(spec: PerfSpec, group: Group) -> None:
    """Every rank's phases, then rank 0 alone measures the pairs and writes everything; the
    others wait at the harness's last barrier, on the CPU."""
    mine = measure_rank(spec, group.device)
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
