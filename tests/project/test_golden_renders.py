"""Every stored fixture folder rendered on every surface, compared with the renders kept in
tests/golden/renders/: a refactor that moves a figure, a word or a verdict fails here.

Surfaces: the report as Markdown, JSON and terminal text (each also with `--full`), the
summary.csv a sweep writes, and `profile analyze` of the stored traces (read in place from
../shared, skipped when absent). An intended change is rewritten with
`TORCHSCALE_UPDATE_GOLDEN=1 pytest tests/project/test_golden_renders.py` and named in the
commit; the diff of tests/golden/renders/ is then the review."""

from __future__ import annotations

import difflib
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REPO_ROOT, SHARED_DIR
from torchscale.interfaces.cli.app import app

FIXTURES = REPO_ROOT / "tests" / "fixtures"
GOLDEN = REPO_ROOT / "tests" / "golden" / "renders"

# experiments as a user keeps them (one per kind of run, CPU and GPU)
OWN_JOBS = ("ddp", "fsdp2", "hf_trainer", "lightning", "accelerate")
EXPERIMENTS = {
    "cpu-crashes": FIXTURES / "cpu_crashes" / "v1_fixture",
    "cpu-ddp-fsdp": FIXTURES / "cpu_ddp_fsdp" / "v2_fixture",
    "cpu-sweep-profile": FIXTURES / "cpu_sweep_profile" / "v3_fixture",
    "cpu-busy-sweep": FIXTURES / "cpu_busy_sweep" / "busy",
    "cpu-default-sweep": FIXTURES / "cpu_default_sweep",
    "cpu-one-step": FIXTURES / "cpu_one_step",
    "h100-second-run-default": FIXTURES / "h100_second_run" / "default-sweep",
    "h100-second-run-workload": FIXTURES / "h100_second_run" / "workload" / "runs",
    "h200-zoo-compiled": FIXTURES / "h200_zoo_compiled",
    # a user's job of each example framework (tests/fixtures/own_jobs/README.md)
    **{f"own-job-{name}": FIXTURES / "own_jobs" / name for name in OWN_JOBS},
}
REPORTS = {
    "md": ("-f", "md"),
    "md-full": ("-f", "md", "--full"),
    "json": ("-f", "json"),
    "term": ("-f", "term"),
    "term-full": ("-f", "term", "--full"),
}
TRACES = {
    "trace-filter-2rank": SHARED_DIR / "traces" / "trace_filter",
    "ns-resolution": SHARED_DIR / "traces" / "ns_resolution_trace",
}


def _normalised(text: str, roots: list[Path]) -> str:
    for root, name in [(r, f"<{i}>") for i, r in enumerate(roots)] + [(REPO_ROOT, "<repo>")]:
        text = text.replace(str(root), name)
    # the moment and the build a report was made by are not what it says
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z| UTC)?", "<time>", text)
    text = re.sub(r"(analysis_s|report_s|generated_s)\"?: [0-9.e-]+", r"\1: <s>", text)
    text = re.sub(r"(built|rendered) in [0-9.,]+ (s|ms|µs)", r"\1 in <s>", text)
    text = re.sub(r"\([0-9.]+ (B|KiB|MiB|GiB); built", "(<size>; built", text)
    # a temporary path cut by a table column is not replaced whole above
    text = re.sub(r"/tmp/pytest-of-\S*", "<tmp>", text)
    return text


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TORCHSCALE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"run with TORCHSCALE_UPDATE_GOLDEN=1 to write {path}"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), text.splitlines(), "golden", "now", lineterm="", n=1
        )
        pytest.fail(f"{name} differs from its golden render:\n" + "\n".join(list(diff)[:60]))


def _invoke(*args: str | Path) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "100"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return f"exit {result.exit_code}\n{result.output}"


@pytest.fixture()
def experiment(request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """A copy of the fixture at a path of the same length every run: the terminal wraps long
    paths, so a path whose length changed would move every line break after it. The folder is
    the test's own (one per test id) and locked while the test runs."""
    name = request.param
    root = Path(tempfile.gettempdir()) / "torchscale-golden" / request.node.name.replace("[", "-")
    root = root.with_name(root.name.rstrip("]"))
    root.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(root / "src", ignore_errors=True)
        copy = root / "src" / name
        shutil.copytree(EXPERIMENTS[name], copy)
        try:
            yield name, copy
        finally:
            shutil.rmtree(root / "src", ignore_errors=True)


@pytest.mark.parametrize("experiment", sorted(EXPERIMENTS), indirect=True)
@pytest.mark.parametrize("surface", sorted(REPORTS))
def test_a_report_renders_as_it_did(
    experiment: tuple[str, Path], surface: str, tmp_path: Path
) -> None:
    name, source = experiment
    ext = "md" if surface.startswith("md") else surface.split("-")[0]
    args: list[str | Path] = ["report", "-s", source, *REPORTS[surface]]
    out = tmp_path / f"report.{ext}"
    if ext != "term":
        args += ["-o", out]
    printed = _invoke(*args)
    written = out.read_text(encoding="utf-8") if out.exists() else ""
    if ext == "json" and written:
        written = json.dumps(json.loads(written), indent=1, sort_keys=True) + "\n"
    text = _normalised(f"{printed}\n--- written ---\n{written}", [source, tmp_path])
    _check(f"{name}/{surface}.txt", text)


@pytest.mark.parametrize("experiment", sorted(EXPERIMENTS), indirect=True)
def test_a_summary_csv_is_written_as_it_was(experiment: tuple[str, Path], tmp_path: Path) -> None:
    from torchscale.results import load

    name, source = experiment
    text = "".join(
        f"# {folder.relative_to(source)}\n{load(folder).cells.to_csv(index=False)}"
        for folder in sorted({p.parent.parent for p in source.rglob("cells/*.json")})
    )
    _check(f"{name}/summary.csv", _normalised(text, [source, tmp_path]))


@pytest.mark.parametrize("trace", sorted(TRACES))
@pytest.mark.slow  # over 2 s on 2 cores
def test_a_trace_analysis_prints_as_it_did(trace: str, tmp_path: Path) -> None:
    folder = TRACES[trace]
    if not folder.is_dir():
        pytest.skip(f"{folder} is not here (../shared absent)")
    copy = tmp_path / "traces"
    shutil.copytree(folder, copy)
    printed = _invoke("profile", "analyze", copy, "-t", "all", "-v")
    text = _normalised(printed, [copy, tmp_path])
    _check(f"{trace}/profile-analyze.txt", text)


@pytest.mark.slow  # over 2 s on 2 cores
def test_the_500_cell_first_screen_reads_as_it_did(tmp_path: Path) -> None:
    """The terminal summary of benchmarks/report_scale.py's 500 cells: the
    decision in a few grouped lines, what is left out counted by kind."""
    from tests.scale_sample import report_scale

    root = Path(tempfile.mkdtemp(prefix="golden500-", dir=tmp_path))
    experiment = report_scale().write_results(root, 500)
    printed = _invoke("report", "-s", experiment, "-f", "term")
    _check("cells-500/term.txt", _normalised(printed, [experiment, root, tmp_path]))
