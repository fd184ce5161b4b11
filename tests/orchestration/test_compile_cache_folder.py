"""The compile toolchain is checked where the cells will compile (defect 6): the
probe builds its kernel in a fresh folder inside the experiment's compile cache folder, so a
results folder on NFS without locks or mounted noexec fails the check, not every compiled cell;
and when only that folder is at fault the cells compile in node-local storage, said in one line.

The probe's child is stood in for by a script that reports the cache folders it was given (a
real compile takes tens of seconds; tests/orchestration/test_compile_toolchain.py compiles for
real)."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

import torchscale.orchestration.launch.attempt
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.errors import ToolNotFoundError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording import validate_measured as shown
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.launch import compile_cache
from torchscale.orchestration.launch.compile_cache import (
    cache_folder_problem,
    node_local_cache_dir,
)
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.validate import checks_software
from torchscale.orchestration.validate import compile_toolchain as toolchain
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import CheckStatus
from torchscale.orchestration.validate.compile_toolchain import (
    Toolchain,
    cells_env,
    checked_probe,
    require_toolchain,
    run_probe,
)

INDUCTOR = "TORCHINDUCTOR_CACHE_DIR"
TRITON = "TRITON_CACHE_DIR"
ENV = {"PATH": os.environ.get("PATH", "/usr/bin"), "HOME": "/nowhere"}
# the child's stand-in: its arguments are -m MODULE --device D --out OUT; it reports the
# cache folders it was given and whether they were empty, as the real child's verdict would
FAKE_CHILD = """#!/bin/sh
n=$(ls -A "$TORCHINDUCTOR_CACHE_DIR" 2>/dev/null | wc -l)
printf '{"ok": true, "stage": "done", "binaries_built": 1, "cxx": "g++", "inductor": "%s", \
"triton": "%s", "entries": %s}' "$TORCHINDUCTOR_CACHE_DIR" "$TRITON_CACHE_DIR" "$n" > "$6"
"""


@pytest.fixture(autouse=True)
def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No verdict remembered by this process or kept in the user's cache folder."""
    monkeypatch.setattr(toolchain, "_VERDICTS", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def fake_child(tmp_path: Path) -> str:
    script = tmp_path / "fake-python"
    script.write_text(FAKE_CHILD, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


class Probe:
    """A stand-in probe: PASS, except where `fails_under` says the compile fails."""

    def __init__(self, fails_under: Path | None = None, compiler: str | None = "g++") -> None:
        self.envs: list[dict[str, str]] = []
        self.fails_under = fails_under
        self.compiler = compiler

    def __call__(self, device: str, env: Mapping[str, str]) -> Toolchain:
        self.envs.append(dict(env))
        where = Path(env.get(INDUCTOR, "/tmp"))
        if self.fails_under is not None and where.is_relative_to(self.fails_under):
            why = "OSError: failed to map segment from shared object"
            data = {"stage": "compile", "cxx": self.compiler}
            failed = Finding(code="compile.failed", figures={"reason": why, "tools": False})
            return Toolchain(device, False, [failed], [toolchain.FIXES["cpu"]], data)
        built = Finding(
            code="compile.built", figures={"device": device, "wall_s": 1, "binaries": 1}
        )
        return Toolchain(device, True, [built], data={"binaries_built": 1})


def probing_with(monkeypatch: pytest.MonkeyPatch, probe: Probe) -> None:
    """require_toolchain and validate ask checked_probe, with `probe` as the child."""

    def ask(device: str, env: Mapping[str, str]) -> Toolchain:
        return checked_probe(device, env, probe)

    monkeypatch.setattr(toolchain, "toolchain_for", ask)
    monkeypatch.setattr(checks_software, "toolchain_for", ask)


def child_in_process(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The probe's child answered in-process as FAKE_CHILD answers: the one call that runs it
    (compile_toolchain.run_child) writes the verdict that script writes, naming the cache
    folders it was given and how many entries the inductor one held. The argv of each call."""
    calls: list[list[str]] = []

    def run_child(
        argv: list[str], timeout_s: float, env: Mapping[str, str] | None = None
    ) -> SimpleNamespace:
        calls.append(list(argv))
        given = dict(env or {})
        inductor = Path(given.get(INDUCTOR, ""))
        entries = len(list(inductor.iterdir())) if inductor.is_dir() else 0
        verdict = {"ok": True, "stage": "done", "binaries_built": 1, "cxx": "g++"}
        verdict |= {"inductor": str(inductor), "triton": given.get(TRITON), "entries": entries}
        Path(argv[argv.index("--out") + 1]).write_text(json.dumps(verdict), encoding="utf-8")
        return SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(toolchain, "run_child", run_child)
    return calls


def _check_with_the_child_in_process(
    monkeypatch: pytest.MonkeyPatch, slow_test: Callable[[Path], None], tmp_path: Path
) -> None:
    """Checks `slow_test`'s checks hold with the probe's child answered in-process, run once."""
    calls = child_in_process(monkeypatch)
    slow_test(tmp_path)
    assert len(calls) == 1


# ------------------------------------------------------------ where the probe compiles


@pytest.mark.slow  # starts a child command
def test_the_probe_compiles_in_a_fresh_folder_inside_the_cells_cache_folder(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "results" / "exp" / "compile_cache"
    (cache / "old-kernel").mkdir(parents=True)  # a kernel cached by an earlier run
    found = run_probe("cpu", cells_env(ENV, cache), python=fake_child(tmp_path))
    assert found.ok, found.said()
    inductor, triton = Path(found.data["inductor"]), Path(found.data["triton"])
    assert inductor.is_relative_to(cache) and inductor != cache
    assert triton.is_relative_to(inductor.parent)
    assert found.data["entries"] == 0  # empty: nothing cached can stand in for the compiler
    assert sorted(p.name for p in cache.iterdir()) == ["old-kernel"]  # the scratch is gone


def test_the_probe_is_given_a_fresh_folder_inside_the_cells_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above, the child answered in-process: where the probe compiles and what it
    leaves are decided here."""
    _check_with_the_child_in_process(
        monkeypatch,
        test_the_probe_compiles_in_a_fresh_folder_inside_the_cells_cache_folder,
        tmp_path,
    )


@pytest.mark.slow  # starts a child command
def test_a_cache_folder_not_made_yet_is_probed_in_the_folder_above(tmp_path: Path) -> None:
    """Nothing is written before the run starts: the probe compiles on the filesystem the
    folder will be made on, and leaves nothing there."""
    results = tmp_path / "results"
    results.mkdir()
    found = run_probe(
        "cpu", cells_env(ENV, results / "exp" / "compile_cache"), python=fake_child(tmp_path)
    )
    assert Path(found.data["inductor"]).is_relative_to(results)
    assert list(results.iterdir()) == []


def test_a_cache_folder_not_made_yet_is_given_the_folder_above_to_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check_with_the_child_in_process(
        monkeypatch, test_a_cache_folder_not_made_yet_is_probed_in_the_folder_above, tmp_path
    )


@pytest.mark.slow  # starts a child command
def test_a_users_own_cache_folder_is_the_one_probed(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    env = cells_env({**ENV, INDUCTOR: str(mine)}, tmp_path / "exp" / "compile_cache")
    found = run_probe("cpu", env, python=fake_child(tmp_path))
    assert Path(found.data["inductor"]).is_relative_to(tmp_path) and env[INDUCTOR] == str(mine)


def test_a_users_own_cache_folder_is_the_one_given_to_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check_with_the_child_in_process(
        monkeypatch, test_a_users_own_cache_folder_is_the_one_probed, tmp_path
    )


# --------------------------------------------------- a folder that cannot hold a cache


def test_a_folder_that_cannot_be_written_sends_the_cells_to_node_local_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path under a file stands in for an unwritable folder (chmod does not bind root)."""
    (tmp_path / "afile").write_text("", encoding="utf-8")
    cache = tmp_path / "afile" / "exp" / "compile_cache"
    probe = Probe()
    probing_with(monkeypatch, probe)
    said: list[str] = []
    checked = require_toolchain({"cpu"}, ENV, said.append, cache)
    local = str(node_local_cache_dir())
    assert checked.env[INDUCTOR] == local and checked.env[TRITON] == str(Path(local) / "triton")
    assert checked.fallback is not None and "\n" not in checked.fallback
    assert checked.fallback.startswith(f"the compile cache cannot live in {cache} (")
    assert "is not a folder" in checked.fallback
    assert checked.fallback.endswith(f"the cells compile in node-local {local} instead")
    assert said.count(checked.fallback) == 1
    assert [env[INDUCTOR] for env in probe.envs] == [local]  # the toolchain, probed locally


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through chmod 555")
def test_a_read_only_results_folder_sends_the_cells_to_node_local_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o555)
    try:
        probing_with(monkeypatch, Probe())
        checked = require_toolchain({"cpu"}, ENV, cache_dir=results / "exp" / "compile_cache")
    finally:
        results.chmod(0o755)
    assert checked.env[INDUCTOR] == str(node_local_cache_dir())
    assert checked.fallback is not None and f"cannot write in {results}" in checked.fallback


def test_noexec_and_lock_failures_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cache_folder_problem(tmp_path / "exp" / "compile_cache") is None
    real_statvfs = os.statvfs
    monkeypatch.setattr(
        compile_cache.os,
        "statvfs",
        lambda path: SimpleNamespace(f_flag=real_statvfs(path).f_flag | os.ST_NOEXEC),
    )
    noexec = cache_folder_problem(tmp_path / "exp")
    assert noexec == f"{tmp_path} is on a filesystem mounted noexec: built kernels cannot be loaded"
    monkeypatch.setattr(compile_cache.os, "statvfs", real_statvfs)

    def no_locks(handle: Any, how: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(compile_cache.fcntl, "flock", no_locks)
    locks = cache_folder_problem(tmp_path)
    assert locks is not None and locks.startswith(f"files in {tmp_path} cannot be locked")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("torchscale-cache-check-")]


def test_a_compile_that_fails_only_in_the_folder_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick check passes but the kernel cannot be loaded from the folder (a noexec mount
    the flags do not show, say): the compile in node-local storage passes, the cells go there."""
    cache = tmp_path / "exp" / "compile_cache"
    probe = Probe(fails_under=tmp_path)
    probing_with(monkeypatch, probe)
    checked = require_toolchain({"cpu"}, ENV, cache_dir=cache)
    assert [env[INDUCTOR] for env in probe.envs] == [str(cache), str(node_local_cache_dir())]
    assert checked.verdicts[0].ok and checked.env[INDUCTOR] == str(node_local_cache_dir())
    assert checked.fallback is not None
    assert "a compile there failed: OSError: failed to map segment" in checked.fallback


def test_a_missing_compiler_is_refused_without_a_second_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = Probe(fails_under=Path("/"), compiler=None)
    probing_with(monkeypatch, probe)
    with pytest.raises(ToolNotFoundError, match="cannot build a kernel on cpu"):
        require_toolchain({"cpu"}, ENV, cache_dir=tmp_path / "exp" / "compile_cache")
    assert len(probe.envs) == 1


def test_a_healthy_folder_leaves_the_cells_environment_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probing_with(monkeypatch, Probe())
    checked = require_toolchain({"cpu"}, ENV, cache_dir=tmp_path / "exp" / "compile_cache")
    assert checked.fallback is None and checked.env == ENV


def test_validate_warns_with_the_fallback_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("", encoding="utf-8")
    probing_with(monkeypatch, Probe())
    ctx = ValidateContext(device="cpu", output_dir=tmp_path / "afile", quick=False)
    ctx.__dict__["torch"] = SimpleNamespace(module=object(), error=None, cuda_gpu_count=0)
    check = checks_software.check_compile(ctx)
    assert check.status is CheckStatus.WARN
    said = shown.detail(check)
    assert said.startswith("the compile cache cannot live in ")
    assert "node-local" in said and "TORCHINDUCTOR_CACHE_DIR" in shown.hint(check)
    fine = ValidateContext(device="cpu", output_dir=tmp_path / "results", quick=False)
    fine.__dict__["torch"] = ctx.torch
    assert checks_software.check_compile(fine).status is CheckStatus.PASS


# ------------------------------------------------------------------ through benchmark


def test_benchmark_launches_its_cells_with_the_node_local_cache_after_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[Any] = []

    def launch(command: Any, timeout_s: float, finished: Any = None) -> ProcessOutcome:
        launched.append(command)
        spec = json.loads(Path(command.argv[-1]).read_text(encoding="utf-8"))
        ok = CellResult(cell=CellIdentity.model_validate(spec["cell"]), status=Status.OK)
        Path(spec["result_path"]).write_text(ok.model_dump_json(), encoding="utf-8")
        return ProcessOutcome(0, False, 0.1, command.log_path)

    out = tmp_path / "results"

    def problem(folder: Path) -> str | None:
        return "mounted noexec" if folder.is_relative_to(out) else None

    monkeypatch.setattr(torchscale.orchestration.launch.attempt, "run_launch", launch)
    monkeypatch.setattr(toolchain, "cache_folder_problem", problem)
    probing_with(monkeypatch, Probe())
    config = tmp_path / "c.yaml"
    cpu = {"models": ["tiny-mlp"], "batch_sizes": [8], "gpu_counts": [1], "device": "cpu"}
    measurement = {"warmup_steps": 1, "steps": 3, "repeats": 1}
    config.write_text(
        json.dumps(
            {**cpu, "experiment_name": "nfs", "measurement": measurement,
             "training": {"compile": True}}
        ),
        encoding="utf-8",
    )  # fmt: skip
    monkeypatch.delenv(INDUCTOR, raising=False)
    monkeypatch.delenv(TRITON, raising=False)
    run = CliRunner().invoke(app, ["benchmark", "-c", str(config), "-o", str(out)])
    assert run.exit_code == 0, run.output
    flat = " ".join(run.output.split())
    expected = (
        f"the compile cache cannot live in {out / 'nfs' / 'compile_cache'} (mounted noexec): "
        f"the cells compile in node-local {node_local_cache_dir()} instead"
    )
    assert flat.count(expected) == 1, run.output
    [command] = launched
    assert command.env[INDUCTOR] == str(node_local_cache_dir())


@pytest.mark.slow  # starts an nsys command
def test_profile_launches_with_the_node_local_cache_and_says_so_in_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from torchscale.interfaces.api import profile as api

    real_plan = api.plan_profile

    def compiled(*args: Any, **kwargs: Any) -> Any:
        plan = real_plan(*args, **kwargs)
        training = plan.planned.training.model_copy(update={"compile": True})
        return dataclasses.replace(
            plan, planned=dataclasses.replace(plan.planned, training=training)
        )

    def problem(folder: Path) -> str | None:
        return "mounted noexec" if folder.is_relative_to(tmp_path) else None

    launched: list[Mapping[str, str]] = []

    def launch(planned: Any, store: Any, env: Mapping[str, str], request: Any) -> Any:
        launched.append(env)
        raise RuntimeError("stop here: the launch is what this test looks at")

    monkeypatch.setattr(api, "plan_profile", compiled)
    monkeypatch.setattr(toolchain, "cache_folder_problem", problem)
    monkeypatch.setattr("torchscale.orchestration.profiling.session.launch_profiled", launch)
    probing_with(monkeypatch, Probe())
    notes: list[str] = []
    with pytest.raises(RuntimeError, match="stop here"):
        api.run_profile(
            api.ProfileOptions(gpus=1, device="cpu", steps=2),
            tmp_path,
            env=ENV,
            on_start=lambda plan: notes.extend(plan.notes),
        )
    [env] = launched
    assert env[INDUCTOR] == str(node_local_cache_dir())
    [line] = [n for n in notes if n.startswith("the compile cache cannot live in ")]
    assert f"in {tmp_path}" in line and line.endswith("instead")


def test_profile_launches_with_the_node_local_cache_and_a_note_with_no_nsys_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above with no nsys found (in-process): `--tool auto` asks for one, and the
    cache folder's note and the launch's environment do not depend on the answer."""
    from torchscale.orchestration.profiling import nsys

    monkeypatch.setattr(nsys, "find_nsys", lambda *a, **k: None)
    test_profile_launches_with_the_node_local_cache_and_says_so_in_a_note(tmp_path, monkeypatch)
