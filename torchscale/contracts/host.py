"""Facts about this node, probed one way for every command (validate, benchmark, the worker).

Each probe answers from the node as it is and never raises: a CPU-only build, a missing driver
or a broken install gives 0 / None, and the callers say what that means. The torch probes take
the torch module to ask (default: import it), so `validate`, which already holds torch or a
test's stand-in for it, asks the same questions the same way.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from torchscale.contracts.wording.spell import limit_s

# what a child process prints: the total memory of every GPU torch can use, in bytes
GPU_MEMORY_PROBE = (
    "import json, torch\n"
    "print(json.dumps([torch.cuda.get_device_properties(i).total_memory"
    " for i in range(torch.cuda.device_count())]))"
)
GPU_MEMORY_TIMEOUT_S = 180.0


def usable_cores() -> int:
    """Cores this process may run on (respects taskset/cgroup cpusets, unlike os.cpu_count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_child(
    argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A child process asked one question: its output read as text, no stdin (it must never
    wait on a terminal), killed after `timeout_s` (TimeoutExpired); OSError where it cannot
    start. Every probe of this node that needs its own process (torch's GPUs, the compile
    toolchain, Slurm's commands) runs it here."""
    return subprocess.run(
        list(argv),
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _torch(module: Any) -> Any:
    """`module` itself, or the imported torch when None (an import failure propagates)."""
    return module if module is not None else importlib.import_module("torch")


def smallest_gpu_memory(
    python: str = sys.executable, timeout_s: float = GPU_MEMORY_TIMEOUT_S
) -> tuple[int | None, str | None]:
    """(total bytes of the smallest GPU torch can use here, None), or (None, why not).

    Asked of torch in a child process: it sees what the ranks will see (CUDA_VISIBLE_DEVICES,
    a MIG slice's own memory, a ROCm GPU), and the CUDA context it opens ends with it instead
    of holding GPU memory in this process for the whole sweep."""
    try:
        done = run_child([python, "-c", GPU_MEMORY_PROBE], timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"torch did not report the GPUs' memory within {limit_s(timeout_s)}"
    except OSError as exc:
        return None, f"cannot start {python} to ask torch ({exc.strerror or exc})"
    lines = done.stdout.strip().splitlines()
    try:
        totals = [int(t) for t in json.loads(lines[-1])] if done.returncode == 0 else None
    except (IndexError, ValueError, TypeError):
        totals = None
    if totals is None:
        errors = done.stderr.strip().splitlines()
        why = errors[-1] if errors else f"exit {done.returncode}"
        return None, f"torch could not read the GPUs' memory ({why})"
    if not totals:
        return None, "torch sees no GPU"
    return min(totals), None


def cuda_gpu_count(torch: Any = None) -> int:
    """CUDA GPUs torch can use here (0 on a CPU-only build or without a working driver)."""
    try:
        cuda = _torch(torch).cuda
        return int(cuda.device_count()) if cuda.is_available() else 0
    except Exception:  # no torch, or a broken driver raising from inside is_available()
        return 0


def probe_nccl_version(torch: Any = None) -> tuple[str | None, str | None]:
    """(NCCL bundled with torch as 'major.minor.patch', None), or (None, why it is unknown).

    The reason matters to `validate`: a CUDA build that reports NCCL but cannot load it is a
    broken install, not a CPU-only one.
    """
    try:
        raw = _torch(torch).cuda.nccl.version()
    except Exception as exc:  # CPU build: AttributeError; broken install: RuntimeError/OSError
        return None, f"{type(exc).__name__}: {exc}"
    version = ".".join(map(str, raw)) if isinstance(raw, tuple) else str(raw)
    return version, None


def nccl_version(torch: Any = None) -> str | None:
    """NCCL bundled with torch, as 'major.minor.patch'; None on a CPU-only build."""
    return probe_nccl_version(torch)[0]


def driver_version() -> str | None:
    """NVIDIA driver version from NVML; None without the library or a driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # no library, no driver
        return None
