"""Small commands pay only for what they use (issue 25): `torchscale --help` and `--version` are
answered without importing Typer, the help page they print is Typer's own byte for byte (plain
and in colour, at several widths), and `config init` on a node with no GPU tells so without
importing torch (what can answer without it is asked first; torch still answers where a GPU
may be). `list`, `config show` and `config init --hardware cpu` importing no torch is held in
tests/test_small_commands.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from tests import import_probe
from torchscale.contracts.nvml import NvmlGpu, NvmlState
from torchscale.interfaces.cli import root_help
from torchscale.orchestration.config import hardware
from torchscale.orchestration.config.hardware import cpu_node, no_gpu_here, read_torch_build

REPO_ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "pandas", "plotly", "weasyprint", "numpy")
TYPER = ("typer", "typer._click", "typer.rich_utils")
# what changes how Typer draws its help: cleared for every run, then set per case
STYLE_ENV = (
    "COLUMNS",
    "LINES",
    "FORCE_COLOR",
    "NO_COLOR",
    "PY_COLORS",
    "GITHUB_ACTIONS",
    "TERMINAL_WIDTH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "TYPER_USE_RICH",
    "TERM",
)

_RUN = """\
import sys
sys.argv = {argv!r}
{call}
"""
FAST = "from torchscale.interfaces.cli.app import main; main()"
TYPER_APP = "from torchscale.interfaces.cli.root import app; app()"


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in STYLE_ENV}
    return {**env, **settings}


def probe(*args: str, cwd: Path = REPO_ROOT) -> dict[str, str]:
    """`torchscale ARGS` in a fresh interpreter: its exit code, which watched modules it
    imported, and what it printed (OUTPUT)."""
    return import_probe.probe(args, HEAVY + TYPER, cwd=cwd, env=_env(COLUMNS="100"))


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("--version",)], ids=" ".join)
def test_root_help_and_version_import_no_typer(args: tuple[str, ...]) -> None:
    found = probe(*args)
    assert found["EXIT"] == "0"
    assert found["LOADED"] == "-", f"torchscale {' '.join(args)} imported {found['LOADED']}"


def _case_id(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(value)
    return ",".join(f"{k}={v}" for k, v in value.items())


def run(call: str, args: list[str], **env: str) -> subprocess.CompletedProcess[bytes]:
    code = _RUN.format(argv=["torchscale", *args], call=call)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=REPO_ROOT, env=_env(**env)
    )


@pytest.mark.parametrize(
    "args, env",
    [
        (["--help"], {"COLUMNS": "100"}),
        (["-h"], {"COLUMNS": "80"}),
        (["--help"], {"COLUMNS": "50"}),
        (["--help"], {"COLUMNS": "200"}),
        (["--help"], {"COLUMNS": "100", "FORCE_COLOR": "1"}),
        (["--help"], {"COLUMNS": "72", "FORCE_COLOR": "1", "TERM": "xterm-256color"}),
        (["--help"], {"COLUMNS": "100", "PY_COLORS": "1", "NO_COLOR": "1"}),
        (["--help"], {"GITHUB_ACTIONS": "true", "TERMINAL_WIDTH": "90"}),
        (["--help"], {"FORCE_COLOR": "1", "_TYPER_FORCE_DISABLE_TERMINAL": "1"}),
        (["--help"], {"COLUMNS": "100", "TYPER_USE_RICH": "0"}),  # Typer answers this one
        (["--version"], {}),
    ],
    ids=lambda v: (
        " ".join(v) if isinstance(v, list) else ",".join(f"{k}={x}" for k, x in v.items())
    ),
)
def test_the_page_without_typer_is_typers_own(args: list[str], env: dict[str, str]) -> None:
    fast = run(FAST, args, **env)
    typer = run(TYPER_APP, args, **env)
    assert (fast.returncode, fast.stderr) == (typer.returncode, typer.stderr) == (0, b"")
    assert fast.stdout == typer.stdout, (
        "cli/root_help.py draws the root's help unlike Typer now: make it draw what Typer does"
    )
    if "--version" not in args:
        for name in root_help.SUBCOMMANDS:
            assert name.encode() in fast.stdout


def test_program_name_is_clicks(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer._click.utils import _detect_program_name

    cases = [
        ("/usr/bin/torchscale", None),  # the console script
        ("torchscale", ""),  # a zipapp
        ("/x/torchscale/__main__.py", "torchscale"),  # python -m torchscale
        (
            "/x/torchscale/interfaces/cli/app.py",
            "torchscale.interfaces.cli",
        ),  # python -m torchscale.interfaces.cli.app
    ]
    for argv0, package in cases:
        main = ModuleType("__main__")
        main.__package__ = package
        assert root_help.program_name(argv0, main) == _detect_program_name(argv0, main)
    monkeypatch.setattr(sys, "argv", ["/opt/bin/torchscale", "--help"])
    assert root_help.program_name(main=ModuleType("__main__")) == "torchscale"


def test_only_the_root_help_and_version_are_answered_without_typer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("TYPER_USE_RICH", "_TORCHSCALE_COMPLETE", "_PYTHON _M TORCHSCALE_COMPLETE"):
        monkeypatch.delenv(name, raising=False)
    answers = root_help.answers_without_typer
    assert answers(["--help"], "torchscale") and answers(["-h"], "python -m torchscale")
    assert answers(["--version"], "torchscale")
    for args in ([], ["--help", "list"], ["list", "--help"], ["--verbose", "--help"], ["-v"]):
        assert not answers(args, "torchscale"), args
    monkeypatch.setenv("_TORCHSCALE_COMPLETE", "bash_source")  # click's completion request
    assert not answers(["--help"], "torchscale")
    assert not answers(["--version"], "torchscale")
    monkeypatch.delenv("_TORCHSCALE_COMPLETE")
    monkeypatch.setenv("TYPER_USE_RICH", "0")  # Typer's plain click help
    assert not answers(["--help"], "torchscale")


def test_the_typer_app_is_built_from_the_same_facts() -> None:
    from torchscale.interfaces.cli import app as entry
    from torchscale.interfaces.cli.root import app

    assert entry.app is app and entry.SUBCOMMANDS is root_help.SUBCOMMANDS
    assert app.info.help == root_help.ROOT_HELP
    with pytest.raises(AttributeError):
        _ = entry.no_such_name


# -- config init: this node without torch where no GPU can be there ---------------------------

TORCH_VERSION_PY = """\
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda!r}
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = {hip!r}
rocm: Optional[str] = None
xpu: Optional[str] = None
"""


@pytest.mark.parametrize(
    "cuda, hip", [(None, None), ("12.8", None), (None, "6.4.43482")], ids=["cpu", "cuda", "rocm"]
)
def test_the_torch_build_is_read_without_torch(
    tmp_path: Path, cuda: str | None, hip: str | None
) -> None:
    path = tmp_path / "version.py"
    path.write_text(TORCH_VERSION_PY.format(version="2.13.0", cuda=cuda, hip=hip))
    assert read_torch_build(path) == {"cuda": cuda, "hip": hip}


@pytest.mark.parametrize(
    "text",
    ["", "cuda = None\n", "cuda = get()\nhip = None\n", "cuda = None\nhip = (\n"],
    ids=["empty", "no hip", "not a literal", "unparsable"],
)
def test_an_unreadable_torch_build_leaves_it_to_torch(tmp_path: Path, text: str) -> None:
    path = tmp_path / "version.py"
    path.write_text(text)
    assert read_torch_build(path) is None
    assert read_torch_build(tmp_path / "missing.py") is None


def test_the_build_read_is_the_one_torch_reports() -> None:
    import torch

    assert hardware.torch_build() == {"cuda": torch.version.cuda, "hip": torch.version.hip}


def _nvml(ok: bool, gpus: int = 0, error: str | None = None) -> NvmlState:
    module = SimpleNamespace(shutdowns=0)
    module.nvmlShutdown = lambda: setattr(module, "shutdowns", module.shutdowns + 1)
    state = NvmlState(module, None if ok else error)  # type: ignore[arg-type]
    state.gpus = [NvmlGpu(i, object(), "NVIDIA H100", f"GPU-{i}", "") for i in range(gpus)]
    return state


@pytest.mark.parametrize(
    "build, nvml, driver_loads, why",
    [
        ({"cuda": None, "hip": None}, None, True, "a CPU-only torch build"),
        (None, None, True, None),  # unreadable (or no torch): torch says
        ({"cuda": None, "hip": "6.4"}, None, True, None),  # ROCm: NVML cannot tell
        ({"cuda": "12.8", "hip": None}, _nvml(True, gpus=2), True, None),
        (
            {"cuda": "12.8", "hip": None},
            _nvml(True, gpus=0),
            True,
            "the NVIDIA driver lists no GPU",
        ),
        (
            {"cuda": "12.8", "hip": None},
            _nvml(False, error="libnvidia-ml.so not found (no NVIDIA driver on this node)"),
            False,
            "no CUDA driver (libcuda.so.1 does not load; NVML: libnvidia-ml.so not found "
            "(no NVIDIA driver on this node))",
        ),
        # a container given CUDA but not NVML: only torch can say
        (
            {"cuda": "12.8", "hip": None},
            _nvml(False, error="NVMLError_LibraryNotFound"),
            True,
            None,
        ),
    ],
    ids=["cpu build", "unknown build", "rocm", "gpus", "no gpu", "no driver", "no nvml"],
)
def test_no_gpu_here_says_only_what_is_certain(
    monkeypatch: pytest.MonkeyPatch,
    build: dict[str, str | None] | None,
    nvml: NvmlState | None,
    driver_loads: bool,
    why: str | None,
) -> None:
    def no_nvml() -> NvmlState:
        raise AssertionError("NVML asked where the build already answers")

    monkeypatch.setattr(hardware, "torch_build", lambda: build)
    monkeypatch.setattr("torchscale.contracts.nvml.probe_nvml", (lambda: nvml) if nvml else no_nvml)
    monkeypatch.setattr(hardware, "_cuda_driver_loads", lambda: driver_loads)
    assert no_gpu_here() == why
    if nvml is not None and nvml.ok:
        assert nvml.module.shutdowns == 1  # type: ignore[union-attr]


def _fake_torch(count: int) -> Any:
    props = SimpleNamespace(name="NVIDIA H100 80GB HBM3", total_memory=80 * 2**30, major=9, minor=0)
    cuda = SimpleNamespace(
        is_available=lambda: count > 0,
        device_count=lambda: count,
        get_device_properties=lambda index: props,
    )
    return SimpleNamespace(cuda=cuda)


def test_this_node_asks_torch_where_a_gpu_may_be(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(8))
    monkeypatch.setattr(hardware, "no_gpu_here", lambda: None)
    node = hardware.this_node()
    assert (node.name, node.gpus, node.gpu_memory_bytes, node.bf16) == ("auto", 8, 80 * 2**30, True)
    # torch at hand is asked, whatever could be said without it
    monkeypatch.setattr(hardware, "no_gpu_here", lambda: "a CPU-only torch build")
    assert hardware.this_node().gpus == 8
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(0))
    assert hardware.this_node() == cpu_node()


def test_this_node_without_a_gpu_is_the_cpu_node_torch_would_give() -> None:
    if no_gpu_here() is None:
        pytest.skip("a GPU may be here: torch is asked")
    from torchscale.contracts import host

    assert host.cuda_gpu_count() == 0  # torch agrees: no GPU here
    assert hardware.this_node() == cpu_node()


def test_config_init_for_this_node_imports_no_torch_without_a_gpu(tmp_path: Path) -> None:
    if no_gpu_here() is None:
        pytest.skip("a GPU may be here: torch is asked (and imported)")
    found = probe("config", "init", cwd=tmp_path)  # auto: this node; printed
    assert found["EXIT"] == "0"
    assert "# sized for: CPU ranks over gloo" in found["OUTPUT"]
    heavy = [m for m in found["LOADED"].split(",") if m in HEAVY]
    assert heavy == [], f"torchscale config init imported {heavy}"
