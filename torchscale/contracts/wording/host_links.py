"""Words for validate's host<->device copies (orchestration/validate/host_links.py judges):
a GPU's PCIe link and what it shares, every GPU copying at once. A link is figures:
{"text": 'Gen5 x16', "max": 'Gen5 x16', "gbps": 64.0 or None}."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases, say

F = Mapping[str, Any]


def _gpus(gpus: Sequence[int]) -> str:
    names = ", ".join(str(g) for g in gpus)
    return f"GPU {names}" if len(gpus) == 1 else f"GPUs {names}"


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
    "host.topology_unknown": "topology unknown ({why})",
    "host.own_link": _own,
    "host.shared_link": _shared,
    "host.all_at_once": lambda f: (
        f"{f['gpus_at_once']} GPUs copying at once, {f['total_gbps']:.3g} GB/s together; "
        + _placement(f)
    ),
    "host.link_below": _link_below,
}
