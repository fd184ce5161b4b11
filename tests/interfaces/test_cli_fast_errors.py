"""A mistake is answered before the heavy imports: a missing or bad config, a bad option, an
unwritable output folder or a missing traces folder is one `error:` line and exit 2 from an
interpreter that never imported torch, pandas, numpy or scipy; a dry run on a node where no GPU
can be plans without any of them, and no command's `--help` imports one. The mistakes are the
ones benchmarks/small_commands.py times (its list), each run as `torchscale ARGS` in a fresh
interpreter; the time itself is the benchmark's to measure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests import import_probe
from torchscale.interfaces.cli.root import SUBCOMMANDS
from torchscale.orchestration.config.hardware import no_gpu_here

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = REPO_ROOT / "benchmark_config.yaml"
HEAVY = ("torch", "pandas", "numpy", "scipy")

_PROBE = """\
import sys
sys.argv = ["torchscale", *{args!r}]
from torchscale.interfaces.cli.app import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = ",".join(m for m in {heavy!r} if m in sys.modules) or "-"
print(f"PROBE {{code}} {{loaded}}", file=sys.stderr)
"""


def _script() -> ModuleType:
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    try:
        import small_commands
    finally:
        sys.path.remove(str(REPO_ROOT / "benchmarks"))
    return small_commands


def run(args: tuple[str, ...], cwd: Path) -> tuple[int, str, list[str]]:
    """`torchscale ARGS` in a fresh interpreter: its exit code, the heavy modules it imported
    ('-': none) and what it wrote to stderr before the probe's line."""
    code = _PROBE.format(args=list(args), heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**_clean_env(), "COLUMNS": "200"},
        timeout=300,
        check=False,
    )
    *said, probe = done.stderr.rstrip("\n").splitlines() or [""]
    assert probe.startswith("PROBE "), done.stderr
    _, exit_code, loaded = probe.split(" ")
    return int(exit_code), loaded, said


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PY_COLORS")}


def _mistakes(scratch: Path) -> dict[str, tuple[str, ...]]:
    """The benchmark's mistakes, their input files written to `scratch`."""
    script = _script()
    script.write_inputs(scratch)
    return dict(script.mistakes(CONFIG, scratch))


MISTAKES = [label for label, _ in _script().mistakes(CONFIG, Path("scratch"))]


@pytest.mark.parametrize("label", MISTAKES)
@pytest.mark.slow  # starts a child process
def test_a_mistake_is_one_line_before_torch_or_pandas(label: str, tmp_path: Path) -> None:
    args = _mistakes(tmp_path / "inputs")[label]
    exit_code, loaded, said = run(args, tmp_path)
    assert exit_code == 2, said
    errors = [line for line in said if line.startswith("error:")]
    assert len(errors) >= 1 and not any("Traceback" in line for line in said), said
    assert loaded == "-", f"torchscale {' '.join(args)} imported {loaded} before answering"


@pytest.mark.slow  # starts a child process
def test_the_bad_config_is_every_problem_of_the_file(tmp_path: Path) -> None:
    """(a config's problems come together, one line each: more than one line is no stack)"""
    args = _mistakes(tmp_path / "inputs")["benchmark: bad config"]
    _, _, said = run(args, tmp_path)
    assert said and all(line.startswith("error: ") for line in said), said


@pytest.mark.slow  # starts a fresh interpreter
def test_a_dry_run_where_no_gpu_can_be_imports_no_heavy_library(tmp_path: Path) -> None:
    """The plan is printed without the libraries a run needs: no live table or progress bar,
    no sweep, no results read (pandas, numpy, scipy), no torch to count GPUs that cannot be
    there."""
    if no_gpu_here() is None:
        pytest.skip("a GPU may be here: torch is asked (and imported) to count them")
    dry24 = _script().write_inputs(tmp_path / "inputs")["dry24"]
    args = ("benchmark", "-c", str(dry24), "-o", str(tmp_path / "results"), "--dry-run")
    unused = (*HEAVY, "rich.progress")
    found = import_probe.probe(args, unused, env={**_clean_env(), "COLUMNS": "200"})
    assert found["EXIT"] == "0", found["OUTPUT"]
    assert found["LOADED"] == "-", f"the dry run imported {found['LOADED']}"
    assert "24 cell(s) to run" in found["OUTPUT"]
    assert not (tmp_path / "results").exists()  # a dry run leaves nothing behind


@pytest.mark.slow  # starts a fresh interpreter each
@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_a_commands_help_imports_no_heavy_library(name: str) -> None:
    found = import_probe.probe((name, "--help"), HEAVY, env=_clean_env())
    assert found["EXIT"] == "0", found["OUTPUT"]
    assert found["LOADED"] == "-", f"torchscale {name} --help imported {found['LOADED']}"


@pytest.mark.slow  # starts a child process
def test_the_benchmark_times_every_mistake_against_its_target(tmp_path: Path) -> None:
    script = _script()
    timed = {c.label: c for c in script.commands(CONFIG, slow=False, scratch=tmp_path)}
    for label in MISTAKES:
        command = timed[f"error: {label}"]
        assert (command.target_s, command.exit_codes) == (script.ERROR_TARGET_S, (2,))
    assert timed["benchmark --dry-run (24 cells)"].target_s == script.DRY_RUN_TARGET_S
    assert timed["torchscale --help"].target_s == script.HELP_TARGET_S
