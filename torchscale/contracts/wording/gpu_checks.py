"""Words for the findings of validate's GPU checks: NVLink, fabric, peer access, what a node's
GPUs agree on, and the verdict sentence's basis. A GPU is named by its NVML index here; its UUID
and serial are figures of the finding, shown beside it by `validate -v` and in the JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscale.contracts.wording import Phrases

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


def _ready(f: F) -> str:
    text = f"This node is ready for {f['path']} distributed training."
    return text + _tail(f)


def _ready_one_gpu(f: F) -> str:
    text = (
        f"This GPU is ready for single-GPU training; distributed training across GPUs is not "
        f"proven: one GPU, so not checked: {', '.join(f['unchecked'])}."
    )
    return text + _tail(f)


def _tail(f: F) -> str:
    text = " (--quick: the live smoke test was not run.)" if f.get("quick") else ""
    if f.get("warns"):
        text += " Worth a look: " + ", ".join(f["warns"]) + "."
    return text


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
    "gpus.not_readable": "GPU {gpu}: {what} not readable ({error}): not judged",
    "gpus.xid_not_read": (
        "Xid errors are not readable through NVML: look in the {where} (dmesg | grep Xid)"
    ),
    "fabric.registered": lambda f: f"{_gpus(f['gpus'])} registered in the NVLink fabric",
    "fabric.not_registered": "GPU {gpu}: fabric registration {state} (status {status})",
    "fabric.not_on_fabric": lambda f: (
        f"{_gpus(f['gpus'])}: on no NVLink fabric (no NVSwitch, or before Hopper)"
    ),
    "p2p.peer_access": _peer_access,
    "p2p.pcie_only": _pcie_only,
    "gpus.setting_not_readable": lambda f: (
        f"{SETTING_NAMES.get(f['setting'], f['setting'])} not readable on "
        f"{_gpus(f['gpus'])} ({f['error']}): not compared"
    ),
    "gpus.setting_differs": _setting_differs,
    "gpus.settings_agree": _settings_agree,
    "gpus.one_driver": "driver {driver} (one per node)",
    "gpus.one_to_compare": "{gpus} GPU readable: nothing to compare",
    "validate.ready": _ready,
    "validate.ready_one_gpu": _ready_one_gpu,
    "validate.not_ready": "This node is NOT ready for distributed training: {failed:list} failed.",
}
