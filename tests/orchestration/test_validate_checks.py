"""Unit tests of the individual `validate` checks, the NVML probe and the runner.

No GPU, driver or nsys is needed: torch and pynvml are replaced by fakes where a check reads
them, through the context's cached properties (`ctx.__dict__["torch"]`, `ctx.__dict__["nvml"]`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.fake_nvml import (
    NOT_SUPPORTED,
    FakeGpu,
    FakeNvml,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
    NVMLError_NotSupported,
    NVMLError_Unknown,
)
from torchscale.contracts import host
from torchscale.contracts.finding import Finding
from torchscale.contracts.nvml import NvmlState, nvml_indices, probe_nvml
from torchscale.contracts.wording import say
from torchscale.contracts.wording import validate_measured as shown
from torchscale.orchestration.launch.torchrun_env import is_inherited_distributed_var
from torchscale.orchestration.profiling.nsys import parse_nsys_version
from torchscale.orchestration.validate import (
    checks_gpu,
    checks_software,
    checks_system,
    requirements,
)
from torchscale.orchestration.validate import run_checks as runner
from torchscale.orchestration.validate.check_context import TorchState, ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    passed,
    skipped,
    warned,
)
from torchscale.orchestration.validate.checks_gpu import (
    check_cuda,
    check_cuda_compat,
    check_driver,
    check_ecc,
    check_gpus,
    check_persistence,
    check_throttle,
    cuda_compatibility,
    decode_clock_reasons,
)
from torchscale.orchestration.validate.checks_nvlink import check_p2p
from torchscale.orchestration.validate.checks_software import (
    NEEDS_TORCH,
    SLOW_NCCL_SETTINGS,
    check_env,
    check_gloo,
    check_nccl,
    check_nsys,
    check_python,
    check_torch,
    check_torchrun,
    torch_build,
)
from torchscale.orchestration.validate.checks_system import (
    check_cpu,
    check_disk,
    check_infiniband,
    check_open_files,
    check_shm,
)
from torchscale.orchestration.validate.smoke import check_smoke

GIB = 2**30
MIB = 2**20
NO_NVML = NvmlState(None, "libnvidia-ml.so not found (no NVIDIA driver on this node)")


# --------------------------------------------------------------------------------- helpers


def make_ctx(
    device: str = "cuda",
    *,
    output_dir: Path | None = None,
    quick: bool = True,
    torch: TorchState | None = None,
    nvml: NvmlState | None = None,
) -> ValidateContext:
    """A context whose lazily probed facts can be replaced by fakes."""
    ctx = ValidateContext(
        device=device,
        output_dir=output_dir or Path.cwd(),
        quick=quick,
    )
    if torch is not None:
        ctx.__dict__["torch"] = torch
    if nvml is not None:
        ctx.__dict__["nvml"] = nvml
    return ctx


def fake_torch(
    *,
    version: str = "2.7.1+cu124",
    cuda: str | None = "12.4",
    hip: str | None = None,
    gpus: int = 2,
    gpu_name: str = "NVIDIA A100-SXM4-40GB",
    peer: Any = None,
    nccl: bool = True,
    nccl_version: Any = (2, 21, 5),
    gloo: bool = True,
    cuda_error: Exception | None = None,
    uuids: list[str] | None = None,
) -> TorchState:
    """A TorchState over a duck-typed stand-in for a CUDA (or CPU/ROCm) build of torch.
    `uuids`: what get_device_properties(i).uuid prints per CUDA ordinal (bare, as torch does)."""

    def is_available() -> bool:
        if cuda_error is not None:
            raise cuda_error
        return gpus > 0

    def nccl_version_fn() -> Any:
        if isinstance(nccl_version, Exception):
            raise nccl_version
        return nccl_version

    module = SimpleNamespace(
        __version__=version,
        version=SimpleNamespace(cuda=cuda, hip=hip),
        cuda=SimpleNamespace(
            is_available=is_available,
            device_count=lambda: gpus,
            can_device_access_peer=peer or (lambda a, b: True),
            get_device_properties=lambda i: SimpleNamespace(
                name=gpu_name,
                total_memory=40 * GIB,
                major=8,
                minor=0,
                uuid=uuids[i] if uuids is not None else None,
            ),
            nccl=SimpleNamespace(version=nccl_version_fn),
        ),
        distributed=SimpleNamespace(
            is_available=lambda: True,
            is_nccl_available=lambda: nccl,
            is_gloo_available=lambda: gloo,
        ),
    )
    return TorchState(module, None)


NO_TORCH = TorchState(None, "ImportError: x")
ALL_CHECK_IDS = [
    "python",
    "torch",
    "cpu",
    "cuda",
    "gpus",
    "driver",
    "cuda_compat",
    "nccl",
    "gloo",
    "torchrun",
    "nsys",
    "compile",
    "p2p",
    "nvlink",
    "fabric",
    "gpu_settings",
    "ecc",
    "persistence",
    "throttle",
    "shm",
    "open_files",
    "infiniband",
    "env",
    "disk",
    "smoke",
]


def gpu_ctx(
    fake: FakeNvml,
    *,
    device: str = "cuda",
    torch: TorchState | None = None,
    cuda_driver: tuple[int, int] | None = (12, 4),
) -> ValidateContext:
    visible = [g.uuid.removeprefix("GPU-") for g in fake.gpus]  # every GPU, in NVML's order
    return make_ctx(
        device,
        torch=torch or fake_torch(gpus=len(fake.gpus), uuids=visible),
        nvml=fake.state(cuda_driver),
    )


# ------------------------------------------------------------------------- software checks


def test_python_passes_on_this_interpreter() -> None:
    result = check_python(make_ctx())
    assert result.status is CheckStatus.PASS
    assert result.data["version"] == ".".join(map(str, sys.version_info[:3]))
    assert sys.executable in shown.detail(result)


def test_torch_real_install_passes() -> None:
    import torch

    result = check_torch(make_ctx())
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert result.data["version"] == str(torch.__version__)
    assert result.data["build"] == torch_build(torch)


@pytest.mark.parametrize("version", ["1.13.1+cu117", "2.1.2+cu121", "2.5.1+cu124"])
def test_torch_below_the_floor_fails(version: str) -> None:
    result = check_torch(make_ctx(torch=fake_torch(version=version)))
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result) == f"torch {version}, CUDA 12.4 build; torchscale needs >= 2.6"
    assert shown.hint(result).startswith("upgrade to torch >= 2.6 (FSDP2's fully_shard")


@pytest.mark.parametrize("version", ["2.6.0+cu124", "2.6.0a0+git1234abc", "2.13.0+cpu", "3.0.0"])
def test_torch_at_or_above_the_floor_passes(version: str) -> None:
    result = check_torch(make_ctx(torch=fake_torch(version=version)))
    assert result.status is CheckStatus.PASS, shown.detail(result)


def _pyproject_floor(name: str, text: str) -> tuple[int, ...]:
    """The `>=` floor pyproject.toml declares for `name` (torch or requires-python)."""
    pattern = r'"torch>=([\d.]+)"' if name == "torch" else r'requires-python = ">=([\d.]+)"'
    found = re.findall(pattern, text)
    assert len(found) == 1, f"expected one {name} floor in pyproject.toml, found {found}"
    return tuple(int(x) for x in found[0].split("."))


def test_pyproject_declares_the_floors_validate_checks() -> None:
    """One floor: what pip installs against is what `validate` demands (MIN_TORCH)."""
    text = (Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert _pyproject_floor("torch", text) == requirements.MIN_TORCH == (2, 6)
    assert _pyproject_floor("python", text) == requirements.MIN_PYTHON
    assert checks_software.MIN_TORCH is requirements.MIN_TORCH


def test_torch_hints_name_the_floor() -> None:
    missing = check_torch(make_ctx(torch=NO_TORCH))
    assert shown.hint(missing).startswith("install PyTorch >= 2.6 ")


@pytest.mark.parametrize(
    ("cuda", "hip", "expected"),
    [("12.4", None, "CUDA 12.4"), (None, "6.1.40091", "ROCm 6.1.40091"), (None, None, "CPU-only")],
)
def test_torch_build(cuda: str | None, hip: str | None, expected: str) -> None:
    assert torch_build(SimpleNamespace(version=SimpleNamespace(cuda=cuda, hip=hip))) == expected


def test_torch_missing_fails_and_dependent_checks_skip() -> None:
    ctx = make_ctx("cuda", torch=NO_TORCH, nvml=NO_NVML)
    torch_result = check_torch(ctx)
    assert torch_result.status is CheckStatus.FAIL
    assert "cannot import torch: ImportError: x" in shown.detail(torch_result)
    assert "install PyTorch" in shown.hint(torch_result)

    for check in (check_gloo, check_nccl):
        result = check(ctx)
        assert result.status is CheckStatus.SKIP, result
        assert result.findings == [NEEDS_TORCH]
    assert check_cuda_compat(ctx).status is CheckStatus.SKIP
    p2p = check_p2p(ctx)
    assert p2p.status is CheckStatus.SKIP
    assert "found 0" in shown.detail(p2p)
    cuda = check_cuda(ctx)
    assert cuda.status is CheckStatus.FAIL
    assert cuda.findings == [NEEDS_TORCH]
    gpus = check_gpus(ctx)
    assert gpus.status is CheckStatus.FAIL
    assert "no GPU found (NVML unavailable" in shown.detail(gpus)
    smoke = check_smoke(make_ctx("cpu", quick=False, torch=NO_TORCH, nvml=NO_NVML), {})
    assert [(r.id, r.status) for r in smoke] == [("smoke", CheckStatus.SKIP)]
    assert "needs torch" in shown.detail(smoke[0])


def test_torch_import_error_is_caught_by_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    state = ValidateContext(device="cpu", output_dir=Path.cwd(), quick=True).torch
    assert state.module is None
    assert state.error is not None
    assert state.error.startswith("ModuleNotFoundError")
    assert state.cuda_gpu_count == 0


def test_validation_without_torch_completes_quick() -> None:
    ctx = make_ctx("cuda", quick=True, torch=NO_TORCH, nvml=NO_NVML)
    report = runner.run_validation(ctx, base_env={})
    assert [r.id for r in report.checks] == ALL_CHECK_IDS
    by_id = {r.id: r for r in report.checks}
    assert by_id["torch"].status is CheckStatus.FAIL
    assert by_id["gloo"].status is CheckStatus.SKIP
    assert by_id["nccl"].status is CheckStatus.SKIP
    assert by_id["smoke"].status is CheckStatus.SKIP
    assert not any("crashed" in shown.detail(r) for r in report.checks)
    assert report.ok is False
    assert "verdict" not in report.model_dump()  # the conclusion is its code and figures
    verdict = say(report.verdict_basis)
    assert verdict.startswith(
        "GPU training is impossible on this node: torch cannot be imported (ImportError: x)."
    )
    assert "--device cpu" in verdict
    assert sum(report.counts.values()) == len(report.checks)


def test_validation_without_torch_does_not_launch_smoke(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_launch(*args: object, **kwargs: object) -> CheckResult:
        raise AssertionError("run_smoke must not be called without torch")

    monkeypatch.setattr("torchscale.orchestration.validate.smoke.run_smoke", no_launch)
    ctx = make_ctx("cpu", quick=False, torch=NO_TORCH, nvml=NO_NVML)
    report = runner.run_validation(ctx, base_env={})
    smoke = report.checks[-1]
    assert (smoke.id, smoke.status) == ("smoke", CheckStatus.SKIP)
    assert "needs torch" in shown.detail(smoke)


@pytest.mark.parametrize(
    ("device", "status"), [("cpu", CheckStatus.FAIL), ("cuda", CheckStatus.WARN)]
)
def test_gloo_missing(device: str, status: CheckStatus) -> None:
    result = check_gloo(make_ctx(device, torch=fake_torch(gloo=False)))
    assert result.status is status
    assert "not available" in shown.detail(result)


def test_gloo_available_passes() -> None:
    assert check_gloo(make_ctx("cpu", torch=fake_torch())).status is CheckStatus.PASS


def test_nccl_skipped_on_cpu_path() -> None:
    result = check_nccl(make_ctx("cpu", torch=fake_torch()))
    assert result.status is CheckStatus.SKIP
    assert "--device cpu" in shown.detail(result)


def test_nccl_not_built_fails() -> None:
    result = check_nccl(make_ctx("cuda", torch=fake_torch(nccl=False)))
    assert result.status is CheckStatus.FAIL
    assert "not available in torch 2.7.1+cu124 (CUDA 12.4)" in shown.detail(result)
    assert "CUDA build of PyTorch" in shown.hint(result)


def test_nccl_unloadable_fails() -> None:
    result = check_nccl(make_ctx(torch=fake_torch(nccl_version=OSError("libnccl.so.2: nope"))))
    assert result.status is CheckStatus.FAIL
    assert (
        shown.detail(result) == "torch reports NCCL but cannot load it: OSError: libnccl.so.2: nope"
    )


def test_nccl_version_passes() -> None:
    result = check_nccl(make_ctx(torch=fake_torch(nccl_version=(2, 21, 5))))
    assert result.status is CheckStatus.PASS
    assert shown.detail(result) == "NCCL 2.21.5"
    assert result.data == {"version": "2.21.5"}


# ------------------------------------------------------------------------------ host probes


def test_host_probes_ask_the_torch_they_are_given() -> None:
    """validate hands host.py the torch it holds (here a stand-in): one probe for every command."""
    assert host.cuda_gpu_count(fake_torch(gpus=8).module) == 8
    assert host.cuda_gpu_count(fake_torch(gpus=0).module) == 0
    broken = fake_torch(cuda_error=RuntimeError("CUDA driver initialization failed"))
    assert host.cuda_gpu_count(broken.module) == 0
    assert host.probe_nccl_version(fake_torch(nccl_version=(2, 21, 5)).module) == ("2.21.5", None)
    assert host.nccl_version(fake_torch(nccl_version=(2, 27, 3)).module) == "2.27.3"
    unloadable = fake_torch(nccl_version=OSError("libnccl.so.2: nope")).module
    assert host.probe_nccl_version(unloadable) == (None, "OSError: libnccl.so.2: nope")
    assert host.nccl_version(unloadable) is None


@pytest.mark.slow
def test_the_gpu_memory_probe_asks_torch_in_a_child_and_says_why_not(tmp_path: Path) -> None:
    """batch_sizes: auto reads the smallest GPU's memory from torch in a child process (what
    the ranks will see, no CUDA context left in the host): a CPU build sees no GPU, a child
    that prints the totals is read, one that fails or hangs is one line, never a traceback."""
    assert host.smallest_gpu_memory() == (None, "torch sees no GPU")  # this CPU torch build
    fake = tmp_path / "fake_python"
    fake.write_text("#!/bin/sh\necho 'CUDA init noise'\necho '[85520809984, 42949672960]'\n")
    fake.chmod(0o755)
    assert host.smallest_gpu_memory(str(fake)) == (42949672960, None)
    failing = tmp_path / "failing_python"
    failing.write_text("#!/bin/sh\necho 'RuntimeError: No CUDA GPUs are available' >&2\nexit 1\n")
    failing.chmod(0o755)
    memory, why = host.smallest_gpu_memory(str(failing))
    assert memory is None
    assert why == "torch could not read the GPUs' memory (RuntimeError: No CUDA GPUs are available)"
    hanging = tmp_path / "hanging_python"
    hanging.write_text("#!/bin/sh\nexec sleep 30\n")
    hanging.chmod(0o755)
    assert host.smallest_gpu_memory(str(hanging), timeout_s=0.5) == (
        None,
        "torch did not report the GPUs' memory within 0.5 s",
    )
    memory, why = host.smallest_gpu_memory(str(tmp_path / "absent"))
    assert memory is None and why is not None and why.startswith("cannot start ")


def test_host_probes_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    assert host.cuda_gpu_count() == 0
    version, error = host.probe_nccl_version()
    assert version is None
    assert error is not None
    assert error.startswith("ModuleNotFoundError")


def test_context_counts_gpus_with_the_host_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []

    def count(torch: Any = None) -> int:
        asked.append(torch)
        return 3

    monkeypatch.setattr(host, "cuda_gpu_count", count)
    state = fake_torch(gpus=1)
    assert state.cuda_gpu_count == 3
    assert asked == [state.module]
    assert NO_TORCH.cuda_gpu_count == 0
    assert asked == [state.module]  # no torch: nothing to ask (host would import its own)


def test_torchrun_not_on_path_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks_software.shutil, "which", lambda name: None)
    result = check_torchrun(make_ctx())
    assert result.status is CheckStatus.WARN
    assert f"{sys.executable} -m torch.distributed.run" in shown.detail(result)


def test_torchrun_on_path_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks_software.shutil, "which", lambda name: f"/opt/bin/{name}")
    result = check_torchrun(make_ctx())
    assert result.status is CheckStatus.PASS
    assert result.data["path"] == "/opt/bin/torchrun"


# ------------------------------------------------------------------------------------ nsys


def fake_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """An executable `nsys` shell script first on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nsys"
    exe.write_text("#!/bin/sh\n" + script + "\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return exe


NSYS = "/opt/nsys/bin/nsys"


def nsys_answering(
    monkeypatch: pytest.MonkeyPatch,
    returncode: int = 0,
    stdout: str = "",
    stderr: str = "",
    raises: BaseException | None = None,
) -> list[tuple[list[str], dict[str, Any]]]:
    """nsys on PATH at NSYS, its `--version` answered in-process: the one call that runs it
    (check_nsys's subprocess.run) returns what the nsys would have printed, or raises `raises`;
    the calls made, with their keyword arguments."""
    calls: list[tuple[list[str], dict[str, Any]]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append((list(argv), kwargs))
        if raises is not None:
            raise raises
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)

    monkeypatch.setattr(checks_software.shutil, "which", lambda name: NSYS)
    only_here = SimpleNamespace(run=run, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(checks_software, "subprocess", only_here)
    return calls


def test_nsys_missing_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks_software.shutil, "which", lambda name: None)
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert shown.detail(result) == "nsys not found on PATH"
    assert "Nsight Systems" in shown.hint(result)


@pytest.mark.slow  # starts an nsys command
def test_nsys_present_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = fake_nsys(
        tmp_path, monkeypatch, "echo 'NVIDIA Nsight Systems version 2023.4.1.97-32~g1d2a3b4'"
    )
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert result.data == {"path": str(exe), "version": "2023.4.1.97"}
    assert shown.detail(result) == f"nsys 2023.4.1.97 at {exe}"


def test_nsys_present_passes_with_the_version_its_answer_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = nsys_answering(
        monkeypatch, stdout="NVIDIA Nsight Systems version 2023.4.1.97-32~g1d2a3b4\n"
    )
    result = check_nsys(make_ctx())
    assert [argv for argv, _ in calls] == [[NSYS, "--version"]]
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert result.data == {"path": NSYS, "version": "2023.4.1.97"}
    assert shown.detail(result) == f"nsys 2023.4.1.97 at {NSYS}"


@pytest.mark.slow  # starts an nsys command
def test_nsys_failing_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nsys(
        tmp_path,
        monkeypatch,
        "echo 'starting' ; echo 'nsys: fatal: cannot load libQt6' >&2 ; exit 3",
    )
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "--version failed: nsys: fatal: cannot load libQt6" in shown.detail(result)


def test_nsys_failing_warns_with_the_last_line_it_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    nsys_answering(
        monkeypatch, returncode=3, stdout="starting\n", stderr="nsys: fatal: cannot load libQt6\n"
    )
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "--version failed: nsys: fatal: cannot load libQt6" in shown.detail(result)


@pytest.mark.slow  # starts an nsys command
def test_nsys_exit_status_matters_even_with_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_nsys(
        tmp_path,
        monkeypatch,
        "echo 'NVIDIA Nsight Systems version 2023.4.1.97-32'; echo 'license expired'; exit 1",
    )
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "--version failed: license expired" in shown.detail(result)


def test_nsys_warns_read_from_its_exit_status_even_with_a_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nsys_answering(
        monkeypatch,
        returncode=1,
        stdout="NVIDIA Nsight Systems version 2023.4.1.97-32\nlicense expired\n",
    )
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "--version failed: license expired" in shown.detail(result)


@pytest.mark.slow  # starts an nsys command
def test_nsys_failing_silently_warns_with_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_nsys(tmp_path, monkeypatch, "exit 7")
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "--version failed: exit code 7" in shown.detail(result)


def test_nsys_failing_silently_warns_with_the_exit_code_it_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nsys_answering(monkeypatch, returncode=7)
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "--version failed: exit code 7" in shown.detail(result)


@pytest.mark.slow  # starts an nsys command
def test_nsys_hanging_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nsys(tmp_path, monkeypatch, "exec sleep 30")
    monkeypatch.setattr(checks_software, "NSYS_TIMEOUT_S", 0.5)
    result = check_nsys(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "does not run" in shown.detail(result)
    assert "timed out" in shown.detail(result)


def test_nsys_that_outlives_its_timeout_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    timeout = subprocess.TimeoutExpired([NSYS, "--version"], checks_software.NSYS_TIMEOUT_S)
    calls = nsys_answering(monkeypatch, raises=timeout)
    result = check_nsys(make_ctx())
    assert [kwargs["timeout"] for _, kwargs in calls] == [checks_software.NSYS_TIMEOUT_S]
    assert result.status is CheckStatus.WARN
    assert "does not run" in shown.detail(result)
    assert "timed out" in shown.detail(result)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NVIDIA Nsight Systems version 2023.4.1.97-32~g1d2a3b4", "2023.4.1.97"),
        ("NVIDIA Nsight Systems version 2022.4.2.1-df9881f", "2022.4.2.1"),
        ("NVIDIA Nsight Systems version 2024.5", "2024.5"),
        ("command not found", None),
    ],
)
def test_parse_nsys_version(text: str, expected: str | None) -> None:
    assert parse_nsys_version(text) == expected


# ----------------------------------------------------------------------------- environment


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No variable the environment check complains about."""
    for name in list(os.environ):
        if (
            is_inherited_distributed_var(name)
            or name in SLOW_NCCL_SETTINGS
            or name == "CUDA_VISIBLE_DEVICES"
        ):
            monkeypatch.delenv(name)
    return monkeypatch


def test_environment_clean_passes(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NCCL_DEBUG", "INFO")
    result = check_env(make_ctx())
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert result.data["variables"]["NCCL_DEBUG"] == "INFO"
    assert result.data["inherited_distributed"] == []
    assert "NCCL_DEBUG=INFO" in shown.detail(result)


@pytest.mark.parametrize("value", ["", "-1"])
def test_environment_hidden_gpus_warn(clean_env: pytest.MonkeyPatch, value: str) -> None:
    clean_env.setenv("CUDA_VISIBLE_DEVICES", value)
    result = check_env(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "CUDA_VISIBLE_DEVICES hides every GPU" in shown.detail(result)
    assert "unset CUDA_VISIBLE_DEVICES" in shown.hint(result)


def test_environment_visible_gpus_pass(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert check_env(make_ctx()).status is CheckStatus.PASS


def test_environment_disabled_transport_warns(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NCCL_P2P_DISABLE", "1")
    result = check_env(make_ctx())
    assert result.status is CheckStatus.WARN
    assert "transport(s) switched off: NCCL_P2P_DISABLE=1" in shown.detail(result)


def test_environment_transport_explicitly_enabled_passes(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NCCL_P2P_DISABLE", "0")
    assert check_env(make_ctx()).status is CheckStatus.PASS


@pytest.mark.parametrize("name", ["RANK", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "PET_NNODES"])
def test_environment_leftover_launcher_var_warns(clean_env: pytest.MonkeyPatch, name: str) -> None:
    clean_env.setenv(name, "3")
    result = check_env(make_ctx())
    assert result.status is CheckStatus.WARN
    assert f"inherited launcher variables: {name}" in shown.detail(result)
    assert result.data["inherited_distributed"] == [name]


# -------------------------------------------------------------------------------- GPU: cuda


def test_gpu_checks_skip_on_cpu_path() -> None:
    ctx = gpu_ctx(FakeNvml([FakeGpu(ecc_uncorrected_volatile=5)]), device="cpu")
    for check in (
        check_cuda,
        check_gpus,
        check_driver,
        check_cuda_compat,
        check_p2p,
        check_ecc,
        check_persistence,
        check_throttle,
    ):
        result = check(ctx)
        assert result.status is CheckStatus.SKIP, result
        assert result.findings == [checks_gpu.CPU_SKIP]
        assert shown.detail(result) == "--device cpu: GPU checks are not run"


def test_cuda_cpu_only_build_fails() -> None:
    result = check_cuda(make_ctx(torch=fake_torch(version="2.7.1+cpu", cuda=None, gpus=0)))
    assert result.status is CheckStatus.FAIL
    assert "torch 2.7.1+cpu is a CPU-only build" in shown.detail(result)
    assert "--device cpu" in shown.hint(result)


def test_cuda_build_without_devices_fails() -> None:
    result = check_cuda(make_ctx(torch=fake_torch(gpus=0)))
    assert result.status is CheckStatus.FAIL
    assert "CUDA 12.4 build, but no CUDA device is usable" in shown.detail(result)
    assert result.data == {"device_count": 0}


def test_cuda_raising_driver_fails() -> None:
    torch = fake_torch(cuda_error=RuntimeError("CUDA driver initialization failed"))
    result = check_cuda(make_ctx(torch=torch))
    assert result.status is CheckStatus.FAIL
    assert "torch.cuda raised RuntimeError: CUDA driver initialization failed" in shown.detail(
        result
    )
    assert torch.cuda_gpu_count == 0  # the context's count survives the same failure


def test_cuda_with_devices_passes() -> None:
    result = check_cuda(make_ctx(torch=fake_torch(gpus=4)))
    assert result.status is CheckStatus.PASS
    assert shown.detail(result) == "4 device(s) usable by torch (CUDA 12.4)"
    assert result.data == {"device_count": 4, "cuda_runtime": "12.4"}


# -------------------------------------------------------------------------------- GPU: list


def test_gpus_from_nvml_pass() -> None:
    fake = FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-1", bus_id="00000000:2A:00.0")])
    result = check_gpus(gpu_ctx(fake))
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert shown.detail(result).startswith(
        "2 GPU(s) via NVML: 0: NVIDIA H100 80GB HBM3 80 GiB sm_9.0; 1:"
    )
    first, second = result.data["gpus"]
    assert first["memory_total_bytes"] == 80 * GIB
    assert first["compute_capability"] == "9.0"
    assert second["pci_bus_id"] == "00000000:2A:00.0"


def test_gpus_mixed_models_warn() -> None:
    fake = FakeNvml([FakeGpu(), FakeGpu(name="NVIDIA A100-SXM4-80GB", compute_capability=(8, 0))])
    result = check_gpus(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    assert "mixed GPU models" in shown.hint(result)
    assert "1: NVIDIA A100-SXM4-80GB 80 GiB sm_8.0" in shown.detail(result)


def test_gpus_unreadable_gpu_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([FakeGpu(), FakeGpu(unreadable=True)]))
    result = check_gpus(make_ctx("cuda", torch=fake_torch(gpus=2), nvml=probe_nvml()))
    assert result.status is CheckStatus.FAIL
    assert shown.detail(result).startswith("NVML cannot read GPU 1 (NVMLError_Unknown")
    assert "Xid" in shown.hint(result)


def test_gpus_unqueryable_memory_still_listed() -> None:
    fake = FakeNvml([FakeGpu(memory_total=NOT_SUPPORTED, compute_capability=NOT_SUPPORTED)])
    result = check_gpus(gpu_ctx(fake))
    assert result.status is CheckStatus.PASS
    assert "0: NVIDIA H100 80GB HBM3 ? GiB sm_?" in shown.detail(result)


def test_gpus_fall_back_to_torch_without_nvml() -> None:
    result = check_gpus(make_ctx(torch=fake_torch(gpus=2), nvml=NO_NVML))
    assert result.status is CheckStatus.PASS
    assert "2 GPU(s) via torch (NVML unavailable)" in shown.detail(result)
    assert "0: NVIDIA A100-SXM4-40GB 40 GiB sm_8.0" in shown.detail(result)


def test_gpus_none_anywhere_fails() -> None:
    result = check_gpus(make_ctx(torch=fake_torch(gpus=0), nvml=NO_NVML))
    assert result.status is CheckStatus.FAIL
    assert "no GPU found (NVML unavailable: libnvidia-ml.so not found" in shown.detail(result)


def test_gpus_nvml_lists_none_fails() -> None:
    result = check_gpus(gpu_ctx(FakeNvml([]), torch=fake_torch(gpus=0)))
    assert result.status is CheckStatus.FAIL
    assert "NVML lists no GPU" in shown.detail(result)


# ------------------------------------------------------------------------------ GPU: driver


def test_driver_passes_with_version() -> None:
    fake = FakeNvml(driver_version="550.54.15")
    result = check_driver(gpu_ctx(fake, cuda_driver=(12, 4)))
    assert result.status is CheckStatus.PASS
    assert "550.54.15" in shown.detail(result)
    assert shown.detail(result) == "driver 550.54.15, supports CUDA up to 12.4"
    assert result.data == {"driver_version": "550.54.15", "cuda_driver_version": "12.4"}


def test_driver_unknown_cuda_version_still_passes() -> None:
    result = check_driver(gpu_ctx(FakeNvml(driver_version="535.104.05"), cuda_driver=None))
    assert result.status is CheckStatus.PASS
    assert shown.detail(result) == "driver 535.104.05"


def test_driver_without_nvml_fails() -> None:
    result = check_driver(make_ctx(nvml=NO_NVML))
    assert result.status is CheckStatus.FAIL
    assert "NVML unavailable: libnvidia-ml.so not found" in shown.detail(result)
    assert "nvidia-smi" in shown.hint(result)


@pytest.mark.parametrize(
    ("runtime", "driver", "expected"),
    [
        ((12, 4), (11, 8), "too_old"),
        ((12, 4), (12, 2), "minor"),
        ((12, 4), (12, 6), "ok"),
        ((12, 4), (12, 4), "ok"),
        ((12, 4), (13, 0), "ok"),
        ((11, 8), (12, 0), "ok"),
    ],
)
def test_cuda_compatibility(
    runtime: tuple[int, int], driver: tuple[int, int], expected: str
) -> None:
    assert cuda_compatibility(runtime, driver) == expected


@pytest.mark.parametrize(
    ("driver", "status", "fragment"),
    [
        ((11, 8), CheckStatus.FAIL, "driver supports up to 11.8"),
        ((12, 2), CheckStatus.WARN, "minor-version compatibility mode"),
        ((12, 6), CheckStatus.PASS, "torch built with CUDA 12.4; driver supports up to 12.6"),
    ],
)
def test_cuda_compat_check(driver: tuple[int, int], status: CheckStatus, fragment: str) -> None:
    result = check_cuda_compat(
        gpu_ctx(FakeNvml(), torch=fake_torch(cuda="12.4"), cuda_driver=driver)
    )
    assert result.status is status
    assert fragment in shown.detail(result)
    assert result.data["runtime"] == "12.4"
    assert result.data["driver"] == f"{driver[0]}.{driver[1]}"


def test_cuda_compat_too_old_hint_names_both_ways_out() -> None:
    result = check_cuda_compat(
        gpu_ctx(FakeNvml(), torch=fake_torch(cuda="12.4"), cuda_driver=(11, 8))
    )
    assert "supporting CUDA 12.4" in shown.hint(result)
    assert "PyTorch build for CUDA 11.x" in shown.hint(result)


def test_cuda_compat_skips_without_cuda_runtime_or_driver_version() -> None:
    no_runtime = check_cuda_compat(gpu_ctx(FakeNvml(), torch=fake_torch(cuda=None)))
    assert no_runtime.status is CheckStatus.SKIP
    assert "not a CUDA build" in shown.detail(no_runtime)
    no_driver = check_cuda_compat(make_ctx(torch=fake_torch(), nvml=NO_NVML))
    assert no_driver.status is CheckStatus.SKIP
    assert "driver's CUDA version unknown" in shown.detail(no_driver)


# --------------------------------------------------------------------------------- GPU: p2p


def uuid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


def test_p2p_full_access_passes_and_counts_nvlinks() -> None:
    fake = FakeNvml(
        [
            FakeGpu(uuid=f"GPU-{uuid(0)}", nvlinks=[True] * 4),
            FakeGpu(uuid=f"GPU-{uuid(1)}", nvlinks=[True, True, False]),
        ]
    )
    result = check_p2p(gpu_ctx(fake))
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert "peer access 2/2 pairs" in shown.detail(result)
    assert "cuda:0 (NVML 0): 4 active, cuda:1 (NVML 1): 2 active" in shown.detail(result)
    assert result.data["active_nvlinks"] == {0: 4, 1: 2}


def test_p2p_names_nvlinks_by_cuda_ordinal_under_a_visible_subset() -> None:
    """CUDA_VISIBLE_DEVICES=3,1 on a 4-GPU node: cuda:0 is NVML GPU 3 and cuda:1 NVML GPU 1;
    their NVLink counts follow them by UUID (NVML GPU i has i + 1 links here)."""
    fake = FakeNvml([FakeGpu(uuid=f"GPU-{uuid(i)}", nvlinks=[True] * (i + 1)) for i in range(4)])
    torch = fake_torch(gpus=2, uuids=[uuid(3), uuid(1)])
    result = check_p2p(gpu_ctx(fake, torch=torch))
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert "NVLink cuda:0 (NVML 3): 4 active, cuda:1 (NVML 1): 2 active" in shown.detail(result)
    assert result.data["active_nvlinks"] == {0: 4, 1: 2}
    assert result.data["nvml_index"] == {0: 3, 1: 1}
    assert set(result.data["peer_access"]) == {"0->1", "1->0"}  # CUDA ordinals too


def test_p2p_ordinal_without_an_nvml_match_is_unknown_not_borrowed() -> None:
    fake = FakeNvml([FakeGpu(uuid=f"GPU-{uuid(i)}", nvlinks=[True]) for i in range(2)])
    torch = fake_torch(gpus=2, uuids=[uuid(1), "MIG-feedface"])  # e.g. a MIG slice
    result = check_p2p(gpu_ctx(fake, torch=torch))
    assert "cuda:0 (NVML 1): 1 active" in shown.detail(result)
    assert "cuda:1: unknown (no NVML GPU with its UUID)" in shown.detail(result)
    assert result.data["active_nvlinks"] == {0: 1}


@pytest.mark.parametrize(
    ("torch_uuids", "nvml_uuids", "expected"),
    [
        # every GPU visible, in NVML's order
        (["a", "b"], ["GPU-a", "GPU-b"], [0, 1]),
        # CUDA_VISIBLE_DEVICES=2,0: a subset, reordered
        (["c", "a"], ["GPU-a", "GPU-b", "GPU-c"], [2, 0]),
        # torch may print a prefix or capitals; NVML's unreadable GPU has no UUID
        (["GPU-C", "b"], ["GPU-a", "", "GPU-c"], [2, None]),
        # no UUID from torch, or a MIG slice's: no NVML GPU of the list is it
        ([None, "MIG-a"], ["GPU-a", "GPU-x"], [None, None]),
    ],
)
def test_nvml_indices_maps_cuda_ordinals_by_uuid(
    torch_uuids: list[str | None], nvml_uuids: list[str], expected: list[int | None]
) -> None:
    assert nvml_indices(torch_uuids, nvml_uuids) == expected


def test_p2p_missing_pair_warns() -> None:
    torch = fake_torch(gpus=2, peer=lambda a, b: (a, b) != (1, 0))
    result = check_p2p(gpu_ctx(FakeNvml([FakeGpu(), FakeGpu()]), torch=torch))
    assert result.status is CheckStatus.WARN
    assert "peer access 1/2 pairs" in shown.detail(result)
    assert "no peer access: 1->0" in shown.detail(result)
    assert result.data["peer_access"] == {"0->1": True, "1->0": False}


def test_p2p_without_nvml_reports_unknown_links() -> None:
    result = check_p2p(make_ctx(torch=fake_torch(gpus=2), nvml=NO_NVML))
    assert result.status is CheckStatus.PASS
    assert "NVLink state unknown" in shown.detail(result)


def test_p2p_single_gpu_skips() -> None:
    result = check_p2p(gpu_ctx(FakeNvml(), torch=fake_torch(gpus=1)))
    assert result.status is CheckStatus.SKIP
    assert "found 1" in shown.detail(result)


# --------------------------------------------------------------------------------- GPU: ECC


def test_ecc_clean_passes_and_queries_volatile_uncorrected() -> None:
    fake = FakeNvml([FakeGpu(), FakeGpu()])
    result = check_ecc(gpu_ctx(fake))
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert result.data["gpus"][0] == {
        "uncorrected_volatile": 0,
        "retired_pages_pending": False,
        "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
    }
    queries = fake.called("nvmlDeviceGetTotalEccErrors")
    assert len(queries) == 2
    assert all(
        args[1:] == (fake.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, fake.NVML_VOLATILE_ECC)
        for args in queries
    )


def test_ecc_old_or_corrected_errors_pass() -> None:
    fake = FakeNvml(
        [
            FakeGpu(
                ecc_corrected_volatile=12,
                ecc_uncorrected_aggregate=2,
                remapped_rows=(3, 0, False, False),
            )
        ]
    )
    assert check_ecc(gpu_ctx(fake)).status is CheckStatus.PASS


@pytest.mark.parametrize(
    ("gpu", "fragment"),
    [
        (FakeGpu(ecc_uncorrected_volatile=3), "GPU1: 3 uncorrected ECC error(s) since boot"),
        (FakeGpu(retired_pages_pending=True), "GPU1: page retirement pending (reboot needed)"),
        (FakeGpu(remapped_rows=(0, 1, False, True)), "GPU1: row remapping failed"),
        (FakeGpu(remapped_rows=(0, 1, True, False)), "GPU1: row remapping pending"),
    ],
)
def test_ecc_problems_fail(gpu: FakeGpu, fragment: str) -> None:
    result = check_ecc(gpu_ctx(FakeNvml([FakeGpu(), gpu])))
    assert result.status is CheckStatus.FAIL
    assert fragment in shown.detail(result)
    assert "GPU0" not in shown.detail(result)
    assert "drain the node" in shown.hint(result)


def test_ecc_failure_wins_over_partial_support() -> None:
    fake = FakeNvml([FakeGpu(ecc_uncorrected_volatile=NOT_SUPPORTED, retired_pages_pending=True)])
    result = check_ecc(gpu_ctx(fake))
    assert result.status is CheckStatus.FAIL
    assert "page retirement pending" in shown.detail(result)


def test_ecc_all_unsupported_skips() -> None:
    unsupported = {
        "ecc_uncorrected_volatile": NOT_SUPPORTED,
        "retired_pages_pending": NOT_SUPPORTED,
        "remapped_rows": NOT_SUPPORTED,
    }
    fake = FakeNvml([FakeGpu(**unsupported), FakeGpu(**unsupported)])
    result = check_ecc(gpu_ctx(fake))
    assert result.status is CheckStatus.SKIP
    assert "ECC not supported or disabled" in shown.detail(result)
    assert "NVMLError_NotSupported" in result.data["gpus"][0]["ecc"]


def test_ecc_some_unsupported_passes() -> None:
    fake = FakeNvml([FakeGpu(ecc_uncorrected_volatile=NOT_SUPPORTED), FakeGpu()])
    assert check_ecc(gpu_ctx(fake)).status is CheckStatus.PASS


def test_per_gpu_checks_skip_without_nvml_or_gpus() -> None:
    for check in (check_ecc, check_persistence, check_throttle):
        no_nvml = check(make_ctx(torch=fake_torch(), nvml=NO_NVML))
        assert no_nvml.status is CheckStatus.SKIP
        assert shown.detail(no_nvml).startswith("NVML unavailable: libnvidia-ml.so not found")
        no_gpu = check(gpu_ctx(FakeNvml([])))
        assert no_gpu.status is CheckStatus.SKIP
        assert shown.detail(no_gpu) == "no GPU visible"


# ------------------------------------------------------------------------- GPU: persistence


def test_persistence_disabled_warns() -> None:
    fake = FakeNvml([FakeGpu(), FakeGpu(persistence=False), FakeGpu(persistence=False)])
    result = check_persistence(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    assert shown.detail(result) == "disabled on GPU 1, 2"
    assert "nvidia-smi -pm 1" in shown.hint(result)
    assert result.data["gpus"] == {0: True, 1: False, 2: False}


def test_persistence_enabled_passes() -> None:
    result = check_persistence(gpu_ctx(FakeNvml([FakeGpu(), FakeGpu()])))
    assert result.status is CheckStatus.PASS
    assert shown.detail(result) == "enabled on every GPU"


def test_persistence_unqueryable_skips() -> None:
    result = check_persistence(gpu_ctx(FakeNvml([FakeGpu(persistence=NOT_SUPPORTED)])))
    assert result.status is CheckStatus.SKIP
    assert result.data["gpus"] == {0: None}


# ---------------------------------------------------------------------------- GPU: throttle


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        (0, []),
        (0x1, ["GpuIdle"]),
        (0x41, ["GpuIdle", "HwThermalSlowdown"]),
        (0x4 | 0x80, ["SwPowerCap", "HwPowerBrakeSlowdown"]),
        (0x8 | 0x200, ["HwSlowdown", "0x200"]),
        (0x1000, ["0x1000"]),
    ],
)
def test_decode_clock_reasons(mask: int, expected: list[str]) -> None:
    assert decode_clock_reasons(mask) == expected


IDLE_SLOWDOWN = "hardware or thermal slowdown set on an idle GPU: "


def test_throttle_thermal_warns() -> None:
    fake = FakeNvml([FakeGpu(clock_reasons=0x1), FakeGpu(clock_reasons=0x40)])
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    assert shown.detail(result) == f"{IDLE_SLOWDOWN}GPU1: HwThermalSlowdown"
    assert "cooling" in shown.hint(result)
    assert result.data["gpus"] == {0: ["GpuIdle"], 1: ["HwThermalSlowdown"]}


def test_throttle_idle_passes() -> None:
    fake = FakeNvml([FakeGpu(clock_reasons=0x1), FakeGpu(clock_reasons=0x1 | 0x10)])
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert result.data["gpus"] == {0: ["GpuIdle"], 1: ["GpuIdle", "SyncBoost"]}


def test_throttle_power_management_at_idle_is_no_problem() -> None:
    """The mask is read once with the GPU idle: SwPowerCap there is power management, not a
    slowdown, and the check says it read an idle GPU."""
    result = check_throttle(gpu_ctx(FakeNvml([FakeGpu(clock_reasons=0x1 | 0x4)])))
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert result.title == "Clock throttling (idle GPU)"
    assert shown.detail(result).startswith("read once with the GPUs idle: no hardware or thermal")
    assert "SwPowerCap" not in shown.detail(result) and result.data["read"] == "once, idle"


NEW_CLOCKS = "nvmlDeviceGetCurrentClocksEventReasons"
OLD_CLOCKS = "nvmlDeviceGetCurrentClocksThrottleReasons"


def test_throttle_queries_the_new_name_only_when_the_driver_has_it() -> None:
    fake = FakeNvml([FakeGpu(clock_reasons=0x1)])
    assert check_throttle(gpu_ctx(fake)).status is CheckStatus.PASS
    assert len(fake.called(NEW_CLOCKS)) == 1
    assert fake.called(OLD_CLOCKS) == []


def test_throttle_falls_back_when_the_driver_lacks_the_new_function() -> None:
    """A driver < 535 under a current nvidia-ml-py: the new name raises FUNCTION_NOT_FOUND and
    the old name still reports the thermal slowdown (it used to be dropped as a PASS)."""
    fake = FakeNvml(
        [FakeGpu(clock_reasons=0x1), FakeGpu(clock_reasons=0x40)],
        driver_has_clocks_event_reasons=False,
    )
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    assert shown.detail(result) == f"{IDLE_SLOWDOWN}GPU1: HwThermalSlowdown"
    assert len(fake.called(NEW_CLOCKS)) == 2
    assert len(fake.called(OLD_CLOCKS)) == 2
    assert result.data["errors"] == {}


def test_throttle_falls_back_on_not_supported() -> None:
    fake = FakeNvml([FakeGpu(clock_reasons=0x8)])
    calls: list[str] = []

    def new_name_not_supported(handle: Any) -> int:
        calls.append("new")
        raise NVMLError_NotSupported()

    fake.nvmlDeviceGetCurrentClocksEventReasons = new_name_not_supported  # type: ignore[method-assign]
    result = check_throttle(gpu_ctx(fake))
    assert calls == ["new"]
    assert result.status is CheckStatus.WARN
    assert "HwSlowdown" in shown.detail(result)
    assert fake.called(OLD_CLOCKS)


def test_throttle_skips_with_the_error_when_neither_name_answers() -> None:
    fake = FakeNvml(
        [FakeGpu(clock_reasons=NOT_SUPPORTED), FakeGpu(clock_reasons=NOT_SUPPORTED)],
        driver_has_clocks_event_reasons=False,
    )
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.SKIP
    assert shown.detail(result) == (
        f"clock reasons unreadable: GPU0, GPU1: {NEW_CLOCKS}: NVMLError_FunctionNotFound: "
        f"Function Not Found; {OLD_CLOCKS}: NVMLError_NotSupported: Not Supported"
    )
    assert "nvidia-smi -q -d PERFORMANCE" in shown.hint(result)
    assert result.data["gpus"] == {}
    assert set(result.data["errors"]) == {0, 1}


def test_throttle_skips_when_the_binding_has_neither_usable_name() -> None:
    fake = FakeNvml([FakeGpu()], driver_has_clocks_event_reasons=False, throttle_reasons_api=False)
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.SKIP
    assert f"{OLD_CLOCKS}: not in this pynvml" in shown.detail(result)
    assert "FunctionNotFound" in shown.detail(result)


def test_throttle_does_not_fall_back_on_a_real_failure() -> None:
    """A lost GPU is not a missing function: the old name is not asked, the error is kept."""
    fake = FakeNvml([FakeGpu(clock_reasons=NVMLError_Unknown("GPU is lost"))])
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.SKIP
    assert (
        shown.detail(result)
        == f"clock reasons unreadable: GPU0: {NEW_CLOCKS}: NVMLError_Unknown: GPU is lost"
    )
    assert fake.called(OLD_CLOCKS) == []


def test_throttle_unreadable_gpu_is_named_next_to_a_throttling_one() -> None:
    fake = FakeNvml([FakeGpu(clock_reasons=0x20), FakeGpu(clock_reasons=NOT_SUPPORTED)])
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    assert shown.detail(result).startswith(
        f"{IDLE_SLOWDOWN}GPU0: SwThermalSlowdown; unreadable: GPU1: "
    )
    assert result.data["gpus"] == {0: ["SwThermalSlowdown"]}
    assert list(result.data["errors"]) == [1]


def test_throttle_uses_old_api_name_when_new_one_is_missing() -> None:
    fake = FakeNvml([FakeGpu(clock_reasons=0x20)], clocks_event_reasons_api=False)
    result = check_throttle(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    assert "SwThermalSlowdown" in shown.detail(result)
    assert fake.called("nvmlDeviceGetCurrentClocksThrottleReasons")


# ------------------------------------------------------------------------------ NVML probe


def test_probe_nvml_without_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    state = probe_nvml()
    assert state.ok is False
    assert state.module is None
    assert state.error is not None
    assert "pynvml is not importable" in state.error
    assert "pip install nvidia-ml-py" in state.error
    ctx = make_ctx(torch=fake_torch(gpus=0), nvml=state)
    assert check_driver(ctx).status is CheckStatus.FAIL
    assert check_ecc(ctx).status is CheckStatus.SKIP


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (NVMLError_LibraryNotFound(), "libnvidia-ml.so not found (no NVIDIA driver on this node)"),
        (NVMLError_DriverNotLoaded(), "the NVIDIA kernel module is not loaded"),
        (NVMLError_Unknown("weird"), "NVMLError_Unknown: weird"),
    ],
)
def test_probe_nvml_init_failure(
    monkeypatch: pytest.MonkeyPatch, error: Exception, expected: str
) -> None:
    fake = FakeNvml(init_error=error)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    state = probe_nvml()
    assert state.ok is False
    assert state.error == expected
    assert state.gpus == []
    ctx = make_ctx(torch=fake_torch(gpus=0), nvml=state)
    driver = check_driver(ctx)
    assert driver.status is CheckStatus.FAIL
    assert expected in shown.detail(driver)
    for check in (check_ecc, check_persistence, check_throttle):
        assert check(ctx).status is CheckStatus.SKIP


def test_probe_nvml_lists_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml(
        [
            FakeGpu(uuid="GPU-a", bus_id="00000000:18:00.0"),
            FakeGpu(name="NVIDIA A100-SXM4-80GB", uuid="GPU-b", bus_id="00000000:2A:00.0"),
        ],
        driver_version=b"550.54.15",
        cuda_driver_version=12040,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    state = probe_nvml()
    assert state.ok, state.error
    assert state.driver_version == "550.54.15"
    assert state.cuda_driver_version == (12, 4)
    assert [(g.index, g.name, g.uuid, g.bus_id) for g in state.gpus] == [
        (0, "NVIDIA H100 80GB HBM3", "GPU-a", "00000000:18:00.0"),
        (1, "NVIDIA A100-SXM4-80GB", "GPU-b", "00000000:2A:00.0"),
    ]


@pytest.mark.parametrize(
    ("raw", "expected"), [(11080, (11, 8)), (12020, (12, 2)), (12060, (12, 6)), (13000, (13, 0))]
)
def test_probe_nvml_decodes_cuda_driver_version(
    monkeypatch: pytest.MonkeyPatch, raw: int, expected: tuple[int, int]
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(cuda_driver_version=raw))
    assert probe_nvml().cuda_driver_version == expected


def test_probe_nvml_count_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(count_error=NVMLError_Unknown("gone")))
    state = probe_nvml()
    assert state.ok is False
    assert state.error == "nvmlDeviceGetCount failed: NVMLError_Unknown: gone"
    assert state.driver_version == "550.54.15"


def test_probe_nvml_unreadable_gpu_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([FakeGpu(), FakeGpu(unreadable=True)]))
    state = probe_nvml()
    assert state.ok
    assert len(state.gpus) == 2
    assert state.gpus[1].handle is None
    assert state.gpus[1].name.startswith("<unreadable: NVMLError_Unknown")
    # the checks tolerate the missing handle instead of crashing
    ctx = make_ctx(torch=fake_torch(gpus=2), nvml=state)
    assert check_ecc(ctx).status is CheckStatus.PASS
    assert check_persistence(ctx).status is CheckStatus.PASS


def test_fake_nvml_not_supported_error_name() -> None:
    fake = FakeNvml([FakeGpu(persistence=NOT_SUPPORTED)])
    with pytest.raises(NVMLError_NotSupported, match="Not Supported"):
        fake.nvmlDeviceGetPersistenceMode(fake.nvmlDeviceGetHandleByIndex(0))


# ---------------------------------------------------------------------------- system checks


StatVfs = namedtuple("StatVfs", "f_frsize f_blocks f_bavail")


def test_shm_small_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def statvfs(path: Any) -> StatVfs:
        seen.append(path)
        return StatVfs(f_frsize=4096, f_blocks=64 * MIB // 4096, f_bavail=60 * MIB // 4096)

    monkeypatch.setattr(checks_system.os, "statvfs", statvfs)
    result = check_shm(make_ctx(), path=tmp_path)
    assert seen == [tmp_path]
    assert result.status is CheckStatus.WARN
    assert "--shm-size" in shown.hint(result)
    assert "below 1 GiB" in shown.detail(result)
    assert result.data == {"total_bytes": 64 * MIB, "free_bytes": 60 * MIB}


def test_shm_large_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        checks_system.os, "statvfs", lambda path: StatVfs(4096, 16 * GIB // 4096, 15 * GIB // 4096)
    )
    result = check_shm(make_ctx(), path=tmp_path)
    assert result.status is CheckStatus.PASS
    assert shown.detail(result) == "16.0 GiB (15.0 GiB free)"


def test_shm_missing_skips(tmp_path: Path) -> None:
    result = check_shm(make_ctx(), path=tmp_path / "no-shm")
    assert result.status is CheckStatus.SKIP
    assert "does not exist" in shown.detail(result)


def test_cpu_single_core_warns_on_cpu_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks_system, "usable_cores", lambda: 1)
    result = check_cpu(make_ctx("cpu"))
    assert result.status is CheckStatus.WARN
    assert "oversubscribed" in shown.hint(result)
    assert check_cpu(make_ctx("cuda")).status is CheckStatus.PASS


def test_cpu_cores_reported() -> None:
    result = check_cpu(make_ctx("cpu"))
    assert result.data["usable_cores"] == checks_system.usable_cores()
    assert result.data["usable_cores"] >= 1


def test_open_files_low_limit_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = pytest.importorskip("resource")
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1024, 4096))
    result = check_open_files(make_ctx())
    assert result.status is CheckStatus.WARN
    assert shown.detail(result) == "soft 1024, hard 4096"
    assert "ulimit -n" in shown.hint(result)


def test_open_files_unlimited_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = pytest.importorskip("resource")
    monkeypatch.setattr(
        resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    )
    result = check_open_files(make_ctx())
    assert result.status is CheckStatus.PASS
    assert shown.detail(result) == "soft unlimited, hard unlimited"


def make_ib(root: Path, state: str, device: str = "mlx5_0", port: str = "1") -> None:
    port_dir = root / device / "ports" / port
    port_dir.mkdir(parents=True)
    (port_dir / "state").write_text(state + "\n")
    (port_dir / "rate").write_text("200 Gb/sec (4X HDR)\n")
    (port_dir / "link_layer").write_text("InfiniBand\n")


def test_infiniband_active_passes(tmp_path: Path) -> None:
    make_ib(tmp_path, "4: ACTIVE")
    result = check_infiniband(make_ctx(), root=tmp_path)
    assert result.status is CheckStatus.PASS, shown.detail(result)
    assert shown.detail(result) == "mlx5_0/1: 4: ACTIVE, 200 Gb/sec (4X HDR), InfiniBand"
    assert result.data["ports"] == {
        "mlx5_0/1": {
            "state": "4: ACTIVE",
            "rate": "200 Gb/sec (4X HDR)",
            "link_layer": "InfiniBand",
        }
    }


def test_infiniband_one_active_port_is_enough(tmp_path: Path) -> None:
    make_ib(tmp_path, "1: DOWN", device="mlx5_0")
    make_ib(tmp_path, "4: ACTIVE", device="mlx5_1")
    assert check_infiniband(make_ctx(), root=tmp_path).status is CheckStatus.PASS


def test_infiniband_down_warns(tmp_path: Path) -> None:
    make_ib(tmp_path, "1: DOWN")
    result = check_infiniband(make_ctx(), root=tmp_path)
    assert result.status is CheckStatus.WARN
    assert "mlx5_0/1: 1: DOWN" in shown.detail(result)
    assert "ibstat" in shown.hint(result)


def test_infiniband_device_without_ports_warns(tmp_path: Path) -> None:
    (tmp_path / "mlx5_0").mkdir()
    result = check_infiniband(make_ctx(), root=tmp_path)
    assert result.status is CheckStatus.WARN
    assert shown.detail(result) == "devices without ports"


@pytest.mark.parametrize("make_root", [lambda p: p / "absent", lambda p: p])
def test_infiniband_missing_or_empty_skips(tmp_path: Path, make_root: Any) -> None:
    result = check_infiniband(make_ctx(), root=make_root(tmp_path))
    assert result.status is CheckStatus.SKIP
    assert "no RDMA devices" in shown.detail(result)


def test_disk_uses_nearest_existing_ancestor(tmp_path: Path) -> None:
    ctx = make_ctx(output_dir=tmp_path / "not" / "yet" / "there")
    result = check_disk(ctx)
    assert result.status in (CheckStatus.PASS, CheckStatus.WARN, CheckStatus.FAIL)
    assert result.data["path"] == str(tmp_path.resolve())
    assert abs(result.data["free_bytes"] - shutil.disk_usage(tmp_path).free) < GIB
    assert not (tmp_path / "not").exists()  # the check creates nothing


DiskUsage = namedtuple("DiskUsage", "total used free")


@pytest.mark.parametrize(
    ("free", "status"),
    [(50 * GIB, CheckStatus.PASS), (500 * MIB, CheckStatus.WARN), (50 * MIB, CheckStatus.FAIL)],
)
def test_disk_thresholds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, free: int, status: CheckStatus
) -> None:
    seen: list[Any] = []

    def disk_usage(path: Any) -> DiskUsage:
        seen.append(Path(path))
        return DiskUsage(100 * GIB, 100 * GIB - free, free)

    monkeypatch.setattr(checks_system.shutil, "disk_usage", disk_usage)
    result = check_disk(make_ctx(output_dir=tmp_path / "results"))
    assert seen == [tmp_path.resolve()]
    assert result.status is status
    assert result.data["free_bytes"] == free
    if status is not CheckStatus.PASS:
        assert "--output-dir" in shown.hint(result)


# ---------------------------------------------------------------------------------- runner


def check_boom(ctx: ValidateContext) -> CheckResult:
    raise RuntimeError("kaboom")


def test_guarded_turns_crash_into_fail() -> None:
    result = runner._guarded(check_boom, make_ctx())
    assert result.status is CheckStatus.FAIL
    assert (result.id, result.title) == ("boom", "boom")
    assert "the check itself crashed: RuntimeError: kaboom" in shown.detail(result)
    assert f"({Path(__file__).name}:" in shown.detail(result)
    assert "torchscale bug" in shown.hint(result)


def test_guarded_lambda() -> None:
    result = runner._guarded(lambda ctx: 1 // 0, make_ctx())
    assert result.status is CheckStatus.FAIL
    assert "ZeroDivisionError" in shown.detail(result)


def test_guarded_passes_results_through() -> None:
    ok = passed("x", "X", Finding(code="test.noted"))
    assert runner._guarded(lambda ctx: ok, make_ctx()) is ok


def test_run_validation_survives_crashing_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(
        runner, "CHECKS", (checks_software.check_python, check_boom, checks_system.check_cpu)
    )
    seen: list[str] = []
    ctx = make_ctx("cpu", output_dir=tmp_path, torch=fake_torch(), nvml=NO_NVML)
    report = runner.run_validation(ctx, base_env={}, progress=seen.append)
    assert seen == ["python", "boom", "cpu", "smoke test"]
    assert [(r.id, r.status) for r in report.checks] == [
        ("python", CheckStatus.PASS),
        ("boom", CheckStatus.FAIL),
        ("cpu", CheckStatus.PASS),
        ("smoke", CheckStatus.SKIP),
    ]
    assert report.ok is False
    assert report.counts == {
        CheckStatus.PASS: 2,
        CheckStatus.WARN: 0,
        CheckStatus.FAIL: 1,
        CheckStatus.SKIP: 1,
        CheckStatus.INFO: 0,
    }
    assert "NOT ready" in say(report.verdict_basis)  # type: ignore[arg-type]
    assert "boom" in say(report.verdict_basis)  # type: ignore[arg-type]


def test_run_validation_survives_crashing_smoke(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(ctx: ValidateContext, env: dict[str, str]) -> list[CheckResult]:
        raise OSError("no fork for you")

    monkeypatch.setattr(runner, "CHECKS", (checks_software.check_python,))
    monkeypatch.setattr(runner, "check_smoke", explode)
    report = runner.run_validation(make_ctx("cpu", quick=False, torch=fake_torch()), base_env={})
    smoke = report.checks[-1]
    assert (smoke.id, smoke.status) == ("smoke", CheckStatus.FAIL)
    assert shown.detail(smoke) == "could not run: OSError: no fork for you"
    assert report.ok is False


def test_run_validation_passes_base_env_to_smoke(monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[dict[str, str]] = []

    def capture(ctx: ValidateContext, env: dict[str, str]) -> list[CheckResult]:
        got.append(env)
        return [skipped("smoke", "Smoke test", Finding(code="test.noted"))]

    monkeypatch.setattr(runner, "CHECKS", ())
    monkeypatch.setattr(runner, "check_smoke", capture)
    runner.run_validation(make_ctx("cpu", torch=fake_torch()), base_env={"ONLY": "this"})
    assert got == [{"ONLY": "this"}]


def smoke_pass(device: str) -> CheckResult:
    return passed(
        f"smoke_gloo_{device}", "Smoke", Finding(code="test.noted"), spec={"device": device}
    )


def test_verdict_ready_with_warnings() -> None:
    ctx = make_ctx("cpu", quick=True, torch=fake_torch())
    results = [
        passed("a", "A", Finding(code="test.noted")),
        warned("nsys", "Nsight Systems", Finding(code="test.noted"), Finding(code="test.noted")),
    ]
    text = say(runner.verdict_basis(ctx, results))
    assert text == (
        "This node is ready for CPU (gloo) distributed training. (--quick: the live "
        "smoke test was not run.) Worth a look: Nsight Systems."
    )


def test_verdict_gpu_impossible_but_cpu_works() -> None:
    ctx = make_ctx(
        "cuda", quick=False, torch=fake_torch(version="2.7.1+cpu", cuda=None, gpus=0), nvml=NO_NVML
    )
    text = say(runner.verdict_basis(ctx, [smoke_pass("cpu")]))
    assert text.startswith(
        "GPU training is impossible on this node: torch 2.7.1+cpu is a "
        "CPU-only build; NVML: libnvidia-ml.so not found"
    )
    assert "The CPU path works (gloo smoke test passed)" in text
    assert "`torchscale validate --device cpu`" in text


def test_verdict_gpu_impossible_driver_lists_nothing() -> None:
    ctx = make_ctx("cuda", torch=fake_torch(gpus=0), nvml=FakeNvml([]).state())
    text = say(runner.verdict_basis(ctx, []))
    assert "the NVIDIA driver lists no GPU" in text
    assert "may still work" in text


def test_verdict_gpu_ready() -> None:
    ctx = make_ctx("cuda", quick=False, torch=fake_torch(gpus=2), nvml=FakeNvml().state())
    assert say(runner.verdict_basis(ctx, [smoke_pass("cuda")])) == (
        "This node is ready for GPU (NCCL) distributed training."
    )
