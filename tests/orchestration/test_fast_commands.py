"""Small commands pay only for what they use: `config init` on a node with no GPU tells so
without importing torch (what can answer without it is asked first; torch still answers where a
GPU may be). `--help`, `list`, `config show` and `config init --hardware cpu` importing no torch
is held in tests/interfaces/test_small_commands.py; the error paths in
tests/interfaces/test_cli_fast_errors.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import import_probe
from torchscale.contracts.nvml import NvmlGpu, NvmlState
from torchscale.orchestration.config import hardware
from torchscale.orchestration.config.hardware import cpu_node, no_gpu_here, read_torch_build

HEAVY = ("torch", "pandas", "plotly", "weasyprint", "numpy")


def probe(*args: str, cwd: Path) -> dict[str, str]:
    """`torchscale ARGS` in a fresh interpreter: its exit code, which heavy modules it
    imported, and what it printed (OUTPUT)."""
    return import_probe.probe(args, HEAVY, cwd=cwd, env={**os.environ, "COLUMNS": "100"})


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


@pytest.mark.slow  # starts a fresh interpreter
def test_config_init_for_this_node_imports_no_torch_without_a_gpu(tmp_path: Path) -> None:
    if no_gpu_here() is None:
        pytest.skip("a GPU may be here: torch is asked (and imported)")
    found = probe("config", "init", cwd=tmp_path)  # auto: this node; printed
    assert found["EXIT"] == "0"
    assert "# sized for: CPU ranks over gloo" in found["OUTPUT"]
    heavy = [m for m in found["LOADED"].split(",") if m in HEAVY]
    assert heavy == [], f"torchscale config init imported {heavy}"
