"""How to fix what validate's GPU checks found (NVLink, fabric, peer access, settings that
differ), and validate's own failures (a crashed check, a stopped run, a launch that wrote
nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]

PHRASES: Phrases = {
    "nvlink.fix_links": (
        "a GPU with links down runs every collective at a fraction of NVLink's rate: check "
        "`nvidia-smi nvlink -s -i N`, reseat or RMA the GPU (or its baseboard) with its serial"
    ),
    "nvlink.fix_errors": (
        "the counters count since the driver loaded: read them again after a load (`nvidia-smi "
        "nvlink -e`); a link whose errors grow under load is a reseat or RMA"
    ),
    "fabric.fix": (
        "start the fabric manager (`systemctl start nvidia-fabricmanager`; its version must be "
        "the driver's) and wait until every GPU is registered; a failed registration is in "
        "/var/log/fabricmanager.log"
    ),
    "p2p.fix_no_peer": (
        "without P2P, NCCL copies through host memory: check `nvidia-smi topo -m`, IOMMU/ACS "
        "settings, or NCCL_P2P_DISABLE"
    ),
    "p2p.fix_pcie": (
        "on an SXM board peer traffic belongs on NVLink: check `nvidia-smi topo -m` (NV# between "
        "the GPUs), `nvidia-smi nvlink -s` and the fabric manager; PCIe carries a fraction of it"
    ),
    "p2p.too_few_gpus": "needs >= 2 GPUs usable by torch (found {count})",
    "gpus.fix_settings": (
        "set the odd GPU like the others (nvidia-smi -pl for the power limit, -ac / -rac for "
        "application clocks, -mig 0 for MIG, -e for ECC, each followed by a GPU reset); a VBIOS "
        "that differs is the vendor's to update"
    ),
    "gpus.cpu_path": "--device cpu: GPU checks are not run",
    "validate.crashed": "{what}: {error} ({file}:{line})",
    "validate.fix_report_bug": lambda f: (
        "please report this as a torchscale bug"
        + (", with `torchscale validate --json`" if f.get("with_json") else "")
    ),
    "validate.smoke_not_run": "could not run: {error}",
    "validate.stopped": lambda f: (
        f"{f['why']}; kept: {', '.join(f['phases']) or 'every phase'} in {f['folder']}"
    ),
    "validate.fix_run_again": "run it again for every figure",
    "validate.needs_torch": "needs torch",
    "validate.perf_no_gpu": "needs a CUDA GPU, and torch sees none",
    "validate.fix_perf_cpu": (
        "`torchscale validate --device cpu --level perf` measures the CPU path"
    ),
    "validate.wrote_nothing": "the {ranks} ranks wrote nothing: {why}",
    "validate.fix_rank_logs": "each rank's log is under {where}",
}
