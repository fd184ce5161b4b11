"""Checks of the software stack: Python, PyTorch build, backends, launcher, profiler, env."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys

from torchscale.contracts.host import probe_nccl_version
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.orchestration.launch.torchrun_env import is_inherited_distributed_var
from torchscale.orchestration.profiling.nsys import parse_nsys_version
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    failed,
    passed,
    skipped,
    warned,
)
from torchscale.orchestration.validate.compile_toolchain import cells_env, toolchain_for
from torchscale.orchestration.validate.requirements import MIN_PYTHON, MIN_TORCH, version_text

NSYS_TIMEOUT_S = 20.0
INSTALL_TORCH = f"install PyTorch >= {version_text(MIN_TORCH)}"

NEEDS_TORCH = "needs torch, which could not be imported"
CACHE_FOLDER_FIX = (
    "keep the results on a filesystem with file locks that allows executables, or set "
    "TORCHINDUCTOR_CACHE_DIR to a folder that does (each node and run then compiles anew)"
)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


def check_python(ctx: ValidateContext) -> CheckResult:
    version = ".".join(str(x) for x in sys.version_info[:3])
    detail = f"Python {version} ({sys.implementation.name}) at {sys.executable}"
    if sys.version_info[:2] < MIN_PYTHON:
        need = version_text(MIN_PYTHON)
        return failed("python", "Python", detail, f"use Python >= {need}", version=version)
    return passed("python", "Python", detail, version=version, executable=sys.executable)


def torch_build(torch: object) -> str:
    """'CUDA 12.4', 'ROCm 6.1' or 'CPU-only' for an imported torch module."""
    version = getattr(torch, "version", None)
    hip = getattr(version, "hip", None)
    cuda = getattr(version, "cuda", None)
    if hip:
        return f"ROCm {hip}"
    if cuda:
        return f"CUDA {cuda}"
    return "CPU-only"


def check_torch(ctx: ValidateContext) -> CheckResult:
    state = ctx.torch
    if state.module is None:
        hint = f"{INSTALL_TORCH} for this platform (CUDA build on GPU nodes)"
        return failed("torch", "PyTorch", f"cannot import torch: {state.error}", hint)
    torch = state.module
    version = str(torch.__version__)
    build = torch_build(torch)
    detail = f"torch {version}, {build} build"
    data = {"version": version, "build": build}
    if _version_tuple(version) < MIN_TORCH:
        need = version_text(MIN_TORCH)
        hint = (
            f"upgrade to torch >= {need} (FSDP2's fully_shard and torch.amp.GradScaler "
            "are missing before it)"
        )
        return failed("torch", "PyTorch", detail + f"; torchscale needs >= {need}", hint, **data)
    return passed("torch", "PyTorch", detail, **data)


def check_gloo(ctx: ValidateContext) -> CheckResult:
    torch = ctx.torch.module
    if torch is None:
        return skipped("gloo", "gloo backend", NEEDS_TORCH)
    if torch.distributed.is_available() and torch.distributed.is_gloo_available():
        return passed("gloo", "gloo backend", "available (CPU collectives, CPU-path training)")
    hint = "use a PyTorch build with distributed support (the official wheels have gloo)"
    if ctx.device == "cpu":
        return failed("gloo", "gloo backend", "not available in this torch build", hint)
    return warned("gloo", "gloo backend", "not available in this torch build", hint)


def check_nccl(ctx: ValidateContext) -> CheckResult:
    torch = ctx.torch.module
    if ctx.device == "cpu":
        return skipped("nccl", "NCCL", "not needed on the CPU path (--device cpu uses gloo)")
    if torch is None:
        return skipped("nccl", "NCCL", NEEDS_TORCH)
    if not (torch.distributed.is_available() and torch.distributed.is_nccl_available()):
        detail = f"not available in torch {torch.__version__} ({torch_build(torch)})"
        return failed(
            "nccl", "NCCL", detail, "install a CUDA build of PyTorch: its wheels bundle NCCL"
        )
    version, error = probe_nccl_version(torch)
    if version is None:  # the library is missing or fails to load
        hint = "reinstall the CUDA build of PyTorch (nvidia-nccl-cu* wheel)"
        return failed("nccl", "NCCL", f"torch reports NCCL but cannot load it: {error}", hint)
    return passed("nccl", "NCCL", f"NCCL {version}", version=version)


def check_torchrun(ctx: ValidateContext) -> CheckResult:
    path = shutil.which("torchrun")
    has_module = importlib.util.find_spec("torch") is not None and (
        importlib.util.find_spec("torch.distributed.run") is not None
    )
    if not has_module:
        hint = f"{INSTALL_TORCH} in this environment"
        return failed("torchrun", "torchrun", "torch.distributed.run is not importable", hint)
    if path is None:
        detail = (
            f"not on PATH; `{sys.executable} -m torch.distributed.run` works "
            "(torchscale launches it that way)"
        )
        hint = "activate the environment that has torch so `torchrun` is on PATH"
        return warned("torchrun", "torchrun", detail, hint)
    return passed("torchrun", "torchrun", f"{path}", path=path)


def check_nsys(ctx: ValidateContext) -> CheckResult:
    path = shutil.which("nsys")
    hint = (
        "optional, for `torchscale profile --tool nsys`: install NVIDIA Nsight Systems "
        "(CUDA toolkit or the nsight-systems package) and put `nsys` on PATH"
    )
    if path is None:
        return warned("nsys", "Nsight Systems", "nsys not found on PATH", hint)
    try:
        proc = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=NSYS_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return warned("nsys", "Nsight Systems", f"{path} does not run: {exc}", hint, path=path)
    version = parse_nsys_version(proc.stdout + proc.stderr)
    if proc.returncode != 0 or version is None:
        out = (proc.stdout + proc.stderr).strip().splitlines()
        tail = out[-1] if out else f"exit code {proc.returncode}"
        return warned("nsys", "Nsight Systems", f"{path} --version failed: {tail}", hint, path=path)
    return passed("nsys", "Nsight Systems", f"nsys {version} at {path}", path=path, version=version)


def check_compile(ctx: ValidateContext) -> CheckResult:
    """torch.compile builds and runs one kernel where a benchmark's cells would (docs/validate.md,
    'The compile toolchain check'). CUDA cells compile by default, so there a failure is a FAIL;
    CPU cells only with `training.compile: true`: a WARN. A cache folder that cannot hold a
    cache is a WARN: the cells then compile in node-local storage, each node and run anew."""
    title = "torch.compile toolchain"
    if ctx.quick:
        return skipped("compile", title, "--quick: no kernel compiled")
    if ctx.torch.module is None:
        return skipped("compile", title, NEEDS_TORCH)
    if ctx.device == "cuda" and ctx.torch.cuda_gpu_count == 0:
        return skipped("compile", title, "needs a CUDA GPU, and torch sees none")
    experiment = ctx.experiment_dir or ctx.output_dir / "standalone"
    cache = ResultLayout(experiment.absolute()).compile_cache_dir
    toolchain = toolchain_for(ctx.device, cells_env(os.environ, cache))
    if toolchain.ok and toolchain.cache_problem:
        detail = f"{toolchain.fallback_line()}; {toolchain.detail}"
        return warned("compile", title, detail, CACHE_FOLDER_FIX, **toolchain.data)
    if toolchain.ok:
        return passed("compile", title, toolchain.detail, **toolchain.data)
    if ctx.device == "cuda":
        return failed("compile", title, toolchain.detail, toolchain.fix, **toolchain.data)
    hint = toolchain.fix + "; CPU cells compile only when it is true"
    return warned("compile", title, toolchain.detail, hint, **toolchain.data)


SHOWN_ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "GLOO_", "TORCH_DISTRIBUTED_")
SHOWN_ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "OMP_NUM_THREADS")
# settings that force NCCL onto slower transports: worth knowing before trusting a benchmark
SLOW_NCCL_SETTINGS = {
    "NCCL_P2P_DISABLE": "1",
    "NCCL_IB_DISABLE": "1",
    "NCCL_SHM_DISABLE": "1",
    "NCCL_NVLS_ENABLE": "0",
}


def check_env(ctx: ValidateContext) -> CheckResult:
    env = os.environ
    shown = {
        k: v
        for k, v in sorted(env.items())
        if k.startswith(SHOWN_ENV_PREFIXES) or k in SHOWN_ENV_NAMES
    }
    leftovers = sorted(k for k in env if is_inherited_distributed_var(k))
    detail = ", ".join(f"{k}={v}" for k, v in shown.items()) or "no NCCL_*/CUDA_*/OMP_* set"
    data = {"variables": shown, "inherited_distributed": leftovers}
    problems: list[str] = []
    hints: list[str] = []
    if env.get("CUDA_VISIBLE_DEVICES") == "" or env.get("CUDA_VISIBLE_DEVICES") == "-1":
        problems.append("CUDA_VISIBLE_DEVICES hides every GPU")
        hints.append("unset CUDA_VISIBLE_DEVICES")
    disabled = [f"{k}={v}" for k, v in SLOW_NCCL_SETTINGS.items() if env.get(k) == v]
    if disabled:
        problems.append("transport(s) switched off: " + ", ".join(disabled))
        hints.append("unset them unless you are debugging: they force slower NCCL paths")
    if leftovers:
        problems.append("inherited launcher variables: " + ", ".join(leftovers))
        hints.append(
            "they belong to another launch; torchscale strips them from its cells, "
            "but your own scripts would join the wrong rendezvous"
        )
    if problems:
        return warned(
            "env", "Environment", "; ".join(problems) + f" ({detail})", "; ".join(hints), **data
        )
    return passed("env", "Environment", detail, **data)
