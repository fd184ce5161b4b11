"""`torchscale report` through the CLI: every format from the real fixture results, both
spellings, default output names, the regression gate's exit code, and bad input as one clear
line with a non-zero exit (never a traceback)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from torchscale.contracts.errors import EXIT_NOT_JUDGED
from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION
from torchscale.interfaces.cli.app import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
SOURCE = FIXTURES / "cpu_sweep_profile"


def run(*args: object) -> Result:
    return CliRunner().invoke(app, ["report", *map(str, args)])


def no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    """A writable copy of the fixture results (default output goes next to them)."""
    target = tmp_path / "results"
    shutil.copytree(SOURCE, target)
    return target


@pytest.mark.parametrize("fmt", ["md", "json", "term"])
def test_formats_from_real_results(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"report.{fmt}"
    result = run("--source", SOURCE, "--format", fmt, "--output", out)
    no_traceback(result)
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "tiny-gpt2" in text
    if fmt == "json":
        data = json.loads(text)
        assert data["kind"] == "torchscale.report"
        assert {s["id"] for s in data["sections"]} >= {"summary", "scaling", "failures"}


def test_generate_spelling_and_default_output(source: Path) -> None:
    result = run("generate", "--source", source, "--format", "md")
    no_traceback(result)
    assert result.exit_code == 0, result.output
    written = list(source.glob("*_report.md"))
    assert len(written) == 1, result.output
    # two experiments in the source: named after the source directory
    assert written[0].name == "results_report.md"
    assert "report:" in result.output


def test_one_experiment_named_after_it(source: Path) -> None:
    result = run("--source", source / "v3_fixture", "--format", "json")
    assert result.exit_code == 0, result.output
    assert (source / "v3_fixture" / "v3_fixture_report.json").is_file()


def test_term_prints_without_writing(source: Path) -> None:
    result = run("--source", source, "--format", "term")
    assert result.exit_code == 0, result.output
    assert "Scaling" in result.output
    assert not list(source.glob("*_report*"))


def with_repeats(target: Path, factor: float, repeats: int, seed: int) -> Path:
    """A copy of the fixture experiment whose ok cells ran `repeats` repeats around `factor`
    x their throughput (3 % noise, seeded): a rerun with enough repeats for the rule."""
    shutil.copytree(SOURCE / "v3_fixture", target)
    rng = np.random.default_rng(seed)
    for path in sorted((target / "cells").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        throughput = data.get("throughput")
        if throughput:
            median = throughput["samples_per_s"] * factor
            values = [float(v) for v in median * (1 + 0.03 * rng.standard_normal(repeats))]
            throughput["repeats"] = values
            throughput["samples_per_s"] = float(np.median(values))
            throughput["spread"] = (max(values) - min(values)) / float(np.median(values))
            for key in ("samples_per_s_per_device", "tokens_per_s"):
                if throughput.get(key) is not None:
                    throughput[key] *= factor
            data["repeats"] = repeats
        path.write_text(json.dumps(data), encoding="utf-8")
    return target


def gate(tmp_path: Path, source: Path, baseline: Path, *flags: str) -> Result:
    out = tmp_path / f"{source.name}-vs-{baseline.name}.md"
    args = ["--source", source, "--baseline", baseline, "--format", "md", "--output", out]
    result = run(*args, *flags)
    no_traceback(result)
    return result


def test_fail_on_regression_exits_3_on_a_regression(tmp_path: Path) -> None:
    """15 % slower over 10 repeats on each side: a regression by the rule."""
    baseline = with_repeats(tmp_path / "baseline", 1.0, 10, seed=1)
    slower = with_repeats(tmp_path / "slower", 0.85, 10, seed=2)
    result = gate(tmp_path, slower, baseline)
    assert result.exit_code == 0, result.output
    assert "4 regression(s)" in result.output
    gated = gate(tmp_path, slower, baseline, "--fail-on-regression")
    assert gated.exit_code == 3, gated.output
    assert "warning" not in gated.output
    comment = (tmp_path / "slower-vs-baseline.md").read_text(encoding="utf-8")
    # same experiment name on both sides: the title names the directories, never "x vs x"
    assert comment.startswith("# torchscale report: slower vs baseline\n")
    # the first line under the verdict: the regressions (the verdict says first
    # whether the numbers can be used)
    assert comment.split("\n")[4].startswith("- ✖ 4 regressions against v3_fixture")
    assert "Largest changes against the baseline (judged or not)" in comment
    assert "Regressions against the baseline: 4" in comment


@pytest.mark.slow  # over 2 s on 2 cores
def test_an_unchanged_rerun_passes_the_gate(tmp_path: Path) -> None:
    """The issue: the same config run twice must not fail the gate (nor warn)."""
    baseline = with_repeats(tmp_path / "baseline", 1.0, 10, seed=1)
    for seed in range(2, 5):
        rerun = with_repeats(tmp_path / f"rerun{seed}", 1.0, 10, seed=seed)
        gated = gate(tmp_path, rerun, baseline, "--fail-on-regression")
        assert gated.exit_code == 0, gated.output
        assert "regression(s)" not in gated.output
        assert "warning" not in gated.output
    # against itself: nothing changed, the gate passes
    same = gate(tmp_path, baseline, baseline, "--fail-on-regression")
    assert same.exit_code == 0, same.output


@pytest.mark.slow  # over 2 s on 2 cores
def test_a_halving_on_2_repeats_is_not_judged_and_the_gate_says_so(tmp_path: Path) -> None:
    """Half the throughput, but 2 repeats a side: not enough to judge, never a
    regression and never a pass. Every format's first screen lists the change with its
    interval as "not judged", the JSON says null with a count, and the gate exits 4."""
    halved = with_repeats(tmp_path / "halved", 0.5, 2, seed=2)
    plain = gate(tmp_path, halved, SOURCE / "v3_fixture")
    assert plain.exit_code == 0, plain.output  # without the gate: a report, exit 0
    gated = gate(tmp_path, halved, SOURCE / "v3_fixture", "--fail-on-regression")
    assert gated.exit_code == EXIT_NOT_JUDGED == 4, gated.output
    said = " ".join(gated.output.split())
    assert "warning: Nothing could be judged" in said and "need 4 per side" in said
    assert "nothing judged against the baseline" in said and "exits 4" in said
    assert re.search(
        r"tiny-\S+ b\d+ x\d+ fp32 ddp: -5\d % \[-\d+, -\d+\], not judged: 2 repeats", said
    )
    report = (tmp_path / "halved-vs-v3_fixture.md").read_text(encoding="utf-8")
    # the PR comment's verdict never reads "no regression" when nothing was judged
    assert "None of 6 matched cells could be judged against v3_fixture" in report
    assert "no regression" not in report
    # 4 cells ran on both sides (the 2 others failed on both: not compared)
    assert "Regressions against the baseline: not judged: 4 cells" in report
    assert "⚠ nothing judged against the baseline" in report
    # the largest changes, with their intervals, judged or not
    assert "Largest changes against the baseline (judged or not)" in report
    assert re.search(r"\| -5\d % \\\[-\d+, -\d+\\\] \| not judged: 2 repeats a side", report)
    # JSON: null and a count, never the 0 of a report without a baseline
    out = tmp_path / "halved.json"
    run("--source", halved, "--baseline", SOURCE / "v3_fixture", "-f", "json", "-o", out)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["regressions"] is None and data["not_judged"] == 4
    # the terminal report's first screen
    term = run("--source", halved, "--baseline", SOURCE / "v3_fixture", "-f", "term")
    first = "\n".join(term.output.splitlines()[:40])
    assert "nothing judged against the baseline" in first
    assert "not judged: 4 cells" in " ".join(term.output.split())
    assert "not judged: 2 repeats a side" in " ".join(term.output.split())
    # some cells judged, some not: the gate fails only on a regression
    mixed = with_repeats(tmp_path / "mixed", 0.85, 10, seed=3)
    cells = sorted((mixed / "cells").glob("tiny-mlp*.json"))
    data = json.loads(cells[0].read_text(encoding="utf-8"))
    data["throughput"]["repeats"] = data["throughput"]["repeats"][:1]  # (10 vs 2 can judge)
    cells[0].write_text(json.dumps(data), encoding="utf-8")
    baseline = with_repeats(tmp_path / "baseline", 1.0, 10, seed=1)
    gated = gate(tmp_path, mixed, baseline, "--fail-on-regression")
    assert gated.exit_code == 3, gated.output
    assert "3 regression(s)" in gated.output
    assert "1 of 6 matched cell(s) could not be judged" in " ".join(gated.output.split())
    # judged cells without a regression and one not judged: exit 0 with the warning
    same = with_repeats(tmp_path / "same", 1.0, 10, seed=4)
    cells = sorted((same / "cells").glob("tiny-mlp*.json"))
    data = json.loads(cells[0].read_text(encoding="utf-8"))
    data["throughput"]["repeats"] = data["throughput"]["repeats"][:1]
    cells[0].write_text(json.dumps(data), encoding="utf-8")
    gated = gate(tmp_path, same, baseline, "--fail-on-regression")
    assert gated.exit_code == 0, gated.output
    assert "1 of 6 matched cell(s) could not be judged" in " ".join(gated.output.split())


def test_the_gate_with_no_cell_matched_exits_4(tmp_path: Path) -> None:
    other = with_repeats(tmp_path / "other", 1.0, 4, seed=5)
    for path in (other / "cells").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["cell"]["definition_sha256"] = "0" * 64
        data["cell"]["batch_size"] = 999  # another key: nothing matches
        path.write_text(json.dumps(data), encoding="utf-8")
    gated = gate(tmp_path, other, SOURCE / "v3_fixture", "--fail-on-regression")
    assert gated.exit_code == EXIT_NOT_JUDGED, gated.output
    assert "no cell matches the baseline" in gated.output


def test_the_json_report_states_the_rule(tmp_path: Path) -> None:
    baseline = with_repeats(tmp_path / "baseline", 1.0, 10, seed=1)
    out = tmp_path / "r.json"
    result = run("--source", baseline, "--baseline", baseline, "-f", "json", "-o", out)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    (section,) = [s for s in data["sections"] if s["id"] == "baseline"]
    (rule,) = [b for b in section["blocks"] if b.get("id") == "baseline-rule"]
    values = {r["parameter"]: r["value"] for r in rule["rows"]}
    assert values["test"] == "two-sided Welch t-test on the log figures"
    assert values["alpha"] == "0.05"
    assert values["repeats needed"] == "4 per side"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing", "does not exist"),
        ("empty", "no"),
        ("file", "not a"),
    ],
)
def test_bad_source(tmp_path: Path, case: str, expected: str) -> None:
    path = tmp_path / case
    if case == "empty":
        path.mkdir()
    elif case == "file":
        path.write_text("hello", encoding="utf-8")
    result = run("--source", path, "--format", "md", "--output", tmp_path / "r.md")
    no_traceback(result)
    assert result.exit_code != 0
    assert "error:" in result.output
    assert expected in result.output.lower()
    assert not (tmp_path / "r.md").exists()


def test_partial_report_lists_what_was_skipped(tmp_path: Path, source: Path) -> None:
    cells = source / "v3_fixture" / "cells"
    first = sorted(cells.glob("tiny-mlp*.json"))[0]
    first.write_text(first.read_text(encoding="utf-8")[:200], encoding="utf-8")  # truncated
    (cells / "garbage.json").write_text("{not json", encoding="utf-8")
    out = tmp_path / "r.json"
    result = run("--source", source, "--format", "json", "--output", out)
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert result.output.count("not read:") >= 2
    report = json.loads(out.read_text(encoding="utf-8"))
    reasons = " ".join(s["path"] + " " + s["reason"] for s in report["skipped"])
    assert "garbage.json" in reasons and first.name in reasons


def test_a_newer_cell_stops_the_report_with_one_line(tmp_path: Path, source: Path) -> None:
    """A cell of a newer schema is not skipped: no report is half made from its folder."""
    cells = source / "v3_fixture" / "cells"
    newer = json.loads(sorted(cells.glob("tiny-gpt2*.json"))[0].read_text(encoding="utf-8"))
    newer["schema_version"] = RESULT_SCHEMA_VERSION + 1
    (cells / "newer.json").write_text(json.dumps(newer), encoding="utf-8")
    out = tmp_path / "r.json"
    result = run("--source", source, "--format", "json", "--output", out)
    no_traceback(result)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"newer.json: cell result of schema {RESULT_SCHEMA_VERSION + 1}; " in said
    assert said.endswith(
        f"this torchscale reads {RESULT_SCHEMA_VERSION}: upgrade torchscale to read it"
    )
    assert not out.exists()


def test_unwritable_output_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    result = run("--source", SOURCE, "--format", "md", "--output", blocker / "sub" / "r.md")
    no_traceback(result)
    assert result.exit_code == 2  # found before the report is built, as every -o is
    assert "cannot write the report" in result.output


def test_output_is_a_directory(tmp_path: Path) -> None:
    """A directory takes the report under its default name (`-o DIR`, as every command)."""
    result = run("--source", SOURCE, "--format", "md", "--output", tmp_path)
    assert result.exit_code == 0, result.output
    assert [p.suffix for p in tmp_path.iterdir()] == [".md"]


def test_bad_price_and_format(tmp_path: Path) -> None:
    result = run("--source", SOURCE, "--cost-per-gpu-hour", "-1", "--output", tmp_path / "r.md")
    assert result.exit_code == 2
    assert "positive price" in result.output
    result = run("--source", SOURCE, "--format", "docx")
    assert result.exit_code == 2
    no_traceback(result)
