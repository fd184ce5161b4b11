"""Which GPUs share a PCIe link to the host, read from sysfs or, failing that, from NVML.

On HGX-style boards two GPUs (and NICs) sit behind one PCIe switch whose single uplink goes to
the CPU: each GPU alone copies at its own link's rate, and both at once split the uplink. So
`validate --level perf` judges a GPU's host link by its figure alone and reports the figure
with every GPU copying at once beside this topology (orchestration/validate/host_links.py).
How sysfs (the deepest bridge above GPUs under one root port names their shared uplink) and NVML
(a common ancestor at NVML_TOPOLOGY_MULTIPLE or closer; no uplink rate) are read, and why a GPU's
own link counts as read under load (`read_gpu_link`: an idle GPU drops to a power-saving rate):
docs/validate.md. Neither readable: the topology is unknown, and says why. Parsing and grouping
are pure; `read_host_topology` does the reading. Shared by the ranks that read the links
(rank/programs/perf.py) and the host that judges them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import takewhile
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from torchscale.contracts.nvml import NvmlGpu, NvmlState, call, nvml_indices, probe_nvml
from torchscale.contracts.versioned import Record

SYSFS_PCI_DEVICES = Path("/sys/bus/pci/devices")
BUS_ID = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")  # as sysfs names devices
ANY_BUS_ID = re.compile(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")  # + NVML
# nvmlGpuTopologyLevel_t: INTERNAL 0, SINGLE 10 (one PCIe switch), MULTIPLE 20 (several
# switches, no host bridge), HOSTBRIDGE 30, NODE 40, SYSTEM 50: up to MULTIPLE the two GPUs
# reach the host through a PCIe link they share
NVML_TOPOLOGY_MULTIPLE = 20
GENERATION_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
Source = Literal["sysfs", "nvml"]


class PcieLink(Record):
    """One PCIe link as trained now, and the most it can train to."""

    speed_gts: float | None = Field(description="transfer rate per lane now, GT/s")
    width: int | None = Field(description="lanes now")
    max_speed_gts: float | None = None
    max_width: int | None = None

    @property
    def gbps(self) -> float | None:
        """GB/s per direction at the raw rate (one bit per transfer and lane), as the spec
        sheets count it: Gen5 x16 is 64 GB/s (the sheet's 128 counts both directions)."""
        if self.speed_gts is None or self.width is None:
            return None
        return self.speed_gts * self.width / 8

    @property
    def below_max(self) -> bool:
        """Trained below what the link can do (a reseat, a riser, a BIOS setting)."""
        speed = self.max_speed_gts is not None and (self.speed_gts or 0) < self.max_speed_gts
        width = self.max_width is not None and (self.width or 0) < self.max_width
        return speed or width

    def text(self) -> str:
        """'Gen5 x16', or '20 GT/s x8' for a rate no generation has."""
        return _rate_text(self.speed_gts, self.width)

    def max_text(self) -> str:
        return _rate_text(self.max_speed_gts, self.max_width)


def _rate_text(speed: float | None, width: int | None) -> str:
    """A link's name as the PCIe spec gives it (an identifier, not a measured figure)."""
    if speed is None:
        rate = "unknown rate"
    else:
        gen = GENERATION_BY_GTS.get(speed)
        gts = str(int(speed)) if float(speed).is_integer() else str(speed)
        rate = "Gen" + str(gen) if gen else gts + " GT/s"
    return rate + " x" + str(width) if width else rate


class GpuPlacement(Record):
    """One GPU (CUDA ordinal = perf rank) in the PCI tree."""

    gpu: int
    bus_id: str | None = None
    shares_with: list[int] = Field(
        default_factory=list, description="the other GPUs behind the same link to the host"
    )
    via: str | None = Field(
        default=None, description="the bridge whose upstream link they share (sysfs)"
    )
    uplink: PcieLink | None = Field(default=None, description="that shared link (sysfs)")
    link: PcieLink | None = Field(default=None, description="the GPU's own link (sysfs)")


class HostTopology(Record):
    """Every GPU's placement, from one source; or why it is unknown."""

    source: Source | None = None
    gpus: list[GpuPlacement] = Field(default_factory=list)
    unknown: str | None = Field(default=None, description="why there is no topology")

    def of(self, gpu: int) -> GpuPlacement | None:
        return next((p for p in self.gpus if p.gpu == gpu), None)


def normal_bus_id(text: str) -> str | None:
    """'00000000:19:00.0' (NVML) or '0000:19:00.0' (sysfs) as sysfs spells it; None if not
    a bus id."""
    match = ANY_BUS_ID.fullmatch(text.strip())
    if match is None:
        return None
    domain, bus, device, function = match.groups()
    return f"{hex(int(domain, 16))[2:].zfill(4)}:{bus.lower()}:{device.lower()}.{function}"


def parse_link_speed(text: str) -> float | None:
    """'32.0 GT/s PCIe' (or '8 GT/s', '2.5 GT/s') -> 32.0; 'Unknown' -> None."""
    match = re.search(r"(\d+(?:\.\d+)?)\s*GT/s", text)
    return float(match.group(1)) if match else None


def parse_link_width(text: str) -> int | None:
    """'16' -> 16; '0' or unreadable -> None."""
    try:
        width = int(text.strip())
    except ValueError:
        return None
    return width or None


def bus_chain(device_path: str | Path) -> list[str]:
    """The PCI devices on the way from the root complex to this one, root port first and the
    device last, from its resolved sysfs path."""
    return [part for part in Path(device_path).parts if BUS_ID.match(part)]


def placements_from_chains(
    chains: Mapping[int, Sequence[str]],
    link_of: Callable[[str], PcieLink | None] = lambda bus_id: None,
) -> list[GpuPlacement]:
    """Group GPUs by root port: those under one share the link below it. For a group, the
    deepest bridge above all of them names the shared link (`via`, its upstream link)."""
    # each GPU's root port; a GPU on the root bus is alone, its own root
    root = {gpu: chain[0] if len(chain) >= 2 else chain[-1] for gpu, chain in chains.items()}
    placements = []
    for gpu, chain in sorted(chains.items()):
        mates = sorted(g for g in chains if g != gpu and root[g] == root[gpu])
        via = None
        if mates:
            above = zip(*(list(chains[g])[:-1] for g in [gpu, *mates]), strict=False)
            common = [parts[0] for parts in takewhile(lambda p: len(set(p)) == 1, above)]
            via = common[-1] if common else None
        placements.append(
            GpuPlacement(
                gpu=gpu,
                bus_id=chain[-1],
                shares_with=mates,
                via=via,
                uplink=link_of(via) if via else None,
                link=link_of(chain[-1]),
            )
        )
    return placements


def placements_from_levels(
    gpus: Sequence[int], level_of: Callable[[int, int], int | None]
) -> list[GpuPlacement] | None:
    """Group GPUs by NVML's common-ancestor level; None when a pair's level is unreadable."""
    placements = []
    for gpu in gpus:
        mates = []
        for other in gpus:
            if other == gpu:
                continue
            level = level_of(gpu, other)
            if level is None:
                return None
            if level <= NVML_TOPOLOGY_MULTIPLE:
                mates.append(other)
        placements.append(GpuPlacement(gpu=gpu, shares_with=sorted(mates)))
    return placements


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def read_link(device_dir: Path) -> PcieLink | None:
    """A PCI device's link from its sysfs directory; None where the kernel does not say."""
    speed = _read(device_dir / "current_link_speed")
    width = _read(device_dir / "current_link_width")
    if speed is None and width is None:
        return None
    return PcieLink(
        speed_gts=parse_link_speed(speed or ""),
        width=parse_link_width(width or ""),
        max_speed_gts=parse_link_speed(_read(device_dir / "max_link_speed") or ""),
        max_width=parse_link_width(_read(device_dir / "max_link_width") or ""),
    )


def topology_from_sysfs(
    bus_ids: Mapping[int, str | None], devices: Path = SYSFS_PCI_DEVICES
) -> HostTopology:
    """Every GPU's place in the PCI tree under `devices` (/sys/bus/pci/devices)."""
    chains: dict[int, list[str]] = {}
    for gpu, bus_id in bus_ids.items():
        if bus_id is None:
            return HostTopology(unknown=f"sysfs: no PCI bus id for GPU {gpu}")
        entry = devices / bus_id
        if not entry.exists():
            return HostTopology(unknown=f"sysfs: {entry} does not exist")
        chain = bus_chain(entry.resolve())
        if not chain or chain[-1] != bus_id:
            return HostTopology(unknown=f"sysfs: {entry} is not in a PCI tree")
        chains[gpu] = chain
    if not chains:
        return HostTopology(unknown="sysfs: no GPU to place")
    placements = placements_from_chains(chains, lambda b: read_link(devices / b))
    return HostTopology(source="sysfs", gpus=placements)


def topology_from_nvml(state: NvmlState, nvml_index: Mapping[int, int | None]) -> HostTopology:
    """GPUs grouped by NVML's common-ancestor level (the rate of the shared link unknown)."""
    pynvml = state.module
    if not state.ok or pynvml is None:
        return HostTopology(unknown=f"NVML: {state.error}")
    found: dict[int, NvmlGpu] = {}
    for gpu, index in nvml_index.items():
        nvml_gpu = state.gpus[index] if index is not None and index < len(state.gpus) else None
        if nvml_gpu is None or nvml_gpu.handle is None:
            return HostTopology(unknown=f"NVML: no readable NVML GPU with the UUID of GPU {gpu}")
        found[gpu] = nvml_gpu
    errors: list[str] = []

    def level_of(a: int, b: int) -> int | None:
        ancestor = pynvml.nvmlDeviceGetTopologyCommonAncestor
        value, error = call(ancestor, found[a].handle, found[b].handle)
        if error is not None:
            errors.append(error)
        return int(value) if value is not None else None

    placements = placements_from_levels(sorted(found), level_of)
    if placements is None:
        why = errors[-1] if errors else "no level"
        return HostTopology(unknown=f"NVML: nvmlDeviceGetTopologyCommonAncestor: {why}")
    for placement in placements:
        placement.bus_id = normal_bus_id(found[placement.gpu].bus_id)
    if not placements:
        return HostTopology(unknown="NVML: no GPU to place")
    return HostTopology(source="nvml", gpus=placements)


def fastest(links: Iterable[PcieLink | None]) -> PcieLink | None:
    """The fastest of several reads of one link: an idle GPU drops its link to a low rate and
    trains it back up under load, so the best read during copies is what the link can do."""
    known = [link for link in links if link is not None]
    return max(known, key=lambda link: link.gbps or 0.0, default=None)


def _gpu_ids(torch: Any, ordinal: int) -> tuple[str | None, str | None]:
    """(bus id, UUID) of a CUDA ordinal; (None, None) where torch cannot describe it (an older
    torch, a GPU it cannot describe)."""
    try:
        props = torch.cuda.get_device_properties(ordinal)
        # function 0, as torch's own NUMA binding spells it
        ids = (int(props.pci_domain_id), int(props.pci_bus_id), int(props.pci_device_id))
        return "{:04x}:{:02x}:{:02x}.0".format(*ids), str(props.uuid)
    except Exception:
        return None, None


def read_gpu_link(torch: Any, ordinal: int, devices: Path = SYSFS_PCI_DEVICES) -> PcieLink | None:
    """This CUDA ordinal's own PCIe link as sysfs says now; None where it cannot be read."""
    bus_id, _ = _gpu_ids(torch, ordinal)
    return read_link(devices / bus_id) if bus_id is not None else None


def read_host_topology(torch: Any, count: int, devices: Path = SYSFS_PCI_DEVICES) -> HostTopology:
    """The CUDA ordinals 0..count-1 placed from sysfs, else from NVML (their NVML GPUs found
    by UUID), else unknown with both reasons. Never raises."""
    bus_ids: dict[int, str | None] = {}
    uuids: list[str | None] = []
    for ordinal in range(count):
        bus_ids[ordinal], uuid = _gpu_ids(torch, ordinal)
        uuids.append(uuid)
    from_sysfs = topology_from_sysfs(bus_ids, devices)
    if from_sysfs.source is not None:
        return from_sysfs
    state = probe_nvml()
    try:
        index = dict(enumerate(nvml_indices(uuids, [g.uuid for g in state.gpus])))
        from_nvml = topology_from_nvml(state, index)
    finally:
        if state.ok and state.module is not None:
            with contextlib.suppress(Exception):
                state.module.nvmlShutdown()
    if from_nvml.source is not None:
        return from_nvml
    return HostTopology(unknown=f"{from_sysfs.unknown}; {from_nvml.unknown}")
