"""Small commands start fast: `--help` builds no sub-command, `--help`, `list`, `config show`
and `config init --hardware cpu` import no torch or pandas, and the root's help, listed from the
help lines stored in cli/root.py, is exactly what the built commands say."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer.main
from typer.core import TyperGroup
from typer.testing import CliRunner

from tests import import_probe
from torchscale.contracts.model_specs.listing import rows
from torchscale.interfaces.cli.root import SUBCOMMANDS, LazyCommands, app, build_subcommand

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = REPO_ROOT / "benchmark_config.yaml"
HEAVY = ("torch", "pandas", "plotly", "weasyprint", "numpy")


def probe(*args: str) -> dict[str, str]:
    """Run `torchscale ARGS` in a fresh interpreter: exit code, heavy modules, command modules."""
    return import_probe.probe(args, HEAVY)


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("list",),
        ("list", "--json"),
        ("config", "show", str(CONFIG)),
        ("config", "init", "--hardware", "cpu"),
    ],
    ids=" ".join,
)
@pytest.mark.slow  # starts a child process
def test_small_commands_import_no_heavy_library(args: tuple[str, ...]) -> None:
    found = probe(*args)
    assert found["EXIT"] == "0"
    assert found["LOADED"] == "-", f"torchscale {' '.join(args)} imported {found['HEAVY']}"


@pytest.mark.slow  # starts a fresh interpreter
def test_help_imports_no_command_module() -> None:
    assert probe("--help")["COMMANDS"] == "-"


@pytest.mark.slow  # starts a fresh interpreter
def test_a_command_imports_only_its_own_module() -> None:
    assert probe("list", "--json")["COMMANDS"] == "torchscale.interfaces.cli.list_cmd"


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_stored_help_line_is_the_commands_own(name: str) -> None:
    built = build_subcommand(name)
    assert built.name == name
    assert (built.help or "").split("\n\n")[0] == SUBCOMMANDS[name].summary, (
        f"update the help line of {name!r} in SUBCOMMANDS (torchscale/interfaces/cli/root.py)"
    )
    assert (built.short_help, built.hidden, built.deprecated) == (None, False, False)
    assert not getattr(built, "rich_help_panel", None)


def test_root_help_is_the_same_with_every_command_built(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    lazy = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    # without the stand-ins: the help builds every command, as the eager root did
    monkeypatch.setattr(LazyCommands, "format_help", TyperGroup.format_help)
    built = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert lazy.exit_code == built.exit_code == 0
    assert lazy.output == built.output
    for name in SUBCOMMANDS:
        assert name in lazy.output


def test_the_command_tree_holds_the_real_commands() -> None:
    # what walks group.commands (docs, completion) sees every option, as before
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    assert list(group.commands) == list(SUBCOMMANDS)
    options = {name: {o for p in c.params for o in p.opts} for name, c in group.commands.items()}
    assert "--json" in options["list"]
    assert {"--config", "--dry-run"} <= options["benchmark"]
    config = group.commands["config"]
    assert isinstance(config, TyperGroup)
    assert list(config.commands) == ["validate", "init", "show", "schema"]


def test_list_json_prints_the_stored_facts() -> None:
    result = CliRunner().invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)["models"]
    assert printed == json.loads(json.dumps(rows()))
    assert {"forward_flops", "train_flops", "strategies"} <= set(printed[0])


def test_list_table_shows_counts_and_flops() -> None:
    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "124,475,904" in result.output  # gpt2, its vocabulary padded to 50,304
    assert "24.3 G" in result.output  # resnet50, one training sample


@pytest.mark.slow  # starts a child process
def test_benchmark_script_knows_the_targets(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    try:
        import small_commands
    finally:
        sys.path.remove(str(REPO_ROOT / "benchmarks"))
    commands = small_commands.commands(CONFIG, slow=False, scratch=tmp_path)
    targets = {c.label: c.target_s for c in commands}
    assert targets["torchscale --help"] == small_commands.HELP_TARGET_S
    assert targets["torchscale list"] == targets["torchscale config show"] == 1.0
