"""Words for validate's checks of the software stack (orchestration/validate/checks_software.py):
Python, the PyTorch build, gloo, NCCL, torchrun, Nsight Systems, the environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

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


PHRASES: Phrases = {
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
}
