"""`torchscale report` through the CLI: every format from the real fixture results, both
spellings, default output names, the regression gate's exit code, and bad input as one clear
line with a non-zero exit (never a traceback)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from torchscale.cli.app import app

FIXTURES = Path(__file__).parent / "fixtures"
SOURCE = FIXTURES / "results_v3"


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


def test_fail_on_regression_exits_3(tmp_path: Path, source: Path) -> None:
    """A baseline twice as fast as the current results is a regression beyond any noise."""
    baseline = tmp_path / "baseline"
    shutil.copytree(source / "v3_fixture", baseline)
    for path in (baseline / "cells").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("throughput"):
            for key in ("samples_per_s", "samples_per_s_per_device", "tokens_per_s"):
                if data["throughput"].get(key) is not None:
                    data["throughput"][key] *= 2.0
        path.write_text(json.dumps(data), encoding="utf-8")
    args = ["--source", source / "v3_fixture", "--baseline", baseline, "--format", "md"]
    result = run(*args, "--output", tmp_path / "r.md")
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert "regression" in result.output
    gated = run(*args, "--output", tmp_path / "r2.md", "--fail-on-regression")
    assert gated.exit_code == 3, gated.output
    # against itself: nothing flagged, the gate passes
    same = run(
        "--source", source / "v3_fixture", "--baseline", source / "v3_fixture",
        "--format", "md", "--output", tmp_path / "r3.md", "--fail-on-regression",
    )  # fmt: skip
    assert same.exit_code == 0, same.output


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
    newer = json.loads(sorted(cells.glob("tiny-gpt2*.json"))[0].read_text(encoding="utf-8"))
    newer["schema_version"] = 99
    (cells / "newer.json").write_text(json.dumps(newer), encoding="utf-8")
    out = tmp_path / "r.json"
    result = run("--source", source, "--format", "json", "--output", out)
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert result.output.count("skipped:") >= 3
    report = json.loads(out.read_text(encoding="utf-8"))
    reasons = " ".join(s["path"] + " " + s["reason"] for s in report["skipped"])
    assert "garbage.json" in reasons and "newer.json" in reasons and first.name in reasons


def test_unwritable_output_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    result = run("--source", SOURCE, "--format", "md", "--output", blocker / "sub" / "r.md")
    no_traceback(result)
    assert result.exit_code != 0
    assert "cannot write the report" in result.output


def test_output_is_a_directory(tmp_path: Path) -> None:
    result = run("--source", SOURCE, "--format", "md", "--output", tmp_path)
    assert result.exit_code == 2
    assert "is a directory" in result.output


def test_bad_price_and_format(tmp_path: Path) -> None:
    result = run("--source", SOURCE, "--cost-per-gpu-hour", "-1", "--output", tmp_path / "r.md")
    assert result.exit_code == 2
    assert "positive price" in result.output
    result = run("--source", SOURCE, "--format", "docx")
    assert result.exit_code == 2
    no_traceback(result)


def test_older_schema_versions_report(tmp_path: Path) -> None:
    for fixture in ("results_v1/v1_fixture", "results_v2/v2_fixture"):
        out = tmp_path / f"{fixture.split('/')[0]}.md"
        result = run("--source", FIXTURES / fixture, "--format", "md", "--output", out)
        no_traceback(result)
        assert result.exit_code == 0, result.output
        assert out.read_text(encoding="utf-8").strip()
