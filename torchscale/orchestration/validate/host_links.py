"""Host<->device copies judged against the right bar (docs/validate.md, 'Host links and the
PCIe topology'): a GPU copying alone (`h2d`, `d2h`) against its own PCIe link's rate, naming a
link trained below its maximum on a low row; every GPU at once (`h2d.all`, `d2h.all`) reported
(INFO) beside the topology (contracts/pcie_topology.py), since GPUs behind one switch split its
uplink: a healthy HGX GPU gets about half its link, what the board gives, not a fault.

Pure functions over a perf run's figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from torchscale.contracts.finding import Finding
from torchscale.contracts.pcie_topology import GpuPlacement, HostTopology, PcieLink
from torchscale.contracts.schema.perf import BandwidthResult
from torchscale.contracts.wording.validate_measured import all_of
from torchscale.orchestration.validate.check_result import CheckStatus, Measurement, not_measured

ALONE_CHECKS = ("h2d", "d2h")
ALL_AT_ONCE_CHECKS = ("h2d.all", "d2h.all")
TITLES = {
    "h2d": "host to device",
    "d2h": "device to host",
    "h2d.all": "host to device, all GPUs at once",
    "d2h.all": "device to host, all GPUs at once",
}


def link_figures(link: PcieLink) -> dict[str, object]:
    """A link as the figures its words need."""
    return {"text": link.text(), "max": link.max_text(), "gbps": link.gbps}


def placement_text(
    placement: GpuPlacement | None, topology: HostTopology | None, own_link: PcieLink | None = None
) -> Finding:
    """Why this GPU's all-at-once figure is what it is, in the topology's terms. `own_link`:
    the GPU's link as read while it copied, before the topology's idle reading."""
    if topology is None or topology.source is None or placement is None:
        why = topology.unknown if topology is not None and topology.unknown else "not read"
        return Finding(code="host.topology_unknown", figures={"why": why})
    if not placement.shares_with:
        link = own_link or placement.link
        own = {"link": link_figures(link) if link is not None else None}
        return Finding(code="host.own_link", figures=own | {"source": topology.source})
    uplink = placement.uplink
    figures: dict[str, object] = {
        "with": list(placement.shares_with),
        "via": placement.via,
        "uplink": link_figures(uplink) if uplink is not None else None,
        "source": topology.source,
    }
    return Finding(code="host.shared_link", figures=figures)


def link_evidence(
    link: PcieLink | None, while_copying: bool, status: CheckStatus
) -> Finding | None:
    """'link trained Gen4 x16, below its Gen5 x16': why a lone copy is slow, where sysfs says;
    on a WARN or FAIL row only. Read while the GPU copied, the rate is what the link trained
    to. Read at idle it may be the GPU's power saving (an idle GPU drops its link, often to
    Gen1, and trains it back up under load), so it is named as a possibility: on every row
    of a healthy board it would read as a fault."""
    if link is None or not link.below_max or status not in (CheckStatus.WARN, CheckStatus.FAIL):
        return None
    figures = {"link": link_figures(link), "while_copying": while_copying}
    return Finding(code="host.link_below", figures=figures)


def annotate_alone(
    row: Measurement, topology: HostTopology | None, while_copying: PcieLink | None = None
) -> Measurement:
    """A judged lone-copy row with its GPU's link: the one read while it copied, else the
    topology's (read at idle); a link below its maximum named on a WARN or FAIL row."""
    placement = topology.of(row.gpu) if topology is not None and row.gpu is not None else None
    link = while_copying or (placement.link if placement is not None else None)
    row.data["gpus_at_once"] = 1
    if link is not None:
        row.data["link"] = link.text()
        row.data["link_max"] = link.max_text()
        row.data["link_read"] = "while copying" if while_copying is not None else "at idle"
    evidence = link_evidence(link, while_copying is not None, row.status)
    if evidence is not None and row.finding is not None:
        row.finding = Finding(code="validate.all", figures=all_of([row.finding, evidence]))
    return row


def all_at_once_row(
    result: BandwidthResult,
    gpu: int | None,
    everyone: Sequence[BandwidthResult],
    alone: BandwidthResult | None,
    topology: HostTopology | None,
) -> Measurement:
    """One GPU's figure with every GPU copying at once: INFO, beside the node's total and the
    topology that explains it. `everyone`: every GPU's figure of this check."""
    title = TITLES.get(result.check, result.check)
    row = partial(Measurement, check=result.check, title=title, gpu=gpu, unit="GB/s")
    if result.gbps is None:
        return row(value=None, status=CheckStatus.SKIP, finding=not_measured(result.unavailable))
    total = sum(r.gbps for r in everyone if r.gbps is not None)
    placement = topology.of(gpu) if topology is not None and gpu is not None else None
    figures = {"gpus_at_once": result.gpus_at_once, "total_gbps": total}
    placed = placement_text(placement, topology, alone.link if alone is not None else None)
    finding = Finding(code="host.all_at_once", figures=figures | {"placement": placed.model_dump()})
    data: dict[str, object] = {
        "gpus_at_once": result.gpus_at_once,
        "node_total_gbps": round(total, 3),
        "topology_source": topology.source if topology is not None else None,
    }
    if alone is not None and alone.gbps:
        data["alone_gbps"] = alone.gbps
        data["share_of_alone"] = round(result.gbps / alone.gbps, 3)
    if placement is not None:
        data["shares_with"] = list(placement.shares_with)
        if placement.uplink is not None:
            data["uplink"] = placement.uplink.text()
    return row(value=result.gbps, status=CheckStatus.INFO, finding=finding, data=data)
