"""Checks of the host: CPU cores, /dev/shm, open-files limit, InfiniBand, free disk."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from torchscale.contracts.host import usable_cores
from torchscale.contracts.wording.validate import gib
from torchscale.orchestration.launch.compile_cache import nearest_existing
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    failed,
    passed,
    skipped,
    warned,
)

GIB = 2**30
MIB = 2**20
SHM_WARN_BYTES = 1 * GIB  # Docker's default is 64 MiB: DataLoader workers die with "bus error"
OPEN_FILES_WARN = 4096
DISK_WARN_BYTES = 1 * GIB
DISK_FAIL_BYTES = 100 * MIB
INFINIBAND_SYSFS = Path("/sys/class/infiniband")


def check_cpu(ctx: ValidateContext) -> CheckResult:
    cores = usable_cores()
    detail = f"{cores} usable core(s) ({os.cpu_count()} online)"
    if ctx.device == "cpu" and cores < 2:
        hint = "two or more ranks will share one core: CPU-path timings are oversubscribed"
        return warned("cpu", "CPU cores", detail, hint, usable_cores=cores)
    return passed("cpu", "CPU cores", detail, usable_cores=cores, online_cores=os.cpu_count())


def check_shm(ctx: ValidateContext, path: Path = Path("/dev/shm")) -> CheckResult:  # noqa: S108
    title = "/dev/shm size"  # noqa: S108
    if not path.exists():
        return skipped("shm", title, f"{path} does not exist on this platform")
    stats = os.statvfs(path)
    total = stats.f_frsize * stats.f_blocks
    free = stats.f_frsize * stats.f_bavail
    detail = f"{gib(total)} ({gib(free)} free)"
    data = {"total_bytes": total, "free_bytes": free}
    if total < SHM_WARN_BYTES:
        hint = (
            "DataLoader workers and NCCL's shared-memory transport need more: start "
            "the container with --shm-size=16g or --ipc=host"
        )
        below = f"{detail}; below {gib(SHM_WARN_BYTES, 0)}"
        return warned("shm", title, below, hint, **data)
    return passed("shm", title, detail, **data)


def check_open_files(ctx: ValidateContext) -> CheckResult:
    title = "Open-files limit"
    try:
        import resource
    except ImportError:
        return skipped("open_files", title, "resource limits are not available on this platform")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def show(n: int) -> str:
        return "unlimited" if n == resource.RLIM_INFINITY else str(n)

    detail = f"soft {show(soft)}, hard {show(hard)}"
    if soft != resource.RLIM_INFINITY and soft < OPEN_FILES_WARN:
        hint = (
            f"raise it (`ulimit -n 65536`): DataLoader workers sharing tensors and many "
            f"ranks per node exhaust {soft} descriptors"
        )
        return warned("open_files", title, detail, hint, soft=soft, hard=hard)
    return passed("open_files", title, detail, soft=soft, hard=hard)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return "?"


def check_infiniband(ctx: ValidateContext, root: Path = INFINIBAND_SYSFS) -> CheckResult:
    title = "InfiniBand / RoCE"
    devices = sorted(root.iterdir()) if root.is_dir() else []
    if not devices:
        return skipped(
            "infiniband",
            title,
            "no RDMA devices: fine on one node; across nodes NCCL falls back to TCP "
            "sockets, far slower than InfiniBand/RoCE",
        )
    ports: dict[str, dict[str, str]] = {}
    for dev in devices:
        for port in sorted((dev / "ports").glob("*")):
            facts = ("state", "rate", "link_layer")
            ports[f"{dev.name}/{port.name}"] = {fact: _read(port / fact) for fact in facts}
    active = [name for name, p in ports.items() if "ACTIVE" in p["state"]]
    detail = (
        "; ".join(f"{n}: {p['state']}, {p['rate']}, {p['link_layer']}" for n, p in ports.items())
        or "devices without ports"
    )
    if not active:
        hint = "no port is ACTIVE: check cabling and the subnet manager (`ibstat`)"
        return warned("infiniband", title, detail, hint, ports=ports)
    return passed("infiniband", title, detail, ports=ports)


def check_disk(ctx: ValidateContext) -> CheckResult:
    title = "Free disk at output dir"
    where = nearest_existing(ctx.output_dir.resolve())
    usage = shutil.disk_usage(where)
    detail = f"{gib(usage.free)} free at {where}"
    data = {"path": str(where), "free_bytes": usage.free}
    hint = "free space or choose another --output-dir: results, logs and traces are written there"
    if usage.free < DISK_FAIL_BYTES:
        return failed("disk", title, detail, hint, **data)
    if usage.free < DISK_WARN_BYTES:
        return warned("disk", title, detail, hint + " (profiler traces take 100s of MB)", **data)
    return passed("disk", title, detail, **data)
