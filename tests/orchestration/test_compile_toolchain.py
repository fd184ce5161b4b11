"""The compile toolchain check (item 3): `validate` builds and runs one kernel with
torch.compile on the validated device type, and `benchmark` refuses compiled cells up front in
one line when it cannot, instead of failing every cell at its first step.

On CPU the probe is real: inductor's C++ path with this machine's g++ (it passes), with CXX
naming a compiler that does not exist, and with a PATH that holds none (both fail, as on a node
without a compiler). The verdict's wording, the per-process cache and the FAIL/WARN choice are
checked with the probe replaced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

import torchscale.orchestration.launch.attempt
import torchscale.orchestration.sweep
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording import say
from torchscale.contracts.wording import validate_measured as shown
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.launch.compile_cache import inductor_default_dir
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.schedulers.local.launcher import compile_devices
from torchscale.orchestration.validate import checks_software
from torchscale.orchestration.validate import compile_toolchain as toolchain
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import CheckStatus
from torchscale.orchestration.validate.compile_toolchain import Toolchain, judge_probe, run_probe
from torchscale.rank.programs.compile_probe import root_cause

NO_COMPILER = {**os.environ, "CXX": "/nonexistent/g++"}
CPU_CONFIG: dict[str, Any] = {
    "experiment_name": "nocc",
    "models": ["tiny-mlp"],
    "batch_sizes": [8],
    "gpu_counts": [1],
    "device": "cpu",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
    "training": {"compile": True},
}


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@pytest.fixture(autouse=True)
def _own_verdict_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept PASS goes to this test's folder, never the user's (compile_verdicts.py)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


# --------------------------------------------------------------------------- pure parts


def test_a_verdict_reads_as_one_line_with_its_fix() -> None:
    ok = judge_probe(
        "cpu",
        {"ok": True, "stage": "done", "cxx": "g++", "python_headers": "/x/Python.h",
         "binaries_built": 7},
        returncode=0,
        wall_s=12.3,
    )  # fmt: skip
    assert ok.ok and ok.fix == []
    assert ok.said() == (
        "built and ran a C++ kernel (inductor) in 12 s (7 binaries built in an empty cache; "
        "with g++, Python headers at /x/Python.h)"
    )
    no_cxx = judge_probe(
        "cpu",
        {"ok": False, "stage": "compile", "reason": "InvalidCxxCompiler: No working C++ "
         "compiler found", "cxx": None, "python_headers": None},
        returncode=0,
    )  # fmt: skip
    line = no_cxx.refusal()
    assert "\n" not in line
    assert line.startswith("torch.compile cannot build a kernel on cpu: InvalidCxxCompiler")
    assert "no Python headers found" in line
    assert line.endswith(
        "install a C++ compiler and the Python headers (apt install g++ python3-dev), "
        "or set training.compile: false"
    )
    no_triton = judge_probe(
        "cuda",
        {"ok": False, "stage": "triton", "reason": "triton is not importable"},
        returncode=0,
    )
    assert say(no_triton.fix[0]).startswith("install triton")
    hung = judge_probe("cuda", None, returncode=None, timed_out=True, timeout_s=300)
    assert not hung.ok and "did not finish within 300 s" in hung.said()
    assert "Triton" in say(hung.fix[0])
    crashed = judge_probe("cpu", None, returncode=-11, stderr="boom\nSegmentation fault\n")
    assert "without a verdict (Segmentation fault)" in crashed.said()


def test_the_root_cause_is_the_compilers_error_line() -> None:
    """Dynamo and inductor wrap the compiler's failure; the line kept is the compiler's."""
    from torch._inductor.exc import CppCompileError

    output = (
        "In file included from /tmp/x.cpp:1:\n"
        "/tmp/x.cpp:2:10: fatal error: Python.h: No such file or directory\n"
        "compilation terminated.\n"
    )
    try:
        try:
            raise CppCompileError(["g++", "x.cpp"], output)
        except CppCompileError as inner:
            raise RuntimeError("backend='inductor' raised:\nmany lines") from inner
    except RuntimeError as wrapped:
        cause = root_cause(wrapped)
    assert cause == (
        "CppCompileError: /tmp/x.cpp:2:10: fatal error: Python.h: No such file or directory"
    )


def test_the_probe_runs_once_per_toolchain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "_VERDICTS", {})
    probed: list[tuple[str, str | None, str | None]] = []

    def probe(device: str, env: dict[str, str]) -> Toolchain:
        probed.append((device, env.get("CXX"), env.get("TORCHINDUCTOR_CACHE_DIR")))
        return Toolchain(device, True, [])

    base = {"PATH": "/usr/bin", "HOME": "/root"}
    default = {**base, "TORCHINDUCTOR_CACHE_DIR": inductor_default_dir()}  # inductor sets it
    folder = {**base, "TORCHINDUCTOR_CACHE_DIR": "/results/exp/compile_cache"}
    envs = (base, {**base, "HOME": "/elsewhere"}, default, {**base, "CXX": "clang++"}, folder)
    for env in (*envs, base, folder):
        toolchain.toolchain_for("cpu", env, probe)
    # HOME and inductor's own default decide nothing; the cells' cache folder does (the probe
    # compiles there)
    assert probed == [
        ("cpu", None, None),
        ("cpu", "clang++", None),
        ("cpu", None, "/results/exp/compile_cache"),
    ]


def _ctx(device: str, quick: bool = False, gpus: int = 1) -> ValidateContext:
    """A context whose torch is importable and sees `gpus` CUDA GPUs (nothing else read)."""
    ctx = ValidateContext(device=device, output_dir=Path("."), quick=quick)  # type: ignore[arg-type]
    ctx.__dict__["torch"] = SimpleNamespace(module=object(), error=None, cuda_gpu_count=gpus)
    return ctx


def test_validate_fails_on_cuda_warns_on_cpu_and_skips_when_it_cannot_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    why = Finding(code="compile.failed", figures={"reason": "InvalidCxxCompiler: none"})
    broken = Toolchain("x", False, [why], [toolchain.FIXES["cpu"]])
    monkeypatch.setattr(checks_software, "toolchain_for", lambda device, env: broken)
    cuda = checks_software.check_compile(_ctx("cuda"))
    assert (cuda.status, cuda.fix) == (CheckStatus.FAIL, [toolchain.FIXES["cpu"]])
    cpu = checks_software.check_compile(_ctx("cpu"))
    assert cpu.status is CheckStatus.WARN and "compile only when it is true" in shown.hint(cpu)
    assert checks_software.check_compile(_ctx("cpu", quick=True)).status is CheckStatus.SKIP
    assert checks_software.check_compile(_ctx("cuda", gpus=0)).status is CheckStatus.SKIP
    fine = Toolchain("cpu", True, [], data={"binaries_built": 1})
    monkeypatch.setattr(checks_software, "toolchain_for", lambda device, env: fine)
    passed = checks_software.check_compile(_ctx("cpu"))
    assert (passed.status, passed.data["binaries_built"]) == (CheckStatus.PASS, 1)


def test_the_device_types_checked_are_those_of_cells_that_compile() -> None:
    machine = Machine(gpu_count=0, cpu_cores=2)
    compiled = build_plan(BenchConfig.model_validate(CPU_CONFIG), machine)
    assert compile_devices(compiled) == {"cpu"}
    eager = build_plan(
        BenchConfig.model_validate({**CPU_CONFIG, "training": {"compile": False}}), machine
    )
    assert compile_devices(eager) == set()
    default = build_plan(BenchConfig.model_validate({**CPU_CONFIG, "training": {}}), machine)
    assert compile_devices(default) == set()  # CPU cells do not compile by default
    skipped = build_plan(
        BenchConfig.model_validate({**CPU_CONFIG, "device": "cuda", "training": {}}), machine
    )
    assert compile_devices(skipped) == set()  # CUDA cells compile, but skip without a GPU


# ------------------------------------------------------------------ the real probe, on CPU


@pytest.mark.slow  # a real compile toolchain probe (builds a kernel)
def test_a_compiler_that_does_not_exist_is_found_for_real() -> None:
    found = toolchain.toolchain_for("cpu", NO_COMPILER)
    assert not found.ok
    assert "InvalidCxxCompiler" in found.said() and "/nonexistent/g++" in found.said()
    assert found.fix == [toolchain.FIXES["cpu"]]


@pytest.mark.slow
def test_a_path_without_a_compiler_is_found_for_real() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "CC")}
    found = run_probe("cpu", {**env, "PATH": "/nonexistent"})
    assert not found.ok and "InvalidCxxCompiler" in found.said(), found.said()


@pytest.mark.slow  # a real compile toolchain probe (builds a kernel)
def test_benchmark_refuses_compiled_cells_in_one_line_and_launches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[object] = []
    monkeypatch.setattr(
        torchscale.orchestration.sweep, "run_attempt", lambda *a, **k: launched.append(a)
    )
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(CPU_CONFIG), "utf-8")
    out = tmp_path / "results"
    run = CliRunner().invoke(
        app, ["benchmark", "-c", str(config), "-o", str(out)], env={"CXX": "/nonexistent/g++"}
    )
    assert run.exit_code == 2, run.output
    [line] = error_lines(run.output)  # one line, no traceback
    assert line.startswith("error: torch.compile cannot build a kernel on cpu: InvalidCxxCompiler")
    assert "/nonexistent/g++" in line and line.endswith("or set training.compile: false")
    assert "Traceback" not in run.output
    assert launched == [] and not (out / "nocc").exists()


@pytest.mark.slow  # a real compile toolchain probe (builds a kernel)
def test_with_a_toolchain_the_compiled_cells_launch_after_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same config with this machine's g++: the probe builds and runs a kernel (real, in
    this test's empty cache folder), says so in one line and keeps its PASS, and the cell
    launches (its launch stood in for: a compiled CPU cell takes minutes)."""
    launched: list[object] = []

    def launch(command: Any, timeout_s: float, finished: Any = None) -> ProcessOutcome:
        launched.append(command)
        spec = json.loads(Path(command.argv[-1]).read_text(encoding="utf-8"))
        ok = CellResult(cell=CellIdentity.model_validate(spec["cell"]), status=Status.OK)
        Path(spec["result_path"]).write_text(ok.model_dump_json(), encoding="utf-8")
        return ProcessOutcome(0, False, 0.1, command.log_path)

    monkeypatch.setattr(torchscale.orchestration.launch.attempt, "run_launch", launch)
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(CPU_CONFIG), "utf-8")
    run = CliRunner().invoke(app, ["benchmark", "-c", str(config), "-o", str(tmp_path / "r")])
    assert run.exit_code == 0, run.output
    assert "> torch.compile on cpu: built and ran a C++ kernel (inductor)" in run.output
    assert len(launched) == 1
    [kept] = (tmp_path / "xdg-cache" / "torchscale" / "compile-toolchain").glob("*.json")
    data = json.loads(kept.read_text(encoding="utf-8"))["data"]
    assert data["binaries_built"] >= 1  # built now, in the probe's empty cache
    assert data["cxx"] and data["python_headers"]
