"""Words for validate's checks of the host (orchestration/validate/checks_system.py): CPU
cores, /dev/shm, the open-files limit, InfiniBand ports, free disk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import gib

F = Mapping[str, Any]


def _shm(f: F) -> str:
    text = f"{gib(f['total_bytes'], 1)} ({gib(f['free_bytes'], 1)} free)"
    below = f.get("below_bytes")
    return text + (f"; below {gib(below)}" if below else "")


def _limit(n: int | None) -> str:
    return "unlimited" if n is None else str(n)


def _ports(f: F) -> str:
    ports = f["ports"]
    said = "; ".join(f"{n}: {p['state']}, {p['rate']}, {p['link_layer']}" for n, p in ports.items())
    return said or "devices without ports"


PHRASES: Phrases = {
    "host.cores": "{usable} usable core(s) ({online} online)",
    "host.fix_one_core": (
        "two or more ranks will share one core: CPU-path timings are oversubscribed"
    ),
    "host.no_shm": "{path} does not exist on this platform",
    "host.shm": _shm,
    "host.fix_shm": (
        "DataLoader workers and NCCL's shared-memory transport need more: start the container "
        "with --shm-size=16g or --ipc=host"
    ),
    "host.no_rlimits": "resource limits are not available on this platform",
    "host.open_files": lambda f: f"soft {_limit(f['soft'])}, hard {_limit(f['hard'])}",
    "host.fix_open_files": (
        "raise it (`ulimit -n 65536`): DataLoader workers sharing tensors and many ranks per "
        "node exhaust {soft} descriptors"
    ),
    "host.no_rdma": (
        "no RDMA devices: fine on one node; across nodes NCCL falls back to TCP sockets, far "
        "slower than InfiniBand/RoCE"
    ),
    "host.rdma_ports": _ports,
    "host.fix_no_active_port": "no port is ACTIVE: check cabling and the subnet manager (`ibstat`)",
    "host.disk_free": lambda f: f"{gib(f['free_bytes'], 1)} free at {f['path']}",
    "host.fix_disk": lambda f: (
        "free space or choose another --output-dir: results, logs and traces are written there"
        + (" (profiler traces take 100s of MB)" if f.get("traces") else "")
    ),
}
