"""What `torchscale config init` sizes a starter config for: this node, or a named machine.

A profile is the few facts a first sweep depends on: how many GPUs a node has, how much memory
each has, and whether it computes in bf16 (compute capability 8.0 and up: A100, H100, L4, ...).
`auto` reads them from torch on this node; the named profiles are the usual cloud nodes, so a
config can be written on a laptop for the cluster it will run on.

Importing torch takes seconds, so `auto` first asks what answers without it whether torch can
see a GPU here at all (`no_gpu_here`): a CPU-only torch build cannot, nor can a CUDA build on a
node whose driver lists no GPU or that has no driver. Only when a GPU may be there is torch
asked (how many it can use, and their facts).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from torchscale.contracts.errors import UsageError
from torchscale.contracts.host import usable_cores
from torchscale.contracts.wording.spell import GIB, gib, of


@dataclass(frozen=True)
class Hardware:
    """One node as a starter config sees it."""

    name: str
    gpus: int  # 0: CPU ranks (gloo)
    gpu_name: str | None
    gpu_memory_bytes: int | None
    bf16: bool  # the GPUs compute in bf16 (sm80+); never assumed on CPU
    cpu_cores: int
    source: str  # how the facts were obtained (a named profile, or probed on this node)


def _gpu_profile(name: str, gpu: str, count: int, memory_gib: int, bf16: bool) -> Hardware:
    source = f"named profile '{name}' ({of(count, gpu)}, {gib(memory_gib * GIB)} each)"
    return Hardware(name, count, gpu, memory_gib * GIB, bf16, cpu_cores=8 * count, source=source)


PROFILES: dict[str, Hardware] = {
    p.name: p
    for p in (
        _gpu_profile("v100-8x", "Tesla V100-SXM2-32GB", 8, 32, False),
        _gpu_profile("a10g-1x", "NVIDIA A10G", 1, 24, True),
        _gpu_profile("l4-1x", "NVIDIA L4", 1, 24, True),
        _gpu_profile("a100-40gb-8x", "NVIDIA A100-SXM4-40GB", 8, 40, True),
        _gpu_profile("a100-8x", "NVIDIA A100-SXM4-80GB", 8, 80, True),
        _gpu_profile("h100-1x", "NVIDIA H100 80GB HBM3", 1, 80, True),
        _gpu_profile("h100-8x", "NVIDIA H100 80GB HBM3", 8, 80, True),
        _gpu_profile("h200-8x", "NVIDIA H200", 8, 141, True),
    )
}
CHOICES = ("auto", "cpu", *PROFILES)


def cpu_node(cores: int | None = None) -> Hardware:
    usable = cores if cores is not None else usable_cores()
    source = f"CPU ranks over gloo ({usable} usable core(s) on this node)"
    return Hardware("cpu", 0, None, None, False, max(1, usable), source)


def torch_build() -> dict[str, str | None] | None:
    """The installed torch's `torch.version.cuda` and `.hip` (None: not that kind of build),
    read without importing torch; None where they cannot be read (no torch, an odd install)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return read_torch_build(Path(next(iter(spec.submodule_search_locations))) / "version.py")


def read_torch_build(path: Path) -> dict[str, str | None] | None:
    """`cuda` and `hip` from torch/version.py (generated at build time: plain assignments of
    string or None literals), or None where the file is not that."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    found: dict[str, str | None] = {}
    target: ast.expr
    value: ast.expr | None
    for node in tree.body:
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in ("cuda", "hip"):
            if not (isinstance(value, ast.Constant) and isinstance(value.value, (str, type(None)))):
                return None
            found[target.id] = value.value
    return found if set(found) == {"cuda", "hip"} else None


def _cuda_driver_loads() -> bool:
    """Whether the CUDA driver library (what a CUDA build of torch needs to see a GPU) loads."""
    if not sys.platform.startswith("linux"):
        return True  # not probed here: torch will say
    try:
        ctypes.CDLL("libcuda.so.1")  # the name torch's CUDA runtime loads, searched alike
    except OSError:
        return False
    return True


def no_gpu_here() -> str | None:
    """Why torch cannot see a GPU on this node, known without importing torch; None when it
    may (then only torch can say)."""
    build = torch_build()
    if build is None or build["hip"]:
        return None  # its build unread, or ROCm: NVML knows nothing of AMD GPUs
    if not build["cuda"]:
        return "a CPU-only torch build"
    from torchscale.contracts.nvml import probe_nvml

    state = probe_nvml()
    if state.ok and state.module is not None:
        with contextlib.suppress(Exception):
            state.module.nvmlShutdown()
        return None if state.gpus else "the NVIDIA driver lists no GPU"
    if not _cuda_driver_loads():
        return f"no CUDA driver (libcuda.so.1 does not load; NVML: {state.error})"
    return None


def this_node() -> Hardware:
    """The GPUs torch sees here (all of one kind is assumed: the first one's facts), else CPU.
    Torch is imported only where it may see a GPU (already imported, it is simply asked)."""
    if "torch" not in sys.modules and no_gpu_here() is not None:
        return cpu_node()
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return cpu_node()
    count = torch.cuda.device_count()
    props = torch.cuda.get_device_properties(0)
    source = (
        f"probed on this node: {of(count, props.name)}, "
        f"{gib(props.total_memory)} each, compute capability {props.major}.{props.minor}"
    )
    memory = int(props.total_memory)
    return Hardware("auto", count, props.name, memory, props.major >= 8, usable_cores(), source)


def hardware(choice: str) -> Hardware:
    """The profile `--hardware` names."""
    if choice == "auto":
        return this_node()
    if choice == "cpu":
        return cpu_node()
    profile = PROFILES.get(choice)
    if profile is None:
        raise UsageError(f"--hardware {choice!r} is not known: choose from {', '.join(CHOICES)}")
    return profile
