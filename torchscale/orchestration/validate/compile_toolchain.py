"""Can torch.compile build and run a kernel on this node? Asked once per device type, of a
child process (validate/compile_worker.py) that compiles one tiny function.

A cell with `training.compile` on (the CUDA default) needs inductor's toolchain: on CPU a C++
compiler and the Python headers, on CUDA Triton and a C compiler with the Python headers for
the launcher Triton builds. Without it every such cell fails at its first step, one after
another; `validate` reports it as a check, and `benchmark` refuses the run up front with the
same one line (`require_toolchain`).

The child gets fresh, empty inductor and Triton cache directories (removed afterwards), so a
kernel cached by an earlier run cannot hide a missing compiler, and one compile thread (no
worker pool to start for one kernel). Its verdict is cached per process and per toolchain
environment (compiler, paths, inductor and Triton settings): a sweep asks once.

Judging the child's verdict (`judge_probe`) is pure; `run_probe` runs it.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchscale.contracts.errors import ToolNotFoundError
from torchscale.contracts.versioned import read_json_object

WORKER_MODULE = "torchscale.orchestration.validate.compile_worker"
# a cold compile of one tiny function: a few seconds on an idle node, tens on a busy 2-core
# one (importing torch and inductor is most of it); a hung compiler ends here, not never
PROBE_TIMEOUT_S = 300.0
# what decides whether the toolchain works: a verdict is reused only while these are the same
TOOLCHAIN_ENV_NAMES = frozenset(
    {
        "CC",
        "CXX",
        "PATH",
        "CPATH",
        "C_INCLUDE_PATH",
        "CPLUS_INCLUDE_PATH",
        "LIBRARY_PATH",
        "LD_LIBRARY_PATH",
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_VISIBLE_DEVICES",
        "PYTHONPATH",
        "PYTHONHOME",
    }
)
TOOLCHAIN_ENV_PREFIXES = ("TORCHINDUCTOR_", "TORCH_INDUCTOR_", "TRITON_")
# the probe sets these itself (and importing inductor sets the first in this process)
PROBE_OWN_ENV = frozenset(
    {"TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_COMPILE_THREADS"}
)
COMPILE_OFF = "or set training.compile: false"
FIXES = {
    "cpu": "install a C++ compiler and the Python headers (apt install g++ python3-dev), "
    + COMPILE_OFF,
    "cuda": "install a C compiler and the Python headers for Triton (apt install gcc "
    "python3-dev), " + COMPILE_OFF,
    "triton": "install triton (pip install triton; CUDA wheels of torch bring the matching "
    "one), " + COMPILE_OFF,
}


@dataclass(frozen=True)
class Toolchain:
    """Whether torch.compile built and ran a kernel on `device`; what was seen, and the fix."""

    device: str
    ok: bool
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def refusal(self) -> str:
        """The one line `benchmark` stops with."""
        return f"torch.compile cannot build a kernel on {self.device}: {self.detail}; {self.fix}"


def probe_argv(device: str, out: Path, python: str = sys.executable) -> list[str]:
    return [python, "-m", WORKER_MODULE, "--device", device, "--out", str(out)]


def probe_env(base_env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """The ranks' environment, with empty caches of the probe's own and one compile thread."""
    return {
        **base_env,
        "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor"),
        "TRITON_CACHE_DIR": str(workdir / "triton"),
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
    }


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _tools_text(verdict: Mapping[str, Any]) -> str:
    """'with /usr/bin/g++, Python headers at ...' from the child's facts."""
    parts = []
    compiler = verdict.get("cxx") or verdict.get("c_compiler")
    if compiler:
        parts.append(f"with {compiler}")
    headers = verdict.get("python_headers")
    parts.append(f"Python headers at {headers}" if headers else "no Python headers found")
    return ", ".join(parts)


def judge_probe(
    device: str,
    verdict: Mapping[str, Any] | None,
    *,
    returncode: int | None,
    stderr: str = "",
    timed_out: bool = False,
    timeout_s: float = PROBE_TIMEOUT_S,
    wall_s: float = 0.0,
) -> Toolchain:
    """The child's verdict (None when it wrote none) as a Toolchain, its cause in one line."""
    data: dict[str, Any] = {"probe_wall_s": round(wall_s, 2), **(verdict or {})}
    what = "a C++ kernel (inductor)" if device == "cpu" else "a Triton kernel (inductor)"
    if timed_out:
        detail = f"building {what} did not finish within {timeout_s:g} s"
        return Toolchain(device, False, detail, FIXES.get(device, FIXES["cpu"]), data)
    if verdict is None:
        why = _last_line(stderr) or f"exit code {returncode}"
        detail = f"the compile probe ended without a verdict ({why})"
        return Toolchain(device, False, detail, FIXES.get(device, FIXES["cpu"]), data)
    if verdict.get("ok"):
        built = verdict.get("binaries_built", 0)
        detail = (
            f"built and ran {what} in {wall_s:.0f} s ({built} binaries built in an empty "
            f"cache; {_tools_text(verdict)})"
        )
        return Toolchain(device, True, detail, "", data)
    reason = str(verdict.get("reason") or "no reason given")
    stage = verdict.get("stage")
    fix = FIXES["triton"] if stage == "triton" else FIXES.get(device, FIXES["cpu"])
    if stage in ("compile", "run"):
        reason += f" ({_tools_text(verdict)})"
    return Toolchain(device, False, reason, fix, data)


def run_probe(
    device: str,
    base_env: Mapping[str, str],
    timeout_s: float = PROBE_TIMEOUT_S,
    python: str = sys.executable,
) -> Toolchain:
    """Compile one tiny function on `device` in a child process with empty caches."""
    with tempfile.TemporaryDirectory(prefix="torchscale-compile-") as tmp:
        workdir = Path(tmp)
        out = workdir / "verdict.json"
        started = time.monotonic()
        try:
            done = subprocess.run(
                probe_argv(device, out, python),
                env=probe_env(base_env, workdir),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return judge_probe(
                device,
                None,
                returncode=None,
                timed_out=True,
                timeout_s=timeout_s,
                wall_s=time.monotonic() - started,
            )
        except OSError as exc:
            why = f"cannot start {python}: {exc.strerror or exc}"
            return judge_probe(device, None, returncode=None, stderr=why)
        return judge_probe(
            device,
            read_json_object(out),
            returncode=done.returncode,
            stderr=done.stderr,
            wall_s=time.monotonic() - started,
        )


def toolchain_key(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The part of an environment that decides whether the toolchain works."""
    return tuple(
        sorted(
            (k, v)
            for k, v in env.items()
            if (k in TOOLCHAIN_ENV_NAMES or k.startswith(TOOLCHAIN_ENV_PREFIXES))
            and k not in PROBE_OWN_ENV
        )
    )


_VERDICTS: dict[tuple[str, tuple[tuple[str, str], ...]], Toolchain] = {}


def toolchain_for(
    device: str, env: Mapping[str, str], probe: Callable[..., Toolchain] = run_probe
) -> Toolchain:
    """`device`'s toolchain verdict, probed once per process for the same toolchain env."""
    key = (device, toolchain_key(env))
    if key not in _VERDICTS:
        _VERDICTS[key] = probe(device, env)
    return _VERDICTS[key]


def require_toolchain(
    devices: Iterable[str],
    env: Mapping[str, str],
    on_check: Callable[[str], None] = lambda text: None,
) -> list[Toolchain]:
    """Each device type's verdict; ToolNotFoundError with the refusal line of the first one
    that cannot compile (before any cell launches: every compiled cell would fail)."""
    verdicts = []
    for device in sorted(set(devices)):
        on_check(f"checking that torch.compile builds a kernel on {device}")
        toolchain = toolchain_for(device, env)
        if not toolchain.ok:
            raise ToolNotFoundError(toolchain.refusal())
        on_check(f"torch.compile on {device}: {toolchain.detail}")
        verdicts.append(toolchain)
    return verdicts
