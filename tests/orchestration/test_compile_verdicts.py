"""The compile probe's PASS is kept per machine and toolchain (fast basic validate):
the next `validate` reads it back ("cached from <date>"), a FAIL is never kept, and a change of
compiler, toolchain variable or cache folder asks the compiler again. The probe is stood in for
(tests/orchestration/test_compile_toolchain.py compiles for real)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from torchscale.contracts.finding import Finding
from torchscale.orchestration.validate import compile_toolchain as toolchain
from torchscale.orchestration.validate import compile_verdicts
from torchscale.orchestration.validate.compile_toolchain import Toolchain, known_or_probed

BUILT = Finding(code="compile.built", figures={"device": "cpu", "wall_s": 40, "binaries": 1})
PASS = Toolchain("cpu", True, [BUILT], data={"x": 1})


class Probe:
    def __init__(self, verdict: Toolchain = PASS) -> None:
        self.verdict = verdict
        self.calls = 0

    def __call__(self, device: str, env: Mapping[str, str]) -> Toolchain:
        self.calls += 1
        return self.verdict


@pytest.fixture()
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "torchscale" / "compile-toolchain"


def fake_compiler(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / "g++"
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_pass_is_kept_and_read_back_with_its_date(xdg: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "")}
    probe = Probe()
    first = known_or_probed("cpu", env, probe)
    assert first == PASS and probe.calls == 1
    [kept] = xdg.glob("*.json")
    created = json.loads(kept.read_text(encoding="utf-8"))["created_at"]
    again = known_or_probed("cpu", env, probe)
    assert probe.calls == 1  # read back, nothing compiled
    assert again.ok and again.said().startswith(PASS.said() + "; cached from ")
    assert again.findings[-1] == Finding(code="compile.cached", figures={"created_at": created})
    stored = json.loads(kept.read_text(encoding="utf-8"))
    assert stored["version"] == 2 and stored["findings"] == [BUILT.model_dump()]
    assert "detail" not in stored  # codes and figures, no sentence
    assert again.data["x"] == 1 and again.data["kept_in"] == str(kept)


def _failed(reason: str) -> Finding:
    return Finding(code="compile.failed", figures={"reason": reason, "tools": False})


def test_a_fail_is_never_kept(xdg: Path) -> None:
    broken = Toolchain("cpu", False, [_failed("InvalidCxxCompiler")], [toolchain.FIXES["cpu"]])
    probe = Probe(broken)
    for _ in range(2):
        assert not known_or_probed("cpu", {"PATH": "/usr/bin"}, probe).ok
    assert probe.calls == 2 and not list(xdg.glob("*.json"))


def test_a_new_compiler_variable_or_folder_asks_again(xdg: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    compiler = fake_compiler(bin_dir)
    env = {"PATH": str(bin_dir)}
    probe = Probe()
    known_or_probed("cpu", env, probe)
    known_or_probed("cpu", env, probe)
    assert probe.calls == 1
    os.utime(compiler, ns=(0, 0))  # a reinstalled compiler
    known_or_probed("cpu", env, probe)
    assert probe.calls == 2
    known_or_probed("cpu", {**env, "CXX": "clang++"}, probe)
    known_or_probed("cuda", env, probe)
    assert probe.calls == 4


def test_a_cache_folder_on_the_same_filesystem_reads_the_pass_back(
    xdg: Path, tmp_path: Path
) -> None:
    """`validate` from another directory of the same disk compiles nowhere new; a cache
    folder on another filesystem (its noexec or locks may differ) is asked again."""
    env = {"PATH": "/usr/bin"}
    probe = Probe()
    for folder in ("a/compile_cache", "b/compile_cache"):
        known_or_probed("cpu", {**env, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / folder)}, probe)
    assert probe.calls == 1
    here = compile_verdicts.filesystem(tmp_path)
    other = Path("/dev/shm")
    if not other.is_dir() or compile_verdicts.filesystem(other) == here:
        pytest.skip("no second filesystem to point a cache at")
    known_or_probed("cpu", {**env, "TORCHINDUCTOR_CACHE_DIR": str(other / "x")}, probe)
    assert probe.calls == 2


def test_a_damaged_or_foreign_file_is_no_verdict(xdg: Path) -> None:
    env = {"PATH": "/usr/bin"}
    probe = Probe()
    known_or_probed("cpu", env, probe)
    [kept] = xdg.glob("*.json")
    kept.write_text("{not json", encoding="utf-8")
    known_or_probed("cpu", env, probe)
    assert probe.calls == 2
    data = json.loads(kept.read_text(encoding="utf-8"))
    data["key"]["host"] = "elsewhere"
    kept.write_text(json.dumps(data), encoding="utf-8")
    known_or_probed("cpu", env, probe)
    assert probe.calls == 3


def test_an_unwritable_cache_folder_only_loses_the_keeping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "afile"))
    probe = Probe()
    assert known_or_probed("cpu", {}, probe) == PASS
    assert known_or_probed("cpu", {}, probe) == PASS and probe.calls == 2


def test_the_user_cache_folder_defaults_to_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    expected = Path.home() / ".cache" / "torchscale" / "compile-toolchain"
    assert compile_verdicts.verdict_folder(os.environ) == expected
