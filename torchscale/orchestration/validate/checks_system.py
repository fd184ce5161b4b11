"""Checks of the host: CPU cores, /dev/shm, open-files limit, InfiniBand, free disk."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.host import usable_cores
from torchscale.contracts.wording.spell import GIB, MIB
from torchscale.orchestration.launch.compile_cache import nearest_existing
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    failed,
    passed,
    skipped,
    warned,
)

SHM_WARN_BYTES = 1 * GIB  # Docker's default is 64 MiB: DataLoader workers die with "bus error"
OPEN_FILES_WARN = 4096
DISK_WARN_BYTES = 1 * GIB
DISK_FAIL_BYTES = 100 * MIB
INFINIBAND_SYSFS = Path("/sys/class/infiniband")


def check_cpu(ctx: ValidateContext) -> CheckResult:
    cores, online = usable_cores(), os.cpu_count()
    found = Finding(code="host.cores", figures={"usable": cores, "online": online})
    if ctx.device == "cpu" and cores < 2:
        fix = Finding(code="host.fix_one_core")
        return warned("cpu", "CPU cores", found, fix, usable_cores=cores)
    return passed("cpu", "CPU cores", found, usable_cores=cores, online_cores=online)


def check_shm(ctx: ValidateContext, path: Path = Path("/dev/shm")) -> CheckResult:  # noqa: S108
    title = "/dev/shm size"  # noqa: S108
    if not path.exists():
        return skipped("shm", title, Finding(code="host.no_shm", figures={"path": str(path)}))
    stats = os.statvfs(path)
    total = stats.f_frsize * stats.f_blocks
    free = stats.f_frsize * stats.f_bavail
    data = {"total_bytes": total, "free_bytes": free}
    if total < SHM_WARN_BYTES:
        small = Finding(code="host.shm", figures=data | {"below_bytes": SHM_WARN_BYTES})
        return warned("shm", title, small, Finding(code="host.fix_shm"), **data)
    return passed("shm", title, Finding(code="host.shm", figures=data), **data)


def check_open_files(ctx: ValidateContext) -> CheckResult:
    title = "Open-files limit"
    try:
        import resource
    except ImportError:
        return skipped("open_files", title, Finding(code="host.no_rlimits"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def shown(n: int) -> int | None:
        return None if n == resource.RLIM_INFINITY else n

    limits = Finding(code="host.open_files", figures={"soft": shown(soft), "hard": shown(hard)})
    if soft != resource.RLIM_INFINITY and soft < OPEN_FILES_WARN:
        fix = Finding(code="host.fix_open_files", figures={"soft": soft})
        return warned("open_files", title, limits, fix, soft=soft, hard=hard)
    return passed("open_files", title, limits, soft=soft, hard=hard)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return "?"


def check_infiniband(ctx: ValidateContext, root: Path = INFINIBAND_SYSFS) -> CheckResult:
    title = "InfiniBand / RoCE"
    devices = sorted(root.iterdir()) if root.is_dir() else []
    if not devices:
        return skipped("infiniband", title, Finding(code="host.no_rdma"))
    ports: dict[str, dict[str, str]] = {}
    for dev in devices:
        for port in sorted((dev / "ports").glob("*")):
            facts = ("state", "rate", "link_layer")
            ports[f"{dev.name}/{port.name}"] = {fact: _read(port / fact) for fact in facts}
    active = [name for name, p in ports.items() if "ACTIVE" in p["state"]]
    found = Finding(code="host.rdma_ports", figures={"ports": ports})
    if not active:
        fix = Finding(code="host.fix_no_active_port")
        return warned("infiniband", title, found, fix, ports=ports)
    return passed("infiniband", title, found, ports=ports)


def check_disk(ctx: ValidateContext) -> CheckResult:
    title = "Free disk at output dir"
    where = nearest_existing(ctx.output_dir.resolve())
    usage = shutil.disk_usage(where)
    data = {"path": str(where), "free_bytes": usage.free}
    found = Finding(code="host.disk_free", figures=data)
    if usage.free < DISK_FAIL_BYTES:
        return failed("disk", title, found, Finding(code="host.fix_disk"), **data)
    if usage.free < DISK_WARN_BYTES:
        fix = Finding(code="host.fix_disk", figures={"traces": True})
        return warned("disk", title, found, fix, **data)
    return passed("disk", title, found, **data)
