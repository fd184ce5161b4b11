"""Can torch.compile build and run a kernel on this node? Asked once per device type, of a
child process (rank/programs/compile_probe.py) that compiles one tiny function in a fresh, empty
folder where the cells will (docs/validate.md, 'The compile toolchain check': why there, and
why a PASS can be trusted). Without the toolchain every compiled cell fails at its first step:
`validate` reports it as a check, and `benchmark` refuses the run up front with the same one
line (`require_toolchain`). A PASS is remembered per process and toolchain environment, and
kept per machine and toolchain (validate/compile_verdicts.py). Judging the child's verdict
(`judge_probe`) is pure; `run_probe` runs it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any

from torchscale.contracts import wording
from torchscale.contracts.errors import ToolNotFoundError
from torchscale.contracts.finding import Finding
from torchscale.contracts.host import run_child
from torchscale.contracts.versioned import read_json_object
from torchscale.orchestration.launch.compile_cache import (
    INDUCTOR_CACHE_ENV,
    TRITON_CACHE_ENV,
    TRITON_SUBDIR,
    cache_folder_problem,
    cache_folders,
    compile_cache_env,
    inductor_default_dir,
    nearest_existing,
    node_local_cache_dir,
    node_local_cache_env,
)
from torchscale.orchestration.validate import compile_verdicts

WORKER_MODULE = "torchscale.rank.programs.compile_probe"
# a cold compile of one tiny function: a few seconds on an idle node, tens on a busy 2-core
# one (importing torch and inductor is most of it); a hung compiler ends here, not never
PROBE_TIMEOUT_S = 300.0
# what decides whether the toolchain works: a verdict is reused only while these are the same
TOOLCHAIN_ENV_NAMES = frozenset(
    {"CC", "CXX", "PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH"}
    | {"LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES"}
    | {"PYTHONPATH", "PYTHONHOME"}
)
TOOLCHAIN_ENV_PREFIXES = ("TORCHINDUCTOR_", "TORCH_INDUCTOR_", "TRITON_")
# the probe sets it itself
PROBE_OWN_ENV = frozenset({"TORCHINDUCTOR_COMPILE_THREADS"})
# how to fix a probe that failed, by device (and Triton's stage): contracts/wording/compile_checks
FIXES = {
    "cpu": Finding(code="compile.fix_cpu"),
    "cuda": Finding(code="compile.fix_cuda"),
    "triton": Finding(code="compile.fix_triton"),
}


@dataclass(frozen=True)
class Toolchain:
    """Whether torch.compile built and ran a kernel on `device`; what was seen, and the fix,
    as findings (worded when shown)."""

    device: str
    ok: bool
    findings: list[Finding]
    fix: list[Finding] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    # why the cells' cache folder cannot hold a cache (None when it can, or none was given:
    # launch/compile_cache.py's reason, or the compile that failed there), and that folder:
    # the verdict is then the one in node-local storage
    cache_problem: Finding | str | None = None
    cache_folder: str = ""

    def said(self) -> str:
        """What the probe found, in words."""
        return "; ".join(wording.say(f) for f in self.findings)

    def refusal(self) -> str:
        """The one line `benchmark` stops with."""
        fix = "; ".join(wording.say(f) for f in self.fix)
        return f"torch.compile cannot build a kernel on {self.device}: {self.said()}; {fix}"

    def fallback(self) -> Finding:
        """That the cells compile in node-local storage, and why."""
        problem = self.cache_problem
        return Finding(
            code="compile.cache_fallback",
            figures={
                "folder": self.cache_folder,
                "problem": problem.model_dump() if isinstance(problem, Finding) else problem,
                "local": str(node_local_cache_dir()),
            },
        )

    def fallback_line(self) -> str:
        """The one line that says the cells compile in node-local storage, and why."""
        return wording.say(self.fallback())


@contextlib.contextmanager
def scratch_caches(env: Mapping[str, str]) -> Iterator[tuple[Path, Path]]:
    """Fresh, empty inductor and Triton cache folders where `env` sends the cells' caches
    (inside the nearest existing folder of each, so on its filesystem), or in the temporary
    directory when it sends them to inductor's node-local default; removed afterwards."""
    folders = cache_folders(env) or [Path(tempfile.gettempdir())]
    with contextlib.ExitStack() as stack:
        made = [
            Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="torchscale-compile-",
                                                                 dir=nearest_existing(f))))
            for f in folders
        ]  # fmt: skip
        triton = made[1] if len(made) > 1 else made[0] / TRITON_SUBDIR
        yield made[0] / "inductor", triton


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _tools(verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The compiler and Python headers the child found (figures of compile.built/failed)."""
    return {
        "compiler": verdict.get("cxx") or verdict.get("c_compiler"),
        "headers": verdict.get("python_headers"),
    }


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
    """The child's verdict (None when it wrote none) as a Toolchain, its cause in one finding."""
    data: dict[str, Any] = {"probe_wall_s": round(wall_s, 2), **(verdict or {})}
    fix = [FIXES.get(device, FIXES["cpu"])]
    if timed_out:
        hung = Finding(code="compile.timed_out", figures={"device": device, "timeout_s": timeout_s})
        return Toolchain(device, False, [hung], fix, data)
    if verdict is None:
        figures: dict[str, Any] = {"why": _last_line(stderr) or None, "returncode": returncode}
        return Toolchain(
            device, False, [Finding(code="compile.no_verdict", figures=figures)], fix, data
        )
    if verdict.get("ok"):
        figures = {
            "device": device,
            "wall_s": wall_s,
            "binaries": verdict.get("binaries_built", 0),
            **_tools(verdict),
        }
        return Toolchain(device, True, [Finding(code="compile.built", figures=figures)], [], data)
    stage = verdict.get("stage")
    if stage == "triton":
        fix = [FIXES["triton"]]
    figures = {  # the same names as a PASS's, read by wording/validate_host.py
        "reason": str(verdict.get("reason") or "no reason given"),  # the child's own, quoted
        "tools": stage in ("compile", "run"),
        **_tools(verdict),
    }
    return Toolchain(device, False, [Finding(code="compile.failed", figures=figures)], fix, data)


def run_probe(
    device: str,
    base_env: Mapping[str, str],
    timeout_s: float = PROBE_TIMEOUT_S,
    python: str = sys.executable,
) -> Toolchain:
    """Compile one tiny function on `device` in a child process, with empty caches where
    `base_env` sends the cells' (`scratch_caches`)."""
    with scratch_caches(base_env) as (inductor, triton):
        out = inductor.parent / "verdict.json"
        started = time.monotonic()
        try:
            done = run_child(
                [python, "-m", WORKER_MODULE, "--device", device, "--out", str(out)],
                timeout_s,
                env={  # the ranks' environment, with the probe's own empty caches
                    **base_env,
                    INDUCTOR_CACHE_ENV: str(inductor),
                    TRITON_CACHE_ENV: str(triton),
                    "TORCHINDUCTOR_COMPILE_THREADS": "1",  # no worker pool for one kernel
                },
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
    """The part of an environment that decides whether the toolchain works (inductor's own
    default cache folder, which importing inductor writes into the environment, is no
    choice: it counts as unset)."""
    default = inductor_default_dir()
    return tuple(
        sorted(
            (k, v)
            for k, v in env.items()
            if (k in TOOLCHAIN_ENV_NAMES or k.startswith(TOOLCHAIN_ENV_PREFIXES))
            and k not in PROBE_OWN_ENV
            and not (k == INDUCTOR_CACHE_ENV and str(Path(v).absolute()) == default)
        )
    )


def _may_be_the_folder(found: Toolchain) -> bool:
    """A failed compile that a cache folder can cause: the compiler was found and ran (or the
    kernel did), torch and Triton were there; not a timeout."""
    data = found.data
    compiler = data.get("cxx") if found.device == "cpu" else data.get("c_compiler")
    return data.get("stage") in ("compile", "run") and bool(compiler)


def known_or_probed(
    device: str, env: Mapping[str, str], probe: Callable[..., Toolchain] = run_probe
) -> Toolchain:
    """A PASS kept for this machine and toolchain (its detail says from when), else a new
    probe, its PASS kept (compile_verdicts.py)."""
    folder = compile_verdicts.verdict_folder(os.environ)
    variables = [
        p for p in toolchain_key(env) if p[0] not in (INDUCTOR_CACHE_ENV, TRITON_CACHE_ENV)
    ]
    compiles_in = cache_folders(env) or [Path(tempfile.gettempdir())]
    key = compile_verdicts.verdict_key(device, variables, env, compiles_in)
    kept = compile_verdicts.recall(folder, key)
    if kept is not None:
        data = {**kept.get("data", {}), "cached_at": kept["created_at"], "kept_in": kept["path"]}
        cached = Finding(code="compile.cached", figures={"created_at": kept["created_at"]})
        return Toolchain(device, True, [*kept["findings"], cached], [], data)
    found = probe(device, env)
    if found.ok:
        compile_verdicts.remember(folder, key, found.findings, found.data)
    return found


def checked_probe(
    device: str, env: Mapping[str, str], probe: Callable[..., Toolchain] = run_probe
) -> Toolchain:
    """`device`'s verdict in the cells' cache folder; when that folder cannot hold a cache
    (its quick check, or a compile there that fails where one in node-local storage passes)
    the node-local verdict, with `cache_problem` saying why."""
    folders = cache_folders(env)
    problem: Finding | str | None = next(filter(None, map(cache_folder_problem, folders)), None)
    if problem is None:
        found = known_or_probed(device, env, probe)
        if found.ok or not folders or not _may_be_the_folder(found):
            return found
        failed = [f.model_dump() for f in found.findings]
        problem = Finding(code="compile.folder_failed", figures={"findings": failed})
    local = known_or_probed(device, {**env, **node_local_cache_env()}, probe)
    if not local.ok:
        return local
    return replace(local, cache_problem=problem, cache_folder=str(folders[0]))


_VERDICTS: dict[tuple[str, tuple[tuple[str, str], ...]], Toolchain] = {}


def toolchain_for(
    device: str, env: Mapping[str, str], probe: Callable[..., Toolchain] = checked_probe
) -> Toolchain:
    """`device`'s toolchain verdict, probed once per process for the same toolchain env."""
    key = (device, toolchain_key(env))
    if key not in _VERDICTS:
        _VERDICTS[key] = probe(device, env)
    return _VERDICTS[key]


@dataclass(frozen=True)
class ToolchainCheck:
    """`require_toolchain`'s answer: each device type's verdict, the environment the cells
    get (the given one, with the node-local cache when the experiment's folder cannot hold
    one) and, then, the one line that says so."""

    verdicts: list[Toolchain]
    env: dict[str, str]
    fallback: str | None = None


def cells_env(env: Mapping[str, str], cache_dir: PurePath | None) -> dict[str, str]:
    """What the compiled cells inherit for their cache: `env` with the experiment's cache
    folder unless the user chose their own (as launch/torchrun.py sets it)."""
    return {**env, **(compile_cache_env(cache_dir, env) if cache_dir is not None else {})}


def require_toolchain(
    devices: Iterable[str],
    env: Mapping[str, str],
    on_check: Callable[[str], None] = lambda text: None,
    cache_dir: PurePath | None = None,
) -> ToolchainCheck:
    """Each device type's verdict, compiled where the cells' cache will be (`cache_dir`: the
    experiment's compile cache folder); ToolNotFoundError with the refusal line of the first
    one that cannot compile (before any cell launches: every compiled cell would fail)."""
    probed_env = cells_env(env, cache_dir)
    verdicts = []
    fallback = None
    for device in sorted(set(devices)):
        on_check(f"checking that torch.compile builds a kernel on {device}")
        toolchain = toolchain_for(device, probed_env)
        if not toolchain.ok:
            raise ToolNotFoundError(toolchain.refusal())
        if toolchain.cache_problem and fallback is None:
            fallback = toolchain.fallback_line()
            on_check(fallback)
        on_check(f"torch.compile on {device}: {toolchain.said()}")
        verdicts.append(toolchain)
    given = {**env, **(node_local_cache_env() if fallback is not None else {})}
    return ToolchainCheck(verdicts, given, fallback)
