"""Checks of the software stack: Python, PyTorch build, backends, launcher, profiler, env."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys

from torchscale.contracts.finding import Finding
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

NEEDS_TORCH = Finding(code="software.needs_torch")
CACHE_FOLDER_FIX = Finding(code="compile.fix_cache_folder")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


def check_python(ctx: ValidateContext) -> CheckResult:
    version = ".".join(str(x) for x in sys.version_info[:3])
    figures = {"version": version, "implementation": sys.implementation.name}
    found = Finding(code="software.python", figures=figures | {"path": sys.executable})
    if sys.version_info[:2] < MIN_PYTHON:
        fix = Finding(code="software.fix_python", figures={"need": version_text(MIN_PYTHON)})
        return failed("python", "Python", found, fix, version=version)
    return passed("python", "Python", found, version=version, executable=sys.executable)


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
    need = version_text(MIN_TORCH)
    if state.module is None:
        missing = Finding(code="software.no_torch", figures={"error": str(state.error)})
        fix = Finding(code="software.fix_no_torch", figures={"need": need})
        return failed("torch", "PyTorch", missing, fix)
    torch = state.module
    version = str(torch.__version__)
    build = torch_build(torch)
    data = {"version": version, "build": build}
    if _version_tuple(version) < MIN_TORCH:
        old = Finding(code="software.torch", figures=data | {"need": need})
        fix = Finding(code="software.fix_old_torch", figures={"need": need})
        return failed("torch", "PyTorch", old, fix, **data)
    return passed("torch", "PyTorch", Finding(code="software.torch", figures=data), **data)


def check_gloo(ctx: ValidateContext) -> CheckResult:
    torch = ctx.torch.module
    if torch is None:
        return skipped("gloo", "gloo backend", NEEDS_TORCH)
    if torch.distributed.is_available() and torch.distributed.is_gloo_available():
        return passed("gloo", "gloo backend", Finding(code="software.gloo"))
    fix, missing = Finding(code="software.fix_gloo"), Finding(code="software.no_gloo")
    if ctx.device == "cpu":
        return failed("gloo", "gloo backend", missing, fix)
    return warned("gloo", "gloo backend", missing, fix)


def check_nccl(ctx: ValidateContext) -> CheckResult:
    torch = ctx.torch.module
    if ctx.device == "cpu":
        return skipped("nccl", "NCCL", Finding(code="software.nccl_not_needed"))
    if torch is None:
        return skipped("nccl", "NCCL", NEEDS_TORCH)
    if not (torch.distributed.is_available() and torch.distributed.is_nccl_available()):
        figures = {"torch": str(torch.__version__), "build": torch_build(torch)}
        missing = Finding(code="software.no_nccl", figures=figures)
        return failed("nccl", "NCCL", missing, Finding(code="software.fix_no_nccl"))
    version, error = probe_nccl_version(torch)
    if version is None:  # the library is missing or fails to load
        broken = Finding(code="software.nccl_not_loaded", figures={"error": str(error)})
        return failed("nccl", "NCCL", broken, Finding(code="software.fix_nccl_not_loaded"))
    nccl = Finding(code="software.nccl", figures={"version": version})
    return passed("nccl", "NCCL", nccl, version=version)


def check_torchrun(ctx: ValidateContext) -> CheckResult:
    path = shutil.which("torchrun")
    has_module = importlib.util.find_spec("torch") is not None and (
        importlib.util.find_spec("torch.distributed.run") is not None
    )
    if not has_module:
        fix = Finding(code="software.fix_no_torchrun", figures={"need": version_text(MIN_TORCH)})
        return failed("torchrun", "torchrun", Finding(code="software.no_torchrun"), fix)
    if path is None:
        figures = {"python": sys.executable}
        off_path = Finding(code="software.torchrun_not_on_path", figures=figures)
        return warned("torchrun", "torchrun", off_path, Finding(code="software.fix_torchrun_path"))
    found = Finding(code="software.torchrun", figures={"path": path})
    return passed("torchrun", "torchrun", found, path=path)


def check_nsys(ctx: ValidateContext) -> CheckResult:
    path = shutil.which("nsys")
    fix = Finding(code="software.fix_nsys")
    if path is None:
        return warned("nsys", "Nsight Systems", Finding(code="software.no_nsys"), fix)
    try:
        proc = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=NSYS_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        fails = Finding(code="software.nsys_fails", figures={"path": path, "error": str(exc)})
        return warned("nsys", "Nsight Systems", fails, fix, path=path)
    version = parse_nsys_version(proc.stdout + proc.stderr)
    if proc.returncode != 0 or version is None:
        out = (proc.stdout + proc.stderr).strip().splitlines()
        tail = out[-1] if out else f"exit code {proc.returncode}"
        failed_run = Finding(
            code="software.nsys_version_failed", figures={"path": path, "tail": tail}
        )
        return warned("nsys", "Nsight Systems", failed_run, fix, path=path)
    found = Finding(code="software.nsys", figures={"version": version, "path": path})
    return passed("nsys", "Nsight Systems", found, path=path, version=version)


def check_compile(ctx: ValidateContext) -> CheckResult:
    """torch.compile builds and runs one kernel where a benchmark's cells would (docs/validate.md,
    'The compile toolchain check'). CUDA cells compile by default, so there a failure is a FAIL;
    CPU cells only with `training.compile: true`: a WARN. A cache folder that cannot hold a
    cache is a WARN: the cells then compile in node-local storage, each node and run anew."""
    title = "torch.compile toolchain"
    if ctx.quick:
        return skipped("compile", title, Finding(code="compile.quick"))
    if ctx.torch.module is None:
        return skipped("compile", title, NEEDS_TORCH)
    if ctx.device == "cuda" and ctx.torch.cuda_gpu_count == 0:
        return skipped("compile", title, Finding(code="validate.perf_no_gpu"))
    experiment = ctx.experiment_dir or ctx.output_dir / "standalone"
    cache = ResultLayout(experiment.absolute()).compile_cache_dir
    toolchain = toolchain_for(ctx.device, cells_env(os.environ, cache))
    if toolchain.ok and toolchain.cache_problem:
        detail = [toolchain.fallback(), *toolchain.findings]
        return warned("compile", title, detail, CACHE_FOLDER_FIX, **toolchain.data)
    if toolchain.ok:
        return passed("compile", title, toolchain.findings, **toolchain.data)
    if ctx.device == "cuda":
        return failed("compile", title, toolchain.findings, toolchain.fix, **toolchain.data)
    hint = [*toolchain.fix, Finding(code="compile.fix_cpu_optional")]
    return warned("compile", title, toolchain.findings, hint, **toolchain.data)


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
    data = {"variables": shown, "inherited_distributed": leftovers}
    figures = {
        "variables": shown,
        "hides_gpus": env.get("CUDA_VISIBLE_DEVICES") in ("", "-1"),
        "disabled": [f"{k}={v}" for k, v in SLOW_NCCL_SETTINGS.items() if env.get(k) == v],
        "inherited": leftovers,
    }
    if figures["hides_gpus"] or figures["disabled"] or leftovers:
        problems = Finding(code="software.env_problems", figures=figures)
        fix = Finding(code="software.fix_env", figures=figures)
        return warned("env", "Environment", problems, fix, **data)
    return passed("env", "Environment", Finding(code="software.env", figures=figures), **data)
