"""Words for a validate report's host and software checks (`checks[]`
`host`, `cuda`, `gpus` (inventory), `driver`, `software`, `compile`: findings and fixes, and a
compile verdict kept in the cache)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import gib, limit_s, whole_s

# Words for validate's checks of the host (orchestration/validate/checks_system.py): CPU
# cores, /dev/shm, the open-files limit, InfiniBand ports, free disk.

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


# Words for validate's CUDA and GPU inventory checks (orchestration/validate/checks_gpu.py):
# torch's CUDA, the GPUs NVML (or torch) lists, the driver, the runtime against the driver.


def _describe(gpu: Mapping[str, Any]) -> str:
    memory = gpu.get("memory_total_bytes")
    size = gib(memory) if memory else "? GiB"
    return f"{gpu['index']}: {gpu['name']} {size} sm_{gpu.get('compute_capability', '?')}"


def _compat(f: F) -> str:
    text = f"torch built with CUDA {f['runtime']}; driver supports up to {f['driver']}"
    return text + (" (minor-version compatibility mode)" if f["verdict"] == "minor" else "")


# Words for validate's checks of the software stack (orchestration/validate/checks_software.py):
# Python, the PyTorch build, gloo, NCCL, torchrun, Nsight Systems, the environment.

INSTALL_TORCH = "install PyTorch >= {need}"


def _env(f: F) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in f["variables"].items())
    return shown or "no NCCL_*/CUDA_*/OMP_* set"


def _env_problems(f: F) -> str:
    problems = []
    if f.get("hides_gpus"):
        problems.append("CUDA_VISIBLE_DEVICES hides every GPU")
    if f.get("disabled"):
        problems.append("transport(s) switched off: " + ", ".join(f["disabled"]))
    if f.get("inherited"):
        problems.append("inherited launcher variables: " + ", ".join(f["inherited"]))
    return "; ".join(problems) + f" ({_env(f)})"


def _env_fix(f: F) -> str:
    fixes = []
    if f.get("hides_gpus"):
        fixes.append("unset CUDA_VISIBLE_DEVICES")
    if f.get("disabled"):
        fixes.append("unset them unless you are debugging: they force slower NCCL paths")
    if f.get("inherited"):
        fixes.append(
            "they belong to another launch; torchscale strips them from its cells, "
            "but your own scripts would join the wrong rendezvous"
        )
    return "; ".join(fixes)


# Words for the compile toolchain check (orchestration/validate/compile_toolchain.py): what
# the compile probe found, how to fix it, and a PASS kept in the verdict cache (stored as codes
# and figures).

COMPILE_OFF = "or set training.compile: false"


def _what(f: F) -> str:
    return "a C++ kernel (inductor)" if f["device"] == "cpu" else "a Triton kernel (inductor)"


def _tools(f: F) -> str:
    """'with /usr/bin/g++, Python headers at ...' from the child's facts."""
    headers = f.get("headers")
    found = f"Python headers at {headers}" if headers else "no Python headers found"
    return f"with {f['compiler']}, {found}" if f.get("compiler") else found


def _failed(f: F) -> str:
    return f"{f['reason']} ({_tools(f)})" if f.get("tools") else str(f["reason"])


def cached_from(created_at: str) -> str:
    """'cached from 2026-01-31 14:02 UTC' for a kept verdict's ISO time."""
    try:
        when = datetime.fromisoformat(created_at).astimezone(timezone.utc)
    except ValueError:
        return f"cached from {created_at}"
    return f"cached from {when.strftime('%Y-%m-%d %H:%M')} UTC"


def _problem(problem: Any) -> str:
    """launch/compile_cache.py's reason as it gave it, or a finding's words."""
    return _says([problem]) if isinstance(problem, dict) else str(problem)


def _says(findings: Any) -> str:
    from torchscale.contracts import wording  # the joined phrases, made after this module
    from torchscale.contracts.finding import Finding

    return "; ".join(wording.say(Finding.model_validate(one)) for one in findings)


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
    "cuda.fix_install_torch": "install PyTorch with CUDA support",
    "cuda.cpu_only_build": "torch {torch} is a CPU-only build",
    "cuda.fix_cpu_only_build": (
        "install a CUDA build of PyTorch; on a machine without GPUs use --device cpu"
    ),
    "cuda.raised": "torch.cuda raised {error}",
    "cuda.fix_raised": "check the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES",
    "cuda.no_device": "{build} build, but no CUDA device is usable",
    "cuda.fix_no_device": (
        "check that the NVIDIA driver is loaded (nvidia-smi), that CUDA_VISIBLE_DEVICES does not "
        "hide the GPUs, and that the container was started with GPU access"
    ),
    "cuda.devices": "{count} device(s) usable by torch ({build})",
    "cuda.no_runtime": "torch has no CUDA runtime (not a CUDA build)",
    "cuda.driver_cuda_unknown": "driver's CUDA version unknown ({error})",
    "cuda.compat": _compat,
    "cuda.fix_driver_too_old": (
        "upgrade the driver to one supporting CUDA {runtime}, or install a PyTorch build for "
        "CUDA {driver_major}.x"
    ),
    "cuda.fix_minor_compat": (
        "works for most kernels; upgrade the driver for PTX JIT and newest features"
    ),
    "gpus.none_found": "no GPU found ({why})",
    "gpus.fix_none_found": "install the NVIDIA driver and check `nvidia-smi` lists the GPUs",
    "gpus.unreadable": lambda f: (
        "NVML cannot read GPU " + "; ".join(f"{i} ({why})" for i, why in f["gpus"])
    ),
    "gpus.fix_unreadable": (
        "the GPU may have fallen off the bus: check `nvidia-smi` and dmesg (Xid errors), reset "
        "or reboot"
    ),
    "gpus.listed": lambda f: (
        f"{len(f['gpus'])} GPU(s) via {f['source']}: "
        + "; ".join(map(_describe, f["gpus"]))
        + (
            f"; NVML GPU(s) {', '.join(map(str, f['not_visible']))} not visible to this process "
            "(CUDA_VISIBLE_DEVICES or the job's share): not judged"
            if f.get("not_visible")
            else ""
        )
    ),
    "gpus.fix_mixed": "mixed GPU models: the slowest one sets the pace of every DDP step",
    "driver.no_nvml": "NVML unavailable: {error}",
    "driver.fix_no_nvml": "install/load the NVIDIA driver; `nvidia-smi` must work on the node",
    "driver.version": lambda f: (
        f"driver {f['driver_version']}"
        + (f", supports CUDA up to {f['cuda']}" if f.get("cuda") else "")
    ),
    "software.python": "Python {version} ({implementation}) at {path}",
    "software.fix_python": "use Python >= {need}",
    "software.no_torch": "cannot import torch: {error}",
    "software.fix_no_torch": lambda f: (
        INSTALL_TORCH.format(need=f["need"]) + " for this platform (CUDA build on GPU nodes)"
    ),
    "software.torch": lambda f: (
        f"torch {f['version']}, {f['build']} build"
        + (f"; torchscale needs >= {f['need']}" if f.get("need") else "")
    ),
    "software.fix_old_torch": (
        "upgrade to torch >= {need} (FSDP2's fully_shard and torch.amp.GradScaler are missing "
        "before it)"
    ),
    "software.needs_torch": "needs torch, which could not be imported",
    "software.gloo": "available (CPU collectives, CPU-path training)",
    "software.no_gloo": "not available in this torch build",
    "software.fix_gloo": (
        "use a PyTorch build with distributed support (the official wheels have gloo)"
    ),
    "software.nccl_not_needed": "not needed on the CPU path (--device cpu uses gloo)",
    "software.no_nccl": "not available in torch {torch} ({build})",
    "software.fix_no_nccl": "install a CUDA build of PyTorch: its wheels bundle NCCL",
    "software.nccl_not_loaded": "torch reports NCCL but cannot load it: {error}",
    "software.fix_nccl_not_loaded": "reinstall the CUDA build of PyTorch (nvidia-nccl-cu* wheel)",
    "software.nccl": "NCCL {version}",
    "software.no_torchrun": "torch.distributed.run is not importable",
    "software.fix_no_torchrun": lambda f: (
        INSTALL_TORCH.format(need=f["need"]) + " in this environment"
    ),
    "software.torchrun_not_on_path": (
        "not on PATH; `{python} -m torch.distributed.run` works (torchscale launches it that way)"
    ),
    "software.fix_torchrun_path": (
        "activate the environment that has torch so `torchrun` is on PATH"
    ),
    "software.torchrun": "{path}",
    "software.no_nsys": "nsys not found on PATH",
    "software.nsys_fails": "{path} does not run: {error}",
    "software.nsys_version_failed": "{path} --version failed: {tail}",
    "software.nsys": "nsys {version} at {path}",
    "software.fix_nsys": (
        "optional, for `torchscale profile --tool nsys`: install NVIDIA Nsight Systems (CUDA "
        "toolkit or the nsight-systems package) and put `nsys` on PATH"
    ),
    "software.env": _env,
    "software.env_problems": _env_problems,
    "software.fix_env": _env_fix,
    "compile.timed_out": lambda f: (
        f"building {_what(f)} did not finish within {limit_s(f['timeout_s'])}"
    ),
    "compile.no_verdict": lambda f: (
        "the compile probe ended without a verdict "
        f"({f.get('why') or 'exit code ' + str(f['returncode'])})"
    ),
    "compile.built": lambda f: (
        f"built and ran {_what(f)} in {whole_s(f['wall_s'])} ({f['binaries']} binaries built "
        f"in an empty cache; {_tools(f)})"
    ),
    "compile.failed": _failed,
    "compile.cached": lambda f: cached_from(f["created_at"]),
    "compile.quick": "--quick: no kernel compiled",
    "compile.cache_fallback": lambda f: (
        f"the compile cache cannot live in {f['folder']} ({_problem(f['problem'])}): the cells "
        f"compile in node-local {f['local']} instead"
    ),
    "compile.folder_failed": lambda f: f"a compile there failed: {_says(f['findings'])}",
    "compile.fix_cpu": lambda f: (
        "install a C++ compiler and the Python headers (apt install g++ python3-dev), "
        + COMPILE_OFF
    ),
    "compile.fix_cuda": lambda f: (
        "install a C compiler and the Python headers for Triton (apt install gcc "
        "python3-dev), " + COMPILE_OFF
    ),
    "compile.fix_triton": lambda f: (
        "install triton (pip install triton; CUDA wheels of torch bring the matching one), "
        + COMPILE_OFF
    ),
    "compile.fix_cpu_optional": "CPU cells compile only when it is true",
    "compile.fix_cache_folder": (
        "keep the results on a filesystem with file locks that allows executables, or set "
        "TORCHINDUCTOR_CACHE_DIR to a folder that does (each node and run then compiles anew)"
    ),
}
