"""How many NVLink links a GPU of an SXM SKU has, and their generation, with the source of each
figure (docs/validate.md, 'NVLink links and peer access'). Only SXM boards are listed: their
links are soldered to the baseboard (to NVSwitch chips on HGX), so every one is active on a
healthy node. PCIe cards (H100 PCIe, H100 NVL, H200 NVL, A100 PCIe) are left out: their
links depend on the bridges fitted, for which no per-SKU count could be cited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchscale.contracts.gpu_peaks import MIG

NVLINK_PAGE = "https://www.nvidia.com/en-us/data-center/nvlink/"
HGX_PAGE = "https://www.nvidia.com/en-us/data-center/hgx/"
H200_PAGE = "https://www.nvidia.com/en-us/data-center/h200/"


@dataclass(frozen=True)
class NvlinkSku:
    """One SXM SKU: its links, their NVLink generation as NVML numbers it
    (NVML_NVLINK_VERSION_*: 4 is 3.0, 6 is 4.0, 7 is 5.0) and where the count comes from."""

    model: str
    pattern: str  # searched in the NVML device name
    links: int
    generation: str  # '4.0'
    nvml_version: int
    source: str


NVLINK_SKUS: tuple[NvlinkSku, ...] = (
    NvlinkSku("H100 SXM", r"\bH100\b(?!.*\b(PCIe|NVL)\b)", 18, "4.0", 6,
              f"{HGX_PAGE}: HGX H100, 18 NVLink connections per GPU, 900 GB/s (fourth generation)"),
    NvlinkSku("H200 SXM", r"\bH200\b(?!.*\b(PCIe|NVL)\b)", 18, "4.0", 6,
              f"{H200_PAGE}: NVLink 900 GB/s; fourth generation carries 50 GB/s per link, so 18"),
    NvlinkSku("A100 SXM", r"\bA100\b.*\bSXM", 12, "3.0", 4,
              f"{NVLINK_PAGE}: A100 supports up to 12 third-generation NVLink connections, "
              "600 GB/s"),
    NvlinkSku("B200", r"\bB200\b", 18, "5.0", 7,
              f"{NVLINK_PAGE}: a Blackwell GPU supports up to 18 NVLink 100 GB/s connections, "
              "1.8 TB/s (fifth generation)"),
)  # fmt: skip


def nvlink_sku(device_name: str) -> NvlinkSku | None:
    """The SXM SKU a device name reads as (first match), or None: a PCIe card, a MIG slice or
    a GPU with no cited link count."""
    if MIG.search(device_name):
        return None
    return next((s for s in NVLINK_SKUS if re.search(s.pattern, device_name)), None)
