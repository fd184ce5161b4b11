"""One launch path, enforced: every torchrun torchscale starts (sweep cells, max-batch
probes, Slurm steps, profiled runs, the collective sweep, validate's smoke test) goes through
`torchscale.orchestration.launch.attempt.run_attempt`, which alone calls
`launch.process.run_launch`.

What the rule covers: starting a torchrun launch (a `LaunchCommand` built by
launch/torchrun.py, the `torch.distributed.run` argv). Other programs are started elsewhere,
each module listed below with what it starts (the list must match the code exactly): Slurm's
and Kubernetes' clients, nsys, the chart renderer, and the srun steps that are not
torchrun (each node's environment, `torchscale validate` on every node, through
`launch.process.run_logged`, which owns the process group and the timeout).
`schedulers/slurm/node.py` runs on each node inside an srun step that run_attempt started, and
replaces itself with that node's torchrun: it is part of that launch, not a launch of its own.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "torchscale"
LAUNCH = PACKAGE / "orchestration" / "launch"
ONE_PATH = LAUNCH / "attempt.py"
DEFINED = LAUNCH / "process.py"

# module (relative to torchscale/) -> the programs it starts, none of them a torchrun launch
STARTS_OTHER_PROGRAMS: dict[str, str] = {
    "contracts/host.py": "python -c asking torch the GPUs' memory (batch_sizes: auto; no "
    "CUDA context left in the host)",
    "orchestration/profiling/nsys.py": "nsys (--version, export to SQLite)",
    "orchestration/schedulers/kubernetes/manifests.py": "kubectl",
    "orchestration/schedulers/slurm/client.py": "sbatch, squeue, scontrol, scancel",
    "orchestration/schedulers/slurm/driver.py": "srun of each node's environment record "
    "(run_logged)",
    "orchestration/schedulers/slurm/preflight.py": "srun of `torchscale validate --json` on "
    "every node (run_logged)",
    "orchestration/schedulers/slurm/node.py": "replaces itself with its node's torchrun, "
    "inside a run_attempt launch",
    "orchestration/validate/checks_software.py": "`nsys --version`",
    "orchestration/validate/compile_toolchain.py": "python -m the compile probe (one kernel "
    "built and run)",
}
# a string torchrun's argv carries: only the builder (launch/torchrun.py) spells it, besides
# these modules (relative to torchscale/) -> why
MENTIONS_TORCHRUN: dict[str, str] = {
    "orchestration/validate/checks_software.py": "checks that torchrun can be imported",
    "contracts/wording/validate_host.py": "words the check that torchrun can be imported",
    "rank/worker/fixed_costs.py": "knows its parent is torchrun, to time the launch",
}
TORCHRUN_MODULE = "torch.distributed.run"

_PROCESS_MODULES = frozenset({"subprocess", "multiprocessing", "pty"})
_OS_STARTERS = ("exec", "spawn", "posix_spawn", "system", "popen", "fork")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _names(tree: ast.AST) -> set[str]:
    """Every name a module refers to or imports (`x`, `a.x`, `from a import x`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
    return names


def _os_starter(node: ast.AST) -> bool:
    """`os.execvpe`, `os.spawnv`, `os.system`, ... (the attribute, called or not)."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.attr.startswith(_OS_STARTERS)
    )


def _starts_processes(tree: ast.AST) -> bool:
    """Imports a process-starting module or `run_logged`, or uses os.exec*/spawn*/system/..."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
            if any(alias.name == "run_logged" for alias in node.names):
                return True
        else:
            modules = []
        if any(m.split(".")[0] in _PROCESS_MODULES for m in modules) or _os_starter(node):
            return True
    return False


def _starter_calls(tree: ast.AST) -> list[ast.Call]:
    """Calls to subprocess.*, run_logged or os.exec*/spawn* (what would start a command)."""
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        by_name = isinstance(func, ast.Name) and func.id == "run_logged"
        by_module = (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "subprocess"
        )
        if by_name or by_module or _os_starter(func):
            calls.append(node)
    return calls


def _strings(tree: ast.AST) -> set[str]:
    """String constants, docstrings left out (they may describe a launch)."""
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


@functools.cache  # each test walks every module: parsed once per run, never changed
def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@pytest.mark.slow  # over 2 s on 2 cores: parses every module of the package
def test_only_run_attempt_calls_run_launch() -> None:
    callers = [
        _relative(path)
        for path in _modules()
        if path not in (ONE_PATH, DEFINED) and "run_launch" in _names(_tree(path))
    ]
    assert callers == [], (
        "start torchrun through torchscale.orchestration.launch.attempt.run_attempt"
    )
    assert "run_launch" in _names(_tree(ONE_PATH))


@pytest.mark.slow  # over 2 s on 2 cores: parses every module of the package
def test_processes_outside_launch_are_listed_and_none_is_torchrun() -> None:
    starters: dict[str, list[str]] = {}
    for path in _modules():
        if path.is_relative_to(LAUNCH):
            continue
        tree = _tree(path)
        if not _starts_processes(tree):
            continue
        runs_a_launch = [
            ast.unparse(call)
            for call in _starter_calls(tree)
            if any(
                isinstance(arg, ast.Attribute) and arg.attr == "argv"
                for arg in [*call.args, *(k.value for k in call.keywords)]
            )
        ]
        starters[_relative(path)] = runs_a_launch
    assert sorted(starters) == sorted(STARTS_OTHER_PROGRAMS), (
        "a module outside torchscale/orchestration/launch/ starts processes: a torchrun goes "
        "through launch.attempt.run_attempt; anything else is listed in STARTS_OTHER_PROGRAMS"
    )
    assert {module: calls for module, calls in starters.items() if calls} == {}, (
        "a LaunchCommand's argv is run outside launch.attempt.run_attempt"
    )


@pytest.mark.slow  # over 2 s on 2 cores: parses every module of the package
def test_only_the_builder_spells_the_torchrun_module() -> None:
    spelled = {
        _relative(path)
        for path in _modules()
        if not path.is_relative_to(LAUNCH)
        and any(TORCHRUN_MODULE in text for text in _strings(_tree(path)))
    }
    assert spelled == set(MENTIONS_TORCHRUN), (
        "build torchrun's argv with torchscale.orchestration.launch.torchrun.torchrun_command"
    )
    assert any(TORCHRUN_MODULE in text for text in _strings(_tree(LAUNCH / "torchrun.py")))


def test_the_checks_see_a_direct_launch() -> None:
    """A module that runs a built command itself is caught, however it imports."""
    direct = ast.parse(
        "import subprocess\n"
        "from torchscale.orchestration.launch import process\n"
        "def go(command):\n"
        "    subprocess.run(command.argv, env=command.env)\n"
        "    process.run_launch(command, 60)\n"
    )
    assert _starts_processes(direct)
    assert "run_launch" in _names(direct)
    calls = [ast.unparse(call) for call in _starter_calls(direct)]
    assert calls == ["subprocess.run(command.argv, env=command.env)"]
    argv = ast.parse("ARGV = ['python', '-m', 'torch.distributed.run']\n")
    assert any(TORCHRUN_MODULE in text for text in _strings(argv))
    assert not _strings(ast.parse('"""Runs python -m torch.distributed.run."""\n'))
