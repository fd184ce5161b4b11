"""Words for validate's checks of the software stack (orchestration/validate/checks_software.py):
Python, the PyTorch build, gloo, NCCL, torchrun, Nsight Systems, the environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

F = Mapping[str, Any]
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


PHRASES: dict[str, Callable[[F], str]] = {
    "software.python": lambda f: f"Python {f['version']} ({f['implementation']}) at {f['path']}",
    "software.fix_python": lambda f: f"use Python >= {f['need']}",
    "software.no_torch": lambda f: f"cannot import torch: {f['error']}",
    "software.fix_no_torch": lambda f: (
        INSTALL_TORCH.format(need=f["need"]) + " for this platform (CUDA build on GPU nodes)"
    ),
    "software.torch": lambda f: (
        f"torch {f['version']}, {f['build']} build"
        + (f"; torchscale needs >= {f['need']}" if f.get("need") else "")
    ),
    "software.fix_old_torch": lambda f: (
        f"upgrade to torch >= {f['need']} (FSDP2's fully_shard and torch.amp.GradScaler "
        "are missing before it)"
    ),
    "software.needs_torch": lambda f: "needs torch, which could not be imported",
    "software.gloo": lambda f: "available (CPU collectives, CPU-path training)",
    "software.no_gloo": lambda f: "not available in this torch build",
    "software.fix_gloo": lambda f: (
        "use a PyTorch build with distributed support (the official wheels have gloo)"
    ),
    "software.nccl_not_needed": lambda f: "not needed on the CPU path (--device cpu uses gloo)",
    "software.no_nccl": lambda f: f"not available in torch {f['torch']} ({f['build']})",
    "software.fix_no_nccl": lambda f: "install a CUDA build of PyTorch: its wheels bundle NCCL",
    "software.nccl_not_loaded": lambda f: f"torch reports NCCL but cannot load it: {f['error']}",
    "software.fix_nccl_not_loaded": lambda f: (
        "reinstall the CUDA build of PyTorch (nvidia-nccl-cu* wheel)"
    ),
    "software.nccl": lambda f: f"NCCL {f['version']}",
    "software.no_torchrun": lambda f: "torch.distributed.run is not importable",
    "software.fix_no_torchrun": lambda f: (
        INSTALL_TORCH.format(need=f["need"]) + " in this environment"
    ),
    "software.torchrun_not_on_path": lambda f: (
        f"not on PATH; `{f['python']} -m torch.distributed.run` works "
        "(torchscale launches it that way)"
    ),
    "software.fix_torchrun_path": lambda f: (
        "activate the environment that has torch so `torchrun` is on PATH"
    ),
    "software.torchrun": lambda f: f["path"],
    "software.no_nsys": lambda f: "nsys not found on PATH",
    "software.nsys_fails": lambda f: f"{f['path']} does not run: {f['error']}",
    "software.nsys_version_failed": lambda f: f"{f['path']} --version failed: {f['tail']}",
    "software.nsys": lambda f: f"nsys {f['version']} at {f['path']}",
    "software.fix_nsys": lambda f: (
        "optional, for `torchscale profile --tool nsys`: install NVIDIA Nsight Systems "
        "(CUDA toolkit or the nsight-systems package) and put `nsys` on PATH"
    ),
    "software.env": _env,
    "software.env_problems": _env_problems,
    "software.fix_env": _env_fix,
}
