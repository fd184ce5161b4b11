"""One CLI grammar across commands, walked over the real command tree:

- a short flag has one meaning (one long name) in every command that has it; the only
  exceptions are the published interfaces users already know, listed with why;
- `-o` is `--output-dir` (a directory) except in `report`, whose published `-o/--output` names
  a file; `--output` names a file and never has `-o` elsewhere; `--json` is a switch that
  prints JSON on stdout, never a flag that takes a file;
- results are never stored under a doubled directory (`results/comm/comm/`), and the old
  doubled layout still reads.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from torchscale.contracts.schema.comm_result import CommResult
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.directory_layout import STANDALONE_EXPERIMENT

FIXTURES = Path(__file__).parents[1] / "fixtures"
NCCL_TESTS = FIXTURES / "nccl_tests"

# short flag -> the long names it may stand for, and why more than one is allowed
PUBLISHED_SHORT_FLAGS: dict[str, tuple[set[str], str]] = {
    "-o": (
        {"--output-dir", "--output"},
        "the published CLI reference: benchmark/profile -o/--output-dir DIR, report -o/--output "
        "FILE; report's -o takes a directory too, so -o DIR works in every command",
    ),
}
REPORT_COMMANDS = {"torchscale report", "torchscale report generate"}


def _commands() -> dict[str, Any]:
    """Every command of the tree by its full name (groups included: their options count)."""
    found: dict[str, Any] = {}

    def walk(command: Any, name: str) -> None:
        found[name] = command
        if isinstance(command, TyperGroup):
            for sub in command.list_commands(None):  # type: ignore[arg-type]
                walk(command.commands[sub], f"{name} {sub}")

    walk(typer.main.get_command(app), "torchscale")
    return found


def _options() -> list[tuple[str, TyperOption]]:
    return [
        (name, param)
        for name, command in _commands().items()
        for param in command.params
        if isinstance(param, TyperOption)
    ]


def _longs(option: TyperOption) -> frozenset[str]:
    return frozenset(o for o in [*option.opts, *option.secondary_opts] if o.startswith("--"))


def _shorts(option: TyperOption) -> list[str]:
    return [o for o in [*option.opts, *option.secondary_opts] if not o.startswith("--")]


def test_the_tree_walk_sees_every_command() -> None:
    names = set(_commands())
    for expected in ("comm", "benchmark", "list", "validate", "config validate", "profile"):
        assert f"torchscale {expected}" in names
    assert {"torchscale profile analyze", "torchscale report generate"} <= names


def test_each_short_flag_has_one_meaning_across_commands() -> None:
    meanings: dict[str, dict[frozenset[str], set[str]]] = defaultdict(lambda: defaultdict(set))
    for command, option in _options():
        for short in _shorts(option):
            meanings[short][_longs(option)].add(command)
    problems = []
    for short, by_long in sorted(meanings.items()):
        allowed = PUBLISHED_SHORT_FLAGS.get(short, (set(), ""))[0]
        if len(by_long) > 1 and not all(longs & allowed for longs in by_long):
            where = "; ".join(f"{'/'.join(sorted(k))} in {sorted(v)}" for k, v in by_long.items())
            problems.append(f"{short}: {where}")
    assert not problems, problems


def test_the_allow_list_holds_only_what_is_still_needed() -> None:
    meanings: dict[str, set[frozenset[str]]] = defaultdict(set)
    for _, option in _options():
        for short in _shorts(option):
            meanings[short].add(_longs(option))
    for short in PUBLISHED_SHORT_FLAGS:
        assert len(meanings[short]) > 1, f"{short} has one meaning now: drop its exception"


def test_dash_o_is_a_directory_except_in_the_published_report() -> None:
    for command, option in _options():
        if "-o" not in _shorts(option):
            continue
        expected = "--output" if command in REPORT_COMMANDS else "--output-dir"
        assert _longs(option) == {expected}, (command, option.opts)


def test_output_names_a_file_and_output_dir_a_directory() -> None:
    for command, option in _options():
        longs = _longs(option)
        if "--output" in longs and command not in REPORT_COMMANDS:
            assert "-o" not in _shorts(option), command
        if "--output-dir" in longs or "--output" in longs:
            assert not option.is_flag, command
        # no third spelling of either (--out, --output-file, --dir ...)
        odd = {n for n in longs if n.startswith("--out") and n not in ("--output", "--output-dir")}
        assert not odd, (command, odd)


def test_json_is_a_switch_everywhere() -> None:
    seen = []
    for command, option in _options():
        if "--json" in _longs(option):
            seen.append(command)
            assert option.is_flag, f"{command}: --json takes a value"
    assert "torchscale comm" in seen and "torchscale profile" in seen


def test_profile_has_no_dash_b_and_comm_keeps_nccl_tests_flags(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["profile", "-b", "8", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "No such option: -b" in result.output
    dry = runner.invoke(app, ["comm", "--device", "cpu", "-b", "1K", "-e", "4K", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "1024 B .. 4096 B" in dry.output


def test_comm_json_prints_the_result_on_stdout_and_output_writes_a_file(tmp_path: Path) -> None:
    source = NCCL_TESTS / "all_reduce_2gpu.txt"
    out = tmp_path / "r"
    copy = tmp_path / "copy.json"
    runner = CliRunner()
    result = runner.invoke(
        app, ["comm", "--import", str(source), "-o", str(out), "--json", "--output", str(copy)]
    )
    assert result.exit_code == 0, result.output
    printed = CommResult.model_validate_json(result.stdout)  # stdout is the JSON alone
    assert printed.world_size == 2
    assert "Avg bus bandwidth" in result.stderr and "stored:" in result.stderr
    assert json.loads(copy.read_text()) == json.loads(printed.model_dump_json())
    # without --json the table is the output, on stdout
    plain = runner.invoke(app, ["comm", "--import", str(source), "-o", str(out)])
    assert "Avg bus bandwidth" in plain.stdout


def test_comm_json_no_longer_takes_a_file(tmp_path: Path) -> None:
    source = NCCL_TESTS / "all_reduce_2gpu.txt"
    copy = tmp_path / "x.json"
    argv = ["comm", "--import", str(source), "-o", str(tmp_path), "--json", str(copy)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output  # x.json is an unexpected argument
    assert "unexpected extra argument" in result.output
    assert not copy.exists()


def test_standalone_runs_are_not_stored_under_a_doubled_directory(tmp_path: Path) -> None:
    source = NCCL_TESTS / "all_reduce_2gpu.txt"
    result = CliRunner().invoke(app, ["comm", "--import", str(source), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (stored,) = tmp_path.rglob("*.json")
    assert stored.parent == tmp_path / STANDALONE_EXPERIMENT / "comm"
    assert stored.parent.name != stored.parent.parent.name
    named = CliRunner().invoke(
        app, ["comm", "--import", str(source), "-o", str(tmp_path), "--name", "net"]
    )
    assert named.exit_code == 0, named.output
    assert (tmp_path / "net" / "comm" / stored.name).is_file()


@pytest.mark.parametrize(
    "default",
    [
        pytest.param("torchscale.orchestration.comm.planning:CommOptions", id="comm"),
        pytest.param("torchscale.orchestration.profiling.standalone:ProfileOptions", id="profile"),
    ],
)
def test_no_default_experiment_is_named_after_its_kind(default: str) -> None:
    import importlib

    module, _, name = default.partition(":")
    options = getattr(importlib.import_module(module), name)()
    assert options.name == STANDALONE_EXPERIMENT
    assert options.name not in ("comm", "profile")  # OUTPUT_DIR/<name>/<kind>/: no stutter


def test_old_doubled_layouts_still_read(tmp_path: Path) -> None:
    """results/profile/profile/<cell> (the v3 fixture) and results/comm/comm/<run>.json, beside
    the new standalone/ layout, are all found by the report."""
    from torchscale.interfaces.report.sources import read_sources

    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "cpu_sweep_profile", results)
    source = NCCL_TESTS / "all_reduce_2gpu.txt"
    runner = CliRunner()
    old = runner.invoke(
        app, ["comm", "--import", str(source), "-o", str(results), "--name", "comm"]
    )
    assert old.exit_code == 0, old.output
    assert list((results / "comm" / "comm").glob("*.json"))  # the old doubled layout
    new = runner.invoke(app, ["comm", "--import", str(source), "-o", str(results)])
    assert new.exit_code == 0, new.output
    sources = read_sources(results)
    by_name = {s.name: s for s in sources.experiments}
    assert by_name["profile"].profiles, "the old results/profile/profile/<cell> run"
    assert by_name["comm"].comm and by_name[STANDALONE_EXPERIMENT].comm
    assert by_name["v3_fixture"].experiment is not None


def test_report_o_takes_a_directory_as_every_command_does(tmp_path: Path) -> None:
    """`-o DIR` works in every command: report writes DIR/<experiment>_report.<ext> (its
    published `-o FILE` still names the file)."""
    out = tmp_path / "reports"
    out.mkdir()
    source = FIXTURES / "cpu_sweep_profile"
    result = CliRunner().invoke(app, ["report", "-s", str(source), "-f", "md", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert [p.name for p in out.iterdir()] == ["cpu_sweep_profile_report.md"]  # two experiments
    named = tmp_path / "mine.md"
    result = CliRunner().invoke(app, ["report", "-s", str(source), "-f", "md", "-o", str(named)])
    assert result.exit_code == 0 and named.is_file()


def test_report_o_creates_a_directory_named_without_a_suffix(tmp_path: Path) -> None:
    """`-o ./reports` that does not exist yet is the directory every other command's -o would
    create, not a file called 'reports' that each format overwrites in turn."""
    out = tmp_path / "new" / "reports"
    source = FIXTURES / "cpu_sweep_profile"
    for fmt in ("md", "json"):
        result = CliRunner().invoke(app, ["report", "-s", str(source), "-f", fmt, "-o", str(out)])
        assert result.exit_code == 0, result.output
    assert out.is_dir()
    assert sorted(p.name for p in out.iterdir()) == [
        "cpu_sweep_profile_report.json",
        "cpu_sweep_profile_report.md",
    ]


def test_report_o_names_an_existing_file_without_a_suffix(tmp_path: Path) -> None:
    """A file that is there already is written over, suffix or not: only a new name without
    a suffix is taken for a directory."""
    existing = tmp_path / "REPORT"
    existing.write_text("old", encoding="utf-8")
    source = FIXTURES / "cpu_sweep_profile"
    result = CliRunner().invoke(app, ["report", "-s", str(source), "-f", "md", "-o", str(existing)])
    assert result.exit_code == 0, result.output
    assert existing.is_file() and existing.read_text(encoding="utf-8").startswith("#")


def test_the_consoles_read_no_emoji_codes_in_user_strings() -> None:
    """A plug-in named `mod:factory` printed beside a colon stays itself, never "mod🏭"."""
    from torchscale.interfaces.console.streams import stderr, stdout

    for console in (stdout, stderr):
        with console.capture() as captured:
            console.print("> [MEMORY] plug.models:factory: no answer (pkg:smile:)")
        text = captured.get()
        assert "plug.models:factory: no answer (pkg:smile:)" in text
        assert "\N{FACTORY}" not in text
