"""docs/first-gpu-run.md runs as written. Read from the page itself: every file its commands name is
in the repository, every config given with -c validates and plans on the node the page is about (8
GPUs of 80 GiB, per node under Slurm) without a skipped cell, every `torchscale` command parses with
its options, and the Slurm section's dry run writes its scripts here, off any cluster."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config import load_config
from torchscale.orchestration.config.hardware import GIB
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "first-gpu-run.md"
# the node the page is about: 8 GPUs of 80 GiB (an H100 SXM node), 8 cores per GPU
NODE = Machine(gpu_count=8, cpu_cores=64, gpu_memory_bytes=80 * GIB)
SHELL_ENDS = {">", ">>", "|", "&&", "||", ";", "2>", "&"}
runner = CliRunner()


def doc_commands() -> list[list[str]]:
    """argv of every command line in the page's ```bash blocks (comments, redirections and
    pipes cut off)."""
    text = DOC.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            argv = shlex.split(line, comments=True)
            for index, word in enumerate(argv):
                if word in SHELL_ENDS:
                    argv = argv[:index]
                    break
            if argv:
                commands.append(argv)
    return commands


def option_value(argv: list[str], *names: str) -> str | None:
    for index, word in enumerate(argv):
        if word in names and index + 1 < len(argv):
            return argv[index + 1]
        for name in names:
            if word.startswith(f"{name}="):
                return word.split("=", 1)[1]
    return None


def config_files() -> list[str]:
    """The configs the page passes with -c/--config, once each, in order."""
    found = [option_value(argv, "-c", "--config") for argv in doc_commands()]
    return list(dict.fromkeys(f for f in found if f is not None))


def test_the_page_is_read() -> None:
    """The parsing finds what the page asks for (a rewrite that hides commands fails here)."""
    files = config_files()
    assert "examples/first-gpu-run/oom.yaml" in files
    assert "examples/first-gpu-run/two-nodes.yaml" in files
    assert len(files) >= 4
    assert sum(argv[0] == "torchscale" for argv in doc_commands()) >= 12


@pytest.mark.parametrize("name", config_files())
@pytest.mark.slow  # starts a child process
def test_every_config_the_page_names_is_shipped_and_plans_on_its_node(name: str) -> None:
    path = REPO / name
    assert path.is_file(), f"docs/first-gpu-run.md runs `-c {name}`, which is not shipped"
    validated = runner.invoke(app, ["config", "validate", str(path)])
    assert validated.exit_code == 0, validated.output
    config = load_config(path)
    if config.launcher.kind == "slurm":  # planned as the login node plans it
        from torchscale.orchestration.schedulers.slurm.launcher import SlurmAllocations

        machine = SlurmAllocations().machine(config)
    else:
        machine = NODE
    plan = build_plan(config, machine)
    assert plan.cells
    skipped = [(p.cell.id, p.skip_reason) for p in plan if p.skip_reason]
    assert not skipped, skipped
    assert {p.cell.device for p in plan} == {"cuda"}


@pytest.fixture()
def no_slurm_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slurm's commands answer as where none is on PATH (FileNotFoundError from the child's
    start, which subprocess raises there), without a child started to find out."""
    from torchscale.orchestration.schedulers.slurm import client

    def not_on_path(argv: list[str], *args: object, **kwargs: object) -> None:
        raise FileNotFoundError(2, "No such file or directory", argv[0])

    monkeypatch.setattr(client, "run_child", not_on_path)


@pytest.mark.parametrize("name", config_files())
@pytest.mark.usefixtures("no_slurm_here")
def test_every_config_the_page_names_is_shipped_and_plans_on_its_node_off_a_cluster(
    name: str,
) -> None:
    """The same checks in this process, Slurm's commands answering as off a cluster."""
    test_every_config_the_page_names_is_shipped_and_plans_on_its_node(name)


def test_every_script_the_page_runs_exists_with_its_options() -> None:
    scripts = [argv[1:] for argv in doc_commands() if argv[0] == "python"]
    assert scripts
    for script, *args in scripts:
        path = REPO / script
        assert path.is_file(), f"docs/first-gpu-run.md runs `python {script}`, which is missing"
        source = path.read_text(encoding="utf-8")
        for flag in (a for a in args if a.startswith("--")):
            assert f'"{flag}"' in source, f"{script} has no option {flag}"


def _parse(argv: list[str]) -> Any:
    """The click context of `torchscale ...` as the shell would pass it: options checked and
    converted, nothing run."""
    command: Any = typer.main.get_command(app)
    words = argv[1:]
    while isinstance(command, typer.core.TyperGroup) and words and words[0] in command.commands:
        command = command.commands[words.pop(0)]
    return command.make_context(argv[0], list(words))


@pytest.mark.parametrize(
    "argv",
    [argv for argv in doc_commands() if argv[0] == "torchscale"],
    ids=lambda argv: " ".join(argv[1:3]),
)
def test_every_torchscale_command_on_the_page_parses(argv: list[str]) -> None:
    _parse(argv)


def test_the_oom_config_cannot_fit_by_the_auto_estimate() -> None:
    """Step 5's batch is far beyond what the estimate behind `batch_sizes: auto` fits on the
    page's GPUs, so the failure it is for happens."""
    from torchscale.orchestration.plan.build import batch_sizes

    config = load_config(REPO / "examples" / "first-gpu-run" / "oom.yaml")
    (listed,) = {b for sizes in batch_sizes(config, NODE)[0].values() for b in sizes}
    auto = config.model_copy(update={"batch_sizes": "auto"})
    (fits,) = {b for sizes in batch_sizes(auto, NODE)[0].values() for b in sizes}
    assert listed >= 4 * fits, (listed, fits)


def test_the_two_node_batches_fit_by_the_auto_estimate() -> None:
    """The Slurm config lists its batches (auto cannot size them on a login node): none above
    what auto picks on the page's GPUs, and the largest is that pick."""
    from torchscale.orchestration.plan.build import batch_sizes

    config = load_config(REPO / "examples" / "first-gpu-run" / "two-nodes.yaml")
    listed = sorted({b for sizes in batch_sizes(config, NODE)[0].values() for b in sizes})
    auto = config.model_copy(update={"batch_sizes": "auto"})
    (fits,) = {b for sizes in batch_sizes(auto, NODE)[0].values() for b in sizes}
    assert listed[-1] == fits, (listed, fits)


@pytest.mark.slow  # starts a child command
def test_the_slurm_section_dry_runs_here_and_shows_the_shipped_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its dry run writes one sbatch script per node count (no Slurm here: the warnings say
    what was not checked), its yaml block is the shipped file's, and the refusal it quotes for
    `batch_sizes: auto` is the one the launcher prints."""
    text = DOC.read_text(encoding="utf-8")
    path = REPO / "examples" / "first-gpu-run" / "two-nodes.yaml"
    section = text[text.index("## Two nodes, 8 GPUs each, under Slurm") :]
    (block,) = re.findall(r"```yaml\n(.*?)```", section.split("\n## ")[0], flags=re.S)
    assert block in path.read_text(encoding="utf-8")

    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm"))
    out = tmp_path / "results"
    dry = runner.invoke(app, ["benchmark", "-c", str(path), "-o", str(out), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    scripts = sorted((out / "two_nodes" / "slurm").glob("*/job.sbatch"))
    assert len(scripts) == 2
    assert all("#SBATCH --gpus-per-node=8" in s.read_text(encoding="utf-8") for s in scripts)

    auto = runner.invoke(
        app,
        ["benchmark", "-c", str(path), "-o", str(out), "--dry-run", "--set", "batch_sizes=auto"],
    )
    assert auto.exit_code == 2, auto.output
    (error,) = [line for line in auto.output.splitlines() if line.startswith("error:")]
    assert f"\n{error}\n" in text


@pytest.mark.usefixtures("no_slurm_here")
def test_the_slurm_section_dry_runs_here_and_shows_the_shipped_config_off_a_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same checks in this process, Slurm's commands answering as off a cluster."""
    test_the_slurm_section_dry_runs_here_and_shows_the_shipped_config(tmp_path, monkeypatch)
