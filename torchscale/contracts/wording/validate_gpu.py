"""Words for a validate report's GPU checks (`checks[]` `nvlink`, `fabric`,
`p2p`, `gpus`, `ecc`, `persistence`, `throttle`, `host_links`: each finding and, beside it, its
fix)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases, say

# Words for the findings of validate's GPU checks: NVLink, fabric, peer access, what a node's
# GPUs agree on, and the verdict sentence's basis. A GPU is named by its NVML index here; its UUID
# and serial are figures of the finding, shown beside it by `validate -v` and in the JSON.

F = Mapping[str, Any]

SETTING_NAMES = {
    "vbios": "VBIOS",
    "ecc_mode": "ECC mode",
    "mig_mode": "MIG mode",
    "power_limit_w": "power limit (W)",
    "app_clock_sm_mhz": "application SM clock (MHz)",
    "app_clock_mem_mhz": "application memory clock (MHz)",
}

COUNTER_NAMES = {
    "replay": "replay",
    "recovery": "recovery",
    "crc_flit": "CRC flit",
    "crc_data": "CRC data",
}


def _gpus(indices: Sequence[int]) -> str:
    return ("GPU " if len(indices) == 1 else "GPUs ") + ", ".join(map(str, indices))


def _links(numbers: Sequence[int]) -> str:
    return ("link " if len(numbers) == 1 else "links ") + ", ".join(map(str, numbers))


def _ordinal_links(rows: Sequence[Sequence[Any]] | None) -> str:
    if rows is None:
        return "state unknown"
    parts = []
    for ordinal, index, active in rows:
        if index is None:
            parts.append(f"cuda:{ordinal}: unknown (no NVML GPU with its UUID)")
        elif active is None:
            parts.append(f"cuda:{ordinal} (NVML {index}): unknown (NVML cannot read it)")
        else:
            parts.append(f"cuda:{ordinal} (NVML {index}): {active} active")
    return ", ".join(parts)


def _peer_access(f: F) -> str:
    text = f"peer access {f['with_access']}/{f['pairs']} pairs"
    if f["over_nvlink"] is not None:
        text += f" ({f['over_nvlink']} over NVLink)"
    text += f"; NVLink {_ordinal_links(f['links'])}"
    if f["missing"]:
        text += f"; no peer access: {', '.join(f['missing'])}"
    return text


def _pcie_only(f: F) -> str:
    pairs = ", ".join(f"{a}-{b}" for a, b in f["pairs"])
    return (
        f"peer access not over NVLink on an {f['sku']} board (PCIe or none) between GPUs "
        f"{pairs}: {_gpus(f['gpus'])} named"
    )


def _errors(f: F) -> str:
    counts = ", ".join(f"{f[k]} {name}" for k, name in COUNTER_NAMES.items() if f.get(k))
    return f"GPU {f['gpu']} NVLink {f['link']}: {counts} error(s) since the driver loaded"


def _setting_differs(f: F) -> str:
    name = SETTING_NAMES.get(f["setting"], f["setting"])
    odd = ", ".join(f"GPU {g}: {v}" for g, v in zip(f["gpus"], f["values"], strict=True))
    return f"{name} differs: {odd}; {f['usual']} on {_gpus(f['usual_gpus'])}"


def _settings_agree(f: F) -> str:
    values = ", ".join(f"{SETTING_NAMES.get(k, k)} {v}" for k, v in f["settings"].items())
    return f"{f['gpus']} GPUs agree: {values}"


# How to fix what validate's GPU checks found (NVLink, fabric, peer access, settings that
# differ), and validate's own failures (a crashed check, a stopped run, a launch that wrote
# nothing).

# Words for validate's per-GPU health checks read through NVML (orchestration/validate/
# checks_gpu.py): ECC and retired memory, persistence mode, clock throttling at idle.

ECC_PROBLEMS = {
    "uncorrected": "{n} uncorrected ECC error(s) since boot",
    "retirement_pending": "page retirement pending (reboot needed)",
    "remap_failed": "row remapping failed (replace the GPU)",
    "remap_pending": "row remapping pending (reset the GPU)",
}


def _ecc(f: F) -> str:
    return "; ".join(
        f"GPU{gpu}: " + ECC_PROBLEMS[problem].format(n=count) for gpu, problem, count in f["bad"]
    )


def _unknown(errors: Mapping[str, Any]) -> str:
    by_error: dict[str, list[str]] = {}
    for gpu, error in errors.items():
        by_error.setdefault(error, []).append(f"GPU{gpu}")
    return "; ".join(f"{', '.join(gpus)}: {e}" for e, gpus in by_error.items())


def _slowdown(f: F) -> str:
    text = "; ".join(f"GPU{i}: {', '.join(rs)}" for i, rs in f["slowing"].items())
    if f["errors"]:
        text += f"; unreadable: {_unknown(f['errors'])}"
    return f"hardware or thermal slowdown set on an idle GPU: {text}"


# Words for validate's host<->device copies (orchestration/validate/host_links.py judges):
# a GPU's PCIe link and what it shares, every GPU copying at once. A link is figures:
# {"text": 'Gen5 x16', "max": 'Gen5 x16', "gbps": 64.0 or None}.


def _rate(link: F) -> str:
    gbps = link.get("gbps")
    return str(link["text"]) + (f", {gbps:.3g} GB/s per direction" if gbps is not None else "")


def _own(f: F) -> str:
    own = f" ({_rate(f['link'])})" if f.get("link") else ""
    return f"its PCIe link to the host is its own{own} ({f['source']})"


def _shared(f: F) -> str:
    text = f"shares its PCIe link to the host with {_gpus(f['with'])}"
    uplink, sharing = f.get("uplink"), len(f["with"]) + 1
    if uplink is not None and uplink.get("gbps") is not None:
        each = uplink["gbps"] / sharing
        text += (
            f": the uplink above {f['via']} ({_rate(uplink)}) split {sharing} ways is "
            f"{each:.3g} GB/s each"
        )
    elif f.get("via"):
        text += f" (the uplink above {f['via']}; its rate unreadable)"
    return text + f" ({f['source']})"


def _placement(f: F) -> str:
    placement = f.get("placement")
    if placement is None:
        return ""
    return say(Finding.model_validate(placement))


def _link_below(f: F) -> str:
    text = f"link trained {f['link']['text']}, below its {f['link']['max']}"
    if f["while_copying"]:
        return text + ", read while copying"
    return text + " (read at idle: may be the GPU's PCIe power saving, not the cause)"


PHRASES: Phrases = {
    "nvlink.links_full": lambda f: (
        f"every link active on {_gpus(f['gpus'])} "
        f"({' or '.join(map(str, f['links']))} per GPU, as the SKU has)"
    ),
    "nvlink.links_down": lambda f: (
        f"GPU {f['gpu']}: {f['active']} of {f['expected']} NVLink links active on an "
        f"{f['sku']}; {_links(f['down'])} not active"
    ),
    "nvlink.not_judged": (
        "GPU {gpu} ({name}): {active} NVLink links active, no cited link count for this model to "
        "judge them by"
    ),
    "nvlink.old_generation": lambda f: (
        f"GPU {f['gpu']}: {_links(f['links'])} below NVLink {f['expected']}, the {f['sku']}'s "
        "generation"
    ),
    "nvlink.errors": _errors,
    "nvlink.speed_differs": "GPU {gpu}: links at {speed_mbps} MB/s, its peers at {peers_mbps} MB/s",
    "nvlink.fix_links": (
        "a GPU with links down runs every collective at a fraction of NVLink's rate: check "
        "`nvidia-smi nvlink -s -i N`, reseat or RMA the GPU (or its baseboard) with its serial"
    ),
    "nvlink.fix_errors": (
        "a link whose errors grow under load is failing: check `nvidia-smi nvlink -e -i N` "
        "again after a load, then reseat or RMA the GPU (or its baseboard) with its serial"
    ),
    "nvlink.errors_rose": lambda f: (
        f"GPU {f['gpu']} NVLink {f['link']}: "
        + ", ".join(f"+{f[k]} {name}" for k, name in COUNTER_NAMES.items() if f.get(k))
        + f" error(s) while validate loaded the links ({', '.join(f['during'])})"
    ),
    "nvlink.errors_steady": lambda f: (
        f"no NVLink error counter rose while validate loaded the links ({', '.join(f['during'])})"
    ),
    "nvlink.errors_not_loaded": (
        "not judged: nothing loaded the links between the two readings (--quick runs no smoke "
        "test); counts since the driver loaded are context, in NVLink links"
    ),
    "gpus.not_readable": "GPU {gpu}: {what} not readable ({error}): not judged",
    "gpus.xid_not_read": (
        "Xid errors are not readable through NVML: look in the {where} (dmesg | grep Xid)"
    ),
    "gpus.setting_not_readable": lambda f: (
        f"{SETTING_NAMES.get(f['setting'], f['setting'])} not readable on "
        f"{_gpus(f['gpus'])} ({f['error']}): not compared"
    ),
    "gpus.setting_differs": _setting_differs,
    "gpus.settings_agree": _settings_agree,
    "gpus.one_driver": "driver {driver} (one per node)",
    "gpus.one_to_compare": "{gpus} GPU readable: nothing to compare",
    "gpus.fix_settings": (
        "set the odd GPU like the others (nvidia-smi -pl for the power limit, -ac / -rac for "
        "application clocks, -mig 0 for MIG, -e for ECC, each followed by a GPU reset); a VBIOS "
        "that differs is the vendor's to update"
    ),
    "gpus.cpu_path": "--device cpu: GPU checks are not run",
    "gpus.none_visible": "no GPU visible",
    "fabric.registered": lambda f: f"{_gpus(f['gpus'])} registered in the NVLink fabric",
    "fabric.not_registered": "GPU {gpu}: fabric registration {state} (status {status})",
    "fabric.not_on_fabric": lambda f: (
        f"{_gpus(f['gpus'])}: on no NVLink fabric (no NVSwitch, or before Hopper)"
    ),
    "fabric.fix": (
        "start the fabric manager (`systemctl start nvidia-fabricmanager`; its version must be "
        "the driver's) and wait until every GPU is registered; a failed registration is in "
        "/var/log/fabricmanager.log"
    ),
    "p2p.peer_access": _peer_access,
    "p2p.pcie_only": _pcie_only,
    "p2p.fix_no_peer": (
        "without P2P, NCCL copies through host memory: check `nvidia-smi topo -m`, IOMMU/ACS "
        "settings, or NCCL_P2P_DISABLE"
    ),
    "p2p.fix_pcie": (
        "on an SXM board peer traffic belongs on NVLink: check `nvidia-smi topo -m` (NV# between "
        "the GPUs), `nvidia-smi nvlink -s` and the fabric manager; PCIe carries a fraction of it"
    ),
    "p2p.too_few_gpus": "needs >= 2 GPUs usable by torch (found {count})",
    "ecc.problems": _ecc,
    "ecc.fix": (
        "drain the node: reset/reboot for pending retirement or remapping, RMA the GPU on "
        "remapping failure or recurring uncorrected errors"
    ),
    "ecc.not_supported": "ECC not supported or disabled on these GPUs",
    "ecc.clean": "no uncorrected ECC errors, no pending retirement/remapping",
    "persistence.off": lambda f: "disabled on GPU " + ", ".join(map(str, f["gpus"])),
    "persistence.fix": (
        "enable it (`sudo nvidia-smi -pm 1` or nvidia-persistenced) so the driver does not "
        "re-initialise the GPUs at every process start"
    ),
    "persistence.not_queryable": "not queryable on these GPUs",
    "persistence.on": "enabled on every GPU",
    "throttle.idle_slowdown": _slowdown,
    "throttle.fix_slowdown": (
        "check cooling and the hardware (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`); a "
        "throttling GPU becomes the straggler every rank waits for"
    ),
    "throttle.unreadable": lambda f: f"clock reasons unreadable: {_unknown(f['errors'])}",
    "throttle.fix_unreadable": (
        "NVML cannot say whether these GPUs throttle: check `nvidia-smi -q -d PERFORMANCE` by "
        "hand, and the driver (`nvidia-smi`) if it fails too"
    ),
    "throttle.idle_clean": (
        "read once with the GPUs idle: no hardware or thermal slowdown set (throttling under "
        "load is judged from each cell's telemetry)"
    ),
    "host.topology_unknown": "topology unknown ({why})",
    "host.own_link": _own,
    "host.shared_link": _shared,
    "host.all_at_once": lambda f: (
        f"{f['gpus_at_once']} GPUs copying at once, {f['total_gbps']:.3g} GB/s together; "
        + _placement(f)
    ),
    "host.link_below": _link_below,
}
