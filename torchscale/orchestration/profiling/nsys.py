"""Nsight Systems (`nsys`) as a profiler for torchrun launches: find it, wrap a launch, export.

Everything is data until the caller runs it: `nsys_profile_argv` and `wrap_launch` turn the
`LaunchCommand` of launch/torchrun.py into `nsys profile ... <inner argv>`; `export_sqlite` runs
`nsys export` into the SQLite that `traces/nsys_sqlite.py` reads. Every subprocess gets an argv
list (no shell) and a timeout; failures are one-line `LaunchError`s or `TraceError`s.

Where nsys comes from (`find_nsys`, first hit wins): `TORCHSCALE_NSYS` (the executable, or a
directory holding `bin/nsys` or `nsys`; set and broken is an error, never a silent fallback),
then `nsys` on PATH, then `.ci/install_nsys.sh`'s private install (`default_ci_root`). What is
traced on CPU vs GPU, how only the profiled steps are captured (and why between barriers), the
environment the report stores: docs/profiling.md, "Nsight Systems".
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from torchscale.contracts.errors import LaunchError, ToolNotFoundError, TraceError
from torchscale.contracts.finding import Finding
from torchscale.contracts.worker_spec import CAPTURE_ENV, NVTX_CAPTURE, CaptureRange
from torchscale.orchestration.launch.torchrun import LaunchCommand

NSYS_ENV = "TORCHSCALE_NSYS"  # path to the nsys executable (or its install directory)
NSYS_ROOT_ENV = "TORCHSCALE_NSYS_ROOT"  # where .ci/install_nsys.sh installs (CI cache)
UNAVAILABLE_FILE = "UNAVAILABLE"  # install_nsys.sh writes why it could not install
REPORT_SUFFIX = ".nsys-rep"
VERSION_TIMEOUT_S = 20.0
EXPORT_TIMEOUT_S = 600.0
REDACTED = "(removed by torchscale: the profiled command's environment)"

NsysSource = Literal["TORCHSCALE_NSYS", "PATH", "CI cache"]
TRACE_APIS = frozenset(
    {"cuda", "nvtx", "osrt", "cublas", "cudnn", "mpi", "ucx", "oshmem", "openmp", "none"}
)
CPU_TRACE = ("nvtx", "osrt")  # osrt: the only trace of gloo's waits (module docstring)
GPU_TRACE = ("cuda", "nvtx")
# NVTX capture ranges fire only on registered strings unless this is 0 (torch.cuda.nvtx
# registers none); read by nsys's injection library in the profiled processes
NVTX_REGISTER_ONLY_ENV = "NSYS_NVTX_PROFILER_REGISTER_ONLY"
# what each capture range needs traced, and how its end is handled (module docstring)
CAPTURE_NEEDS = {"cudaProfilerApi": "cuda", "nvtx": "nvtx"}
CAPTURE_END = {"cudaProfilerApi": "stop", "nvtx": "none"}


@dataclass(frozen=True)
class NsysInstall:
    """One working nsys: the executable, its version ('2022.4.2.1') and where it was found."""

    path: Path
    version: str
    source: NsysSource


def parse_nsys_version(text: str) -> str | None:
    """'NVIDIA Nsight Systems version 2022.4.2.1-df9881f' -> '2022.4.2.1'."""
    match = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", text)
    return match.group(1) if match else None


def default_ci_root(env: Mapping[str, str] | None = None) -> Path:
    """Where .ci/install_nsys.sh installs: $TORCHSCALE_NSYS_ROOT or ~/.cache/torchscale-ci/nsys."""
    env = os.environ if env is None else env
    if env.get(NSYS_ROOT_ENV):
        return Path(env[NSYS_ROOT_ENV]).expanduser()
    home = env.get("HOME")
    base = Path(home) if home else Path.home()
    return base / ".cache" / "torchscale-ci" / "nsys"


def nsys_version(executable: Path, timeout_s: float = VERSION_TIMEOUT_S) -> str:
    """The version `executable --version` prints; LaunchError (one line) when it does not run."""
    argv = [str(executable), "--version"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LaunchError(f"{executable} --version did not answer within {timeout_s:g} s") from exc
    except OSError as exc:
        raise LaunchError(f"{executable} does not run: {exc.strerror or exc}") from exc
    output = (proc.stdout or "") + (proc.stderr or "")
    version = parse_nsys_version(output)
    if proc.returncode != 0 or version is None:
        lines = output.strip().splitlines()
        tail = lines[-1] if lines else f"exit code {proc.returncode}"
        raise LaunchError(f"{executable} --version failed: {tail}")
    return version


def _explicit_executable(value: str) -> Path:
    path = Path(value).expanduser()
    if path.is_dir():
        for candidate in (path / "bin" / "nsys", path / "nsys"):
            if candidate.is_file():
                return candidate
        raise ToolNotFoundError(f"{NSYS_ENV}={value}: no bin/nsys or nsys in that directory")
    if not path.is_file():
        raise ToolNotFoundError(f"{NSYS_ENV}={value}: no such file")
    return path


def find_nsys(
    env: Mapping[str, str] | None = None, *, timeout_s: float = VERSION_TIMEOUT_S
) -> NsysInstall | None:
    """The nsys to use, or None when there is none (see the module docstring for the order).

    Each candidate must answer `--version`. A broken `TORCHSCALE_NSYS` raises LaunchError (the
    user asked for that one); a broken nsys on PATH or in the CI cache is skipped.
    """
    env = os.environ if env is None else env
    explicit = env.get(NSYS_ENV)
    if explicit:
        exe = _explicit_executable(explicit)
        return NsysInstall(exe, nsys_version(exe, timeout_s), "TORCHSCALE_NSYS")
    candidates: list[tuple[Path, NsysSource]] = []
    on_path = shutil.which("nsys", path=env.get("PATH"))
    if on_path:
        candidates.append((Path(on_path), "PATH"))
    cached = default_ci_root(env) / "bin" / "nsys"
    if cached.exists():
        candidates.append((cached, "CI cache"))
    for exe, source in candidates:
        try:
            return NsysInstall(exe, nsys_version(exe, timeout_s), source)
        except LaunchError:
            continue
    return None


def nsys_unavailable_reason(env: Mapping[str, str] | None = None) -> str:
    """One line saying why `find_nsys` found nothing (for skips and `--tool auto` messages)."""
    root = default_ci_root(env)
    note = root / UNAVAILABLE_FILE
    why = ""
    with contextlib.suppress(OSError):
        why = note.read_text(encoding="utf-8").strip().splitlines()[0]
    where = f"nsys not on PATH, {NSYS_ENV} not set, nothing installed in {root}"
    if why:
        return f"{where} (.ci/install_nsys.sh: {why})"
    return f"{where}; install Nsight Systems (see docs/profiling.md) or run .ci/install_nsys.sh"


def report_path(output_base: Path) -> Path:
    """The file `nsys profile -o output_base` writes: output_base + '.nsys-rep'."""
    return Path(str(_strip_report_suffix(output_base)) + REPORT_SUFFIX)


def _strip_report_suffix(output_base: Path) -> Path:
    text = str(output_base)
    return Path(text[: -len(REPORT_SUFFIX)]) if text.endswith(REPORT_SUFFIX) else output_base


def _executable(nsys: NsysInstall | Path | str) -> str:
    return str(nsys.path if isinstance(nsys, NsysInstall) else nsys)


def default_capture(gpu: bool, nvtx_records: bool = True) -> CaptureRange:
    """How the ranks start the collection: cudaProfilerApi on GPUs, an NVTX range on CPU when
    the ranks' NVTX reaches this nsys (`cpu_nvtx_records`), else none (the whole run)."""
    if gpu:
        return "cudaProfilerApi"
    return "nvtx" if nvtx_records else "none"


def cpu_nvtx_records() -> tuple[bool, Finding | None]:
    """Whether a CPU rank's NVTX (the backend torchscale/rank/worker/markers.py picks, which also
    fires the trigger) is known to record under Nsight Systems, with why not. Imports torch."""
    from torchscale.rank.worker.markers import NVTX_CPU_MAX_VERSION, nvtx_backend

    backend, note = nvtx_backend()
    if backend is None:
        return False, note
    if backend.name.startswith("nvtx ") and _release(backend.name) >= NVTX_CPU_MAX_VERSION:
        return False, note
    return True, None


def _release(name: str) -> tuple[int, ...]:
    """'nvtx 0.2.12rc1' -> (0, 2, 12)."""
    return tuple(int(part) for part in re.findall(r"\d+", name.split(" ")[-1])[:3])


def capture_argv(capture: CaptureRange) -> list[str]:
    """The `nsys profile` options of one capture range (none: no option, the whole run)."""
    if capture == "none":
        return []
    argv = [f"--capture-range={capture}", f"--capture-range-end={CAPTURE_END[capture]}"]
    if capture == "nvtx":
        argv.insert(1, f"--nvtx-capture={NVTX_CAPTURE}@*")  # either NVTX backend's domain
    return argv


def nsys_profile_argv(
    nsys: NsysInstall | Path | str,
    inner_argv: Sequence[str],
    output_base: Path,
    *,
    gpu: bool = False,
    trace: Sequence[str] | None = None,
    capture: CaptureRange | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """`nsys profile ... <inner_argv>` as an argv list.

    - `--trace` defaults to nvtx,osrt on CPU and, with `gpu`, cuda,nvtx.
    - `--capture-range...`: `capture` (default `default_capture(gpu)`; see `capture_argv`):
      only what the ranks' trigger encloses is collected, so the inner command must be
      torchscale's worker launched with `wrap_launch`'s environment; "none" for any other.
    - `--sample=none --cpuctxsw=none`: no CPU IP sampling or context-switch tracing (they need
      perf privileges, cost the most and are not read).
    - `--output=<output_base>`: nsys appends `.nsys-rep` (see `report_path`);
      `--force-overwrite=true`; `--export=none` (the SQLite is made by `export_sqlite`, with
      `--lazy=false`, which `profile --export` cannot ask for).
    - `--wait=all --stop-on-exit=true`: nsys waits for every torchrun worker to exit.
    - `extra` goes last before the inner command (e.g. `--osrt-threshold=10000`).
    """
    if not inner_argv:
        raise ValueError("nsys_profile_argv: empty inner command")
    apis = tuple(trace) if trace is not None else GPU_TRACE if gpu else CPU_TRACE
    unknown = [a for a in apis if a not in TRACE_APIS]
    if unknown or not apis:
        raise ValueError(f"nsys_profile_argv: unknown trace API(s) {unknown or apis}")
    mode = default_capture(gpu) if capture is None else capture
    needs = CAPTURE_NEEDS.get(mode)
    if needs is not None and needs not in apis:
        raise ValueError(f"nsys_profile_argv: --capture-range={mode} needs '{needs}' traced")
    return [
        _executable(nsys),
        "profile",
        f"--trace={','.join(apis)}",
        "--sample=none",
        "--cpuctxsw=none",
        *capture_argv(mode),
        f"--output={_strip_report_suffix(output_base)}",
        "--force-overwrite=true",
        "--export=none",
        "--wait=all",
        "--stop-on-exit=true",
        *extra,
        *inner_argv,
    ]


def wrap_launch(
    launch: LaunchCommand,
    nsys: NsysInstall | Path | str,
    output_base: Path,
    *,
    gpu: bool = False,
    trace: Sequence[str] | None = None,
    capture: CaptureRange | None = None,
    extra: Sequence[str] = (),
    tmp_dir: Path | None = None,
) -> LaunchCommand:
    """The same launch under `nsys profile`: argv wrapped, TMPDIR set (default: a `nsys-tmp`
    directory beside `output_base`), the ranks told which capture trigger the argv waits for
    (`capture_environment`), everything else unchanged. nsys writes its .qdstrm stream and
    injection files in TMPDIR (hundreds of MB on long GPU runs): beside the results, not /tmp.

    The one side effect: the TMPDIR directory is created, since nsys fails with only "Agent
    launcher failed." when it is missing."""
    tmp = tmp_dir if tmp_dir is not None else output_base.parent / "nsys-tmp"
    try:
        tmp.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LaunchError(f"cannot create nsys's temporary directory {tmp}: {exc}") from exc
    mode = default_capture(gpu) if capture is None else capture
    argv = nsys_profile_argv(
        nsys, launch.argv, output_base, gpu=gpu, trace=trace, capture=mode, extra=extra
    )
    added = {"TMPDIR": str(tmp), **capture_environment(mode)}
    return dataclasses.replace(
        launch,
        argv=argv,
        env={**launch.env, **added},
        env_overrides={**launch.env_overrides, **added},
    )


def capture_environment(capture: CaptureRange) -> dict[str, str]:
    """What the ranks read to fire the trigger the argv waits for (worker/capture.py)."""
    env: dict[str, str] = {CAPTURE_ENV: capture}
    if capture == "nvtx":
        env[NVTX_REGISTER_ONLY_ENV] = "0"
    return env


def expect_report(output_base: Path) -> Path:
    """The `.nsys-rep` a finished `nsys profile` left, or a one-line LaunchError saying why not."""
    rep = report_path(output_base)
    if rep.is_file() and rep.stat().st_size > 0:
        return rep
    base = _strip_report_suffix(output_base)
    # the raw stream is left beside the output or in nsys's TMPDIR (wrap_launch's default)
    streams = sorted(base.parent.glob("*.qdstrm")) + sorted(
        (base.parent / "nsys-tmp").glob("*.qdstrm")
    )
    if streams:
        raise LaunchError(
            f"nsys left only {streams[0].name}, no {rep.name}: its importer (QdstrmImporter) or "
            "the libraries it needs are missing (see the nsys install notes in docs/profiling.md)"
        )
    raise LaunchError(f"nsys wrote no report {rep}: see the nsys output above for why")


def export_sqlite(
    nsys: NsysInstall | Path | str,
    rep_path: Path,
    sqlite_path: Path | None = None,
    *,
    timeout_s: float = EXPORT_TIMEOUT_S,
    redact_environment: bool = True,
) -> Path:
    """`nsys export --type sqlite --lazy=false` of `rep_path`; returns the SQLite path.

    `--lazy=false` makes every table exist, empty ones included (a CPU capture still has
    CUPTI_ACTIVITY_KIND_KERNEL), so readers need no "table missing" cases. The SQLite stores
    the profiled command's whole environment; with `redact_environment` (default) that row is
    overwritten in place (secure_delete, so the old text is not left in free pages). Never
    publish the `.nsys-rep` itself: it still holds the environment.
    """
    if not rep_path.is_file():
        raise TraceError(f"no Nsight Systems report at {rep_path}")
    out = sqlite_path if sqlite_path is not None else rep_path.with_suffix(".sqlite")
    flags = ["--type=sqlite", "--lazy=false", "--force-overwrite=true", "--quiet=true"]
    argv = [_executable(nsys), "export", *flags, f"--output={out}", str(rep_path)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LaunchError(f"nsys export of {rep_path.name} took over {timeout_s:g} s") from exc
    except OSError as exc:
        raise LaunchError(f"nsys export could not start: {exc.strerror or exc}") from exc
    if proc.returncode != 0 or not out.is_file():
        lines = [ln for ln in (proc.stderr + proc.stdout).strip().splitlines() if ln.strip()]
        tail = lines[-1].strip() if lines else f"exit code {proc.returncode}"
        raise LaunchError(f"nsys export of {rep_path.name} failed: {tail}")
    if redact_environment:
        redact_sqlite_environment(out)
    return out


def redact_sqlite_environment(sqlite_path: Path) -> int:
    """Overwrite the stored environment of the profiled command in an exported SQLite; returns
    the number of rows changed (0 when the table or row is absent)."""
    try:
        con = sqlite3.connect(str(sqlite_path))
    except sqlite3.Error as exc:
        raise TraceError(f"{sqlite_path}: cannot open the SQLite export: {exc}") from exc
    try:
        has = con.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='TARGET_INFO_SYSTEM_ENV'"
        ).fetchone()
        if not has:
            return 0
        con.execute("PRAGMA secure_delete=ON")
        cur = con.execute(
            "UPDATE TARGET_INFO_SYSTEM_ENV SET value=? WHERE name='DeviceEnvironment'", (REDACTED,)
        )
        con.commit()
        return cur.rowcount
    except sqlite3.Error as exc:
        raise TraceError(f"{sqlite_path}: cannot redact the stored environment: {exc}") from exc
    finally:
        con.close()
