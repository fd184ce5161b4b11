"""Runs inside every rank of `validate --level perf` (started by torchrun, one rank per GPU; one
rank on a CPU node, which then uses all its threads).

Every rank measures its own device at the same time as the others (a barrier starts each
phase), because a node's GPUs share power, cooling and PCIe switches: a GPU measured alone on
an idle node looks better than it will in training. The phases: the matmul peak per dtype
(validate/matmul_peak.py), device memory copy and triad, then host-to-device and
device-to-host with pinned memory (validate/bandwidth.py), twice: each GPU alone in turn (its
own PCIe link, judged against the link's rate) and all at once (what the board gives when
GPUs behind one PCIe switch split its uplink). Rank 0 then reads the PCIe topology
(validate/pcie_topology.py) and measures the GPU-to-GPU matrix, which needs every GPU in one
process, while the others wait. Each CUDA rank also reads its GPU's power limits from NVML
(validate/power_limit.py): a node capped below the SKU's default power is below its matmul bar
on every GPU, healthy. Rank 0 writes everything as JSON (atomically) for the parent,
which judges it (validate/perf.py).

Every barrier and the one gather run on gloo, on CUDA too: a rank waiting in an NCCL barrier
has a kernel spinning on its GPU until the last rank arrives, and that kernel shares the GPU
with the copies a peer is timing into it (rank 0's GPU-to-GPU pairs, a lone host copy). On
gloo a waiting rank blocks in its CPU thread and its GPU is idle. No figure here crosses GPUs
through a collective (NCCL's bus bandwidth is `comm`'s own run), so nothing needs NCCL.
"""

from __future__ import annotations

if __name__ == "__main__":
    # before torch (seconds to import): a torchrun that dies from here on takes this rank along
    from torchscale.rank.worker.diagnostics import die_with_torchrun

    die_with_torchrun()

import functools
from datetime import timedelta
from typing import Any, Literal

import torch
import torch.distributed as dist
from pydantic import BaseModel, ConfigDict, Field

from torchscale.contracts.atomic import write_text_atomic
from torchscale.orchestration.validate.bandwidth import (
    BandwidthResult,
    Direction,
    P2PMatrix,
    measure_host_device,
    measure_memory,
    measure_p2p_matrix,
)
from torchscale.orchestration.validate.matmul_peak import PeakResult, device_name, find_peak
from torchscale.orchestration.validate.pcie_topology import (
    HostTopology,
    read_gpu_link,
    read_host_topology,
)
from torchscale.orchestration.validate.power_limit import PowerLimit, read_power_limit
from torchscale.rank.telemetry.nvml_source import uuid_candidates
from torchscale.rank.telemetry.rank import torch_uuid
from torchscale.rank.worker.error_file import record_errors
from torchscale.rank.worker.rank_entry import (
    leave_without_teardown,
    process_group,
    rank_device,
    read_spec,
)

# the CPU backend of every barrier: see the module docstring
BACKEND = "gloo"
# also every collective's timeout: the others wait at a barrier while rank 0 measures every GPU
# pair (8 GPUs: 56 pairs, under a minute) and a search may overrun its budget by one probe
INIT_TIMEOUT = timedelta(minutes=10)


class PerfSpec(BaseModel):
    """What every rank of a perf run measures, and where rank 0 writes it."""

    model_config = ConfigDict(extra="forbid")

    device: Literal["cuda", "cpu"]
    dtypes: list[str]
    matmul_budget_s: float = Field(description="shape-search budget per dtype, per GPU")
    memory: bool = True
    host_link: bool = True
    p2p: bool = True
    result_path: str


class RankPerf(BaseModel):
    """One rank's (one GPU's) figures."""

    model_config = ConfigDict(extra="forbid")

    rank: int
    device: str
    device_name: str
    matmul: list[PeakResult] = Field(default_factory=list)
    bandwidth: list[BandwidthResult] = Field(default_factory=list)
    power_limit: PowerLimit | None = Field(
        default=None,
        description="CUDA: this GPU's enforced and default power limits (NVML); None on CPU",
    )


class PerfRun(BaseModel):
    """Rank 0's file: every rank's figures and the GPU-to-GPU matrix."""

    model_config = ConfigDict(extra="forbid")

    world_size: int
    ranks: list[RankPerf]
    p2p: P2PMatrix | None = None
    host_topology: HostTopology | None = Field(
        default=None, description="which GPUs share a PCIe link to the host (CUDA only)"
    )


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


def run(spec: PerfSpec) -> None:
    device = rank_device(spec.device)
    with process_group(BACKEND, device, INIT_TIMEOUT):
        mine = measure_rank(spec, device)
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, mine.model_dump())
        if dist.get_rank() == 0:
            p2p = None
            if spec.p2p:
                gpus = list(range(torch.cuda.device_count())) if spec.device == "cuda" else []
                p2p = measure_p2p_matrix(gpus)
            topology = None
            if spec.device == "cuda" and spec.host_link:
                topology = read_host_topology(torch, dist.get_world_size())
            run_result = PerfRun(
                world_size=dist.get_world_size(),
                ranks=[RankPerf.model_validate(one) for one in gathered],
                p2p=p2p,
                host_topology=topology,
            )
            write_text_atomic(spec.result_path, run_result.model_dump_json(indent=2))
        dist.barrier()  # the others wait here, on the CPU, while rank 0 measures the pairs


@record_errors
def main(argv: list[str] | None = None) -> None:
    run(read_spec(PerfSpec, "torchscale validate --level perf (one rank)", argv))
    leave_without_teardown()


if __name__ == "__main__":
    main()
