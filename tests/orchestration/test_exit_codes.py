"""Honest exit codes of `torchscale benchmark`: a sweep that measured nothing (every cell
skipped, or no cell planned) exits 1 with one line saying why, locally and under Slurm;
`--dry-run` stays 0; one measured cell beside skipped ones is a green run.

No torchrun is started: skipped cells never launch, and the one "measured" cell has its launch
replaced by a stand-in that writes an ok result where the worker would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner, Result

import torchscale.contracts.host
import torchscale.orchestration.launch.attempt
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, CellResult
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config import hardware
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.sweep import nothing_measured
from torchscale.orchestration.validate import compile_toolchain
from torchscale.orchestration.validate.compile_toolchain import Toolchain

NO_GPU = "device 'cuda' requested but no CUDA GPU is visible"
CUDA_CONFIG: dict[str, Any] = {
    "models": ["tiny-mlp"],
    "batch_sizes": [8],
    "gpu_counts": [1, 2],
    "device": "cuda",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
}


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["benchmark", *map(str, args)])


def write_config(path: Path, name: str, **extra: Any) -> Path:
    path.write_text(json.dumps({"experiment_name": name, **CUDA_CONFIG, **extra}), "utf-8")
    return path


def stored(exp_dir: Path) -> list[CellResult]:
    return [
        CellResult.model_validate_json(p.read_text(encoding="utf-8"))
        for p in sorted((exp_dir / "cells").glob("*.json"))
    ]


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def result(
    status: Status, why: Finding | None = None, name: str = "c", exception: str | None = None
) -> CellResult:
    cell = CellIdentity(
        id=name,
        definition_sha256="0" * 64,
        model="tiny-mlp",
        label="tiny-mlp",
        batch_size=8,
        world_size=1,
        precision="fp32",
        strategy="ddp",
        device="cuda",
        backend="nccl",
    )
    error = CellError(why=why, exception=exception) if why else None
    return CellResult(cell=cell, status=status, error=error)


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set how many GPUs the planner sees here (the test machine's own do not matter)."""

    def set_count(count: int) -> None:
        monkeypatch.setattr(torchscale.contracts.host, "cuda_gpu_count", lambda torch=None: count)
        # the planner asks torch only where something says a GPU may be: here, always
        monkeypatch.setattr(hardware, "no_gpu_here", lambda: None)

    return set_count


# ============================================================================ the sentence


def test_nothing_measured_says_why() -> None:
    needs = Finding(code="plan.needs_gpus", figures={"gpus": 2, "have": 1})
    skipped = [result(Status.SKIPPED, Finding(code="plan.no_gpu")), result(Status.SKIPPED, needs)]
    assert nothing_measured(skipped, 2) == (
        f"nothing measured: all 2 cells skipped (first reason: {NO_GPU})"
    )
    assert nothing_measured(skipped[:1], 1) == (
        f"nothing measured: the only cell was skipped (first reason: {NO_GPU})"
    )
    assert nothing_measured([], 0) == "nothing measured: the plan has no cells"
    failed = result(Status.FAILED, Finding(code="failure.raised"), exception="boom")
    assert nothing_measured([failed, skipped[0]], 3) == (
        f"nothing measured: no cell of 3 cells ok (1 failed, 1 skipped (first reason: "
        f"{NO_GPU}), 1 not run)"
    )
    assert nothing_measured([result(Status.OOM), result(Status.TIMEOUT)], 2) == (
        "nothing measured: no cell of 2 cells ok (2 failed)"
    )
    # one measured cell is enough: skipped ones beside it are not failures
    assert nothing_measured([result(Status.OK), *skipped], 3) is None


# ==================================================================================== local


def test_a_sweep_of_only_skipped_cells_exits_one_with_the_reason(tmp_path: Path, gpus: Any) -> None:
    gpus(0)
    out = tmp_path / "results"
    run = invoke("-c", write_config(tmp_path / "c.yaml", "skips"), "-o", out)
    assert run.exit_code == 1, run.output
    assert error_lines(run.output) == [
        f"error: nothing measured: all 2 cells skipped (first reason: {NO_GPU})"
    ]
    assert "(2 cell(s), 0 failed)" in run.output
    exp = out / "skips"
    assert not (exp / "logs").exists()  # nothing was launched
    table = pd.read_csv(exp / "summary.csv")
    assert list(table["status"]) == ["skipped", "skipped"]  # the records are still written


def test_dry_run_of_only_skipped_cells_still_exits_zero(tmp_path: Path, gpus: Any) -> None:
    gpus(0)
    run = invoke("-c", write_config(tmp_path / "c.yaml", "dry"), "-o", tmp_path / "r", "--dry-run")
    assert run.exit_code == 0, run.output
    assert "0 cell(s) to run, 2 skipped" in " ".join(run.output.split())
    assert not error_lines(run.output)


def test_one_measured_cell_beside_skipped_ones_exits_zero(
    tmp_path: Path, gpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One GPU: the 1-rank cell runs (its launch stood in for), the 2-rank cell is skipped."""
    gpus(1)

    def launched(command: Any, timeout_s: float, finished: Any = None) -> ProcessOutcome:
        spec = json.loads(Path(command.argv[-1]).read_text(encoding="utf-8"))
        identity = CellIdentity.model_validate(spec["cell"])
        ok = CellResult(cell=identity, status=Status.OK)
        Path(spec["result_path"]).write_text(ok.model_dump_json(), encoding="utf-8")
        return ProcessOutcome(0, False, 0.1, command.log_path)

    monkeypatch.setattr(torchscale.orchestration.launch.attempt, "run_launch", launched)
    # CUDA cells compile by default: the toolchain probe of the stood-in GPU is stood in too
    monkeypatch.setattr(
        compile_toolchain, "toolchain_for", lambda device, env: Toolchain(device, True, [])
    )
    out = tmp_path / "results"
    run = invoke("-c", write_config(tmp_path / "c.yaml", "mixed"), "-o", out)
    assert run.exit_code == 0, run.output
    assert not error_lines(run.output)
    cells = {c.cell.world_size: c.status for c in stored(out / "mixed")}
    assert cells == {1: Status.OK, 2: Status.SKIPPED}


# ==================================================================================== Slurm


def test_a_slurm_sweep_of_only_skipped_cells_exits_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under Slurm a cell is skipped by what Slurm says of the partition's nodes (here: one
    GPU in their Gres, fewer than a cell's ranks per node): nothing is submitted, and the
    sweep must not pass as green. The Slurm client commands are stood in for; none is called
    for an empty submission."""
    import torchscale.orchestration.schedulers.slurm.client as client
    import torchscale.orchestration.schedulers.slurm.launcher as on_slurm
    import torchscale.orchestration.schedulers.slurm.submission as slurm_sweep

    def no_slurm(*args: Any, **kwargs: Any) -> None:
        return None

    monkeypatch.setattr(client, "require_sbatch", no_slurm)
    monkeypatch.setattr(on_slurm, "require_sbatch", no_slurm)
    monkeypatch.setattr(on_slurm, "check_nodes", no_slurm)
    one_gpu = client.PartitionGpus("debug", most=1, fewest=1, nodes=2)
    answer = client.PartitionAnswer(client.PartitionLimits("debug", 2, None), one_gpu)
    monkeypatch.setattr(on_slurm, "ask_partition", lambda *args: answer)

    def submit(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("nothing may be submitted")

    monkeypatch.setattr(slurm_sweep, "submit", submit)
    out = tmp_path / "results"
    launcher = {"kind": "slurm", "nodes": [1]}
    config = write_config(tmp_path / "c.yaml", "sl", gpu_counts=[2, 4], launcher=launcher)
    run = invoke("-c", config, "-o", out)
    assert run.exit_code == 1, run.output
    too_few = "needs 2 GPUs; a node has 1 (partition 'debug', Slurm's Gres)"
    assert error_lines(run.output) == [
        f"error: nothing measured: all 2 cells skipped (first reason: {too_few})"
    ]
    assert "nothing to submit: every cell is ok or skipped" in run.output
    assert [c.status for c in stored(out / "sl")] == [Status.SKIPPED, Status.SKIPPED]


# ====================================================== one grammar: every command's exit codes
#
# 2: the command line, or an input it names (file, directory, tool), cannot be used; nothing
# was run. 1: a run that started and failed. 0: otherwise. (3 and 4: `report
# --fail-on-regression` on a regression verdict and when nothing could be judged,
# tests/interfaces/test_report_cli.py.) One clear line on stderr, no traceback.

FIXTURES = Path(__file__).parents[1] / "fixtures"
NCCL_TESTS = FIXTURES / "nccl_tests"
TINY_CONFIG: dict[str, Any] = {
    "experiment_name": "tiny",
    "models": ["tiny-mlp"],
    "batch_sizes": [8],
    "gpu_counts": [1],
    "device": "cpu",
}


def _synthetic_traces(tmp: Path) -> Path:
    from benchmarks.synthetic_traces import write_synthetic_traces

    write_synthetic_traces(tmp / "traces", ranks=2, steps=3)
    return tmp / "traces"


def _truncated_traces(tmp: Path) -> Path:
    import gzip

    directory = _synthetic_traces(tmp)
    victim = sorted(directory.glob("*.json*"))[0]
    raw = victim.read_bytes() if victim.suffix == ".gz" else gzip.compress(victim.read_bytes())
    victim.unlink()
    (directory / (victim.name.removesuffix(".gz") + ".gz")).write_bytes(raw[: len(raw) // 2])
    return directory


def _not_results(tmp: Path) -> Path:
    (tmp / "src" / "notes").mkdir(parents=True)
    return tmp / "src"


def _bad_config(tmp: Path) -> Path:
    path = tmp / "bad.yaml"  # one problem: one line
    path.write_text(json.dumps({**TINY_CONFIG, "batch_sizes": [-1]}), encoding="utf-8")
    return path


def _tiny_config(tmp: Path) -> Path:
    path = tmp / "tiny.yaml"
    path.write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    return path


def _blocked(tmp: Path) -> Path:
    (tmp / "file").write_text("x", encoding="utf-8")
    return tmp / "file" / "sub" / "out.md"


def _no_nsys(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchscale.orchestration.profiling.nsys

    monkeypatch.setattr(torchscale.orchestration.profiling.nsys, "find_nsys", lambda *a, **k: None)


def _failing_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchscale.orchestration.validate.check_result import failed

    monkeypatch.setattr(
        "torchscale.orchestration.validate.run_checks.CHECKS",
        (
            lambda ctx: failed(
                "stub", "Stub", Finding(code="stub.failed"), Finding(code="stub.fix")
            ),
        ),
    )


# (case, argv with {tmp}-relative parts built by callables, monkeypatch set-up, exit code)
Arg = str | Path | Any
CASES: list[tuple[str, list[Arg], Any, int]] = [
    # ------------------------------------------------------------------- 2: usage and input
    ("root-unknown-command", ["nope"], None, 2),
    ("comm-bad-option", ["comm", "--bogus"], None, 2),
    ("comm-import-missing", ["comm", "--import", "{tmp}/missing.txt", "-o", "{tmp}/r"], None, 2),
    (
        "comm-import-not-nccl",
        ["comm", "--import", NCCL_TESTS / "not_nccl.txt", "-o", "{tmp}/r"],
        None,
        2,
    ),
    ("comm-bad-op", ["comm", "--ops", "bogus", "--dry-run", "-o", "{tmp}/r"], None, 2),
    (
        "benchmark-config-missing",
        ["benchmark", "-c", "{tmp}/missing.yaml", "-o", "{tmp}/r"],
        None,
        2,
    ),
    ("benchmark-bad-config", ["benchmark", "-c", _bad_config, "-o", "{tmp}/r"], None, 2),
    ("benchmark-no-config", ["benchmark"], None, 2),
    (
        "benchmark-bad-override",
        ["benchmark", "-c", _tiny_config, "--training.precision=fp8", "-o", "{tmp}/r"],
        None,
        2,
    ),
    (
        "benchmark-unknown-override-key",
        ["benchmark", "-c", _tiny_config, "--training.precison", "bf16", "-o", "{tmp}/r"],
        None,
        2,
    ),
    (
        "benchmark-override-without-value",
        ["benchmark", "-c", _tiny_config, "-o", "{tmp}/r", "--training.precision"],
        None,
        2,
    ),
    ("benchmark-bare-unknown-flag", ["benchmark", "-c", _tiny_config, "--foo"], None, 2),
    ("config-validate-bad-override", ["config", "validate", _tiny_config, "--a.b=1"], None, 2),
    ("comm-json-takes-no-file", ["comm", "--json", "{tmp}/x.json", "--dry-run"], None, 2),
    ("profile-dash-b-is-comm-only", ["profile", "-b", "8", "-o", "{tmp}/r"], None, 2),
    (
        "profile-analyze-dash-o-is-a-directory-flag",
        ["profile", "analyze", _synthetic_traces, "-o", "{tmp}/a.json"],
        None,
        2,
    ),
    ("benchmark-status-missing", ["benchmark", "--status", "{tmp}/missing"], None, 2),
    ("list-bad-option", ["list", "--bogus"], None, 2),
    ("validate-bad-device", ["validate", "--device", "tpu"], None, 2),
    ("config-validate-missing", ["config", "validate", "{tmp}/missing.yaml"], None, 2),
    ("config-validate-bad", ["config", "validate", _bad_config], None, 2),
    ("config-show-missing", ["config", "show", "{tmp}/missing.yaml"], None, 2),
    ("config-init-unknown-hardware", ["config", "init", "--hardware", "nope"], None, 2),
    ("config-schema-bad-option", ["config", "schema", "--bogus"], None, 2),
    ("profile-bad-duration", ["profile", "--duration", "abc", "-o", "{tmp}/r"], None, 2),
    (
        "profile-tool-nsys-without-nsys",
        [
            "profile",
            "--tool",
            "nsys",
            "--device",
            "cpu",
            "--gpus",
            "1",
            "--model",
            "tiny-mlp",
            "--steps",
            "1",
            "-o",
            "{tmp}/r",
        ],
        _no_nsys,
        2,
    ),
    ("profile-analyze-missing", ["profile", "analyze", "{tmp}/missing"], None, 2),
    ("profile-analyze-no-traces", ["profile", "analyze", _not_results], None, 2),
    ("profile-analyze-truncated", ["profile", "analyze", _truncated_traces], None, 2),
    (
        "report-source-missing",
        ["report", "-s", "{tmp}/missing", "-f", "md", "-o", "{tmp}/r.md"],
        None,
        2,
    ),
    (
        "report-generate-source-missing",
        ["report", "generate", "-s", "{tmp}/missing", "-f", "md", "-o", "{tmp}/r.md"],
        None,
        2,
    ),
    (
        "report-source-no-results",
        ["report", "-s", _not_results, "-f", "md", "-o", "{tmp}/r.md"],
        None,
        2,
    ),
    (
        "report-baseline-missing",
        [
            "report",
            "-s",
            FIXTURES / "cpu_sweep_profile",
            "--baseline",
            "{tmp}/missing",
            "-f",
            "md",
            "-o",
            "{tmp}/r.md",
        ],
        None,
        2,
    ),
    ("report-bad-format", ["report", "-s", FIXTURES / "cpu_sweep_profile", "-f", "docx"], None, 2),
    (  # found before any work, as every command's -o is (was 1, after building the report)
        "report-output-unwritable",
        ["report", "-s", FIXTURES / "cpu_sweep_profile", "-f", "md", "-o", _blocked],
        None,
        2,
    ),
    # -------------------------------------------------------------- 1: a run that failed
    (
        "comm-import-failed-run",
        ["comm", "--import", NCCL_TESTS / "failed_midway.txt", "-o", "{tmp}/r"],
        None,
        1,
    ),
    ("validate-check-failed", ["validate", "--device", "cpu", "--quick"], _failing_check, 1),
    # ---------------------------------------------------------------------------- 0: success
    ("list", ["list"], None, 0),
    ("config-schema", ["config", "schema"], None, 0),
    ("config-validate", ["config", "validate", _tiny_config], None, 0),
    ("config-show", ["config", "show", _tiny_config], None, 0),
    (
        "config-show-override",
        ["config", "show", _tiny_config, "--training.precision=bf16"],
        None,
        0,
    ),
    (
        "comm-import",
        ["comm", "--import", NCCL_TESTS / "all_reduce_2gpu.txt", "-o", "{tmp}/r"],
        None,
        0,
    ),
    ("benchmark-dry-run", ["benchmark", "-c", _tiny_config, "-o", "{tmp}/r", "--dry-run"], None, 0),
    (
        "benchmark-dry-run-override",
        [
            "benchmark",
            "-c",
            _tiny_config,
            "--training.precision",
            "bf16",
            "-o",
            "{tmp}/r",
            "--dry-run",
        ],
        None,
        0,
    ),
    (
        "comm-import-json",
        ["comm", "--import", NCCL_TESTS / "all_reduce_2gpu.txt", "-o", "{tmp}/r", "--json"],
        None,
        0,
    ),
    (
        "profile-analyze",
        ["profile", "analyze", _synthetic_traces, "--output", "{tmp}/a.json"],
        None,
        0,
    ),
    (
        "report",
        ["report", "-s", FIXTURES / "cpu_sweep_profile", "-f", "md", "-o", "{tmp}/r.md"],
        None,
        0,
    ),
    (
        "report-generate",
        [
            "report",
            "generate",
            "-s",
            FIXTURES / "cpu_sweep_profile",
            "-f",
            "md",
            "-o",
            "{tmp}/r.md",
        ],
        None,
        0,
    ),
]


def _argv(parts: list[Arg], tmp: Path) -> list[str]:
    out = []
    for part in parts:
        if callable(part):
            part = part(tmp)
        out.append(str(part).replace("{tmp}", str(tmp)))
    return out


@pytest.mark.parametrize(
    ("argv", "setup", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.slow  # over 2 s on 2 cores
def test_every_command_exits_by_one_grammar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[Arg], setup: Any, code: int
) -> None:
    if setup is not None:
        setup(monkeypatch)
    run = CliRunner().invoke(app, _argv(argv, tmp_path))
    assert run.exit_code == code, run.output
    assert run.exception is None or isinstance(run.exception, SystemExit), run.exception
    assert "Traceback" not in run.output
    if code == 2:
        # one clear line: ours ("error: ...") or click's usage box ("Error" / "Usage:")
        ours = error_lines(run.output)
        assert len(ours) == 1 or "Usage:" in run.output or "Error" in run.output, run.output
    if code == 0:
        assert not error_lines(run.output), run.output


def test_the_exit_codes_are_set_in_one_place() -> None:
    """Every input error is a UsageError (exit 2); domain classes stay catchable as before."""
    from torchscale.contracts import errors
    from torchscale.interfaces.cli.common import EXIT_INTERRUPTED

    assert errors.UsageError.exit_code == errors.EXIT_USAGE == 2
    assert errors.TorchScaleError.exit_code == errors.EXIT_FAILED == 1
    # the regression gate's two outcomes (docs/regressions.md), each its own code
    assert (errors.EXIT_REGRESSION, errors.EXIT_NOT_JUDGED) == (3, 4)
    codes = [1, 2, errors.EXIT_REGRESSION, errors.EXIT_NOT_JUDGED, EXIT_INTERRUPTED, 143, 129]
    assert len(set(codes)) == len(codes)
    for cls, domain in [
        (errors.ConfigError, errors.UsageError),
        (errors.OutputDirError, errors.UsageError),
        (errors.ResultsInputError, errors.ResultsError),
        (errors.TraceInputError, errors.TraceError),
        (errors.ToolNotFoundError, errors.LaunchError),
    ]:
        assert issubclass(cls, errors.UsageError) and issubclass(cls, domain)
        assert cls.exit_code == 2
        assert "exit_code" not in vars(cls) or cls is errors.UsageError


# ================================================================ a profile the config asked for


def test_a_failed_profile_says_its_log_first_error_line_and_path(tmp_path: Path) -> None:
    from torchscale.orchestration.profiling.session import failed_run_reason, first_error_line

    log = tmp_path / "torchrun.log"
    log.write_text(
        "Collecting data...\nAgent launcher failed.\nGenerating '/tmp/x.qdstrm'\n", "utf-8"
    )
    assert first_error_line(log) == "Agent launcher failed."
    assert first_error_line(tmp_path / "missing.log") is None
    # a warning never, the last raised exception first
    noisy = tmp_path / "noisy.log"
    noisy.write_text(
        "W1126 00:01:02 socket.cpp:752] The client socket has failed to connect, retrying\n"
        "Traceback (most recent call last):\n"
        '  File "torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355\n'
        "ValueError: first\n"
        "RuntimeError: the run's own error\n",
        "utf-8",
    )
    assert first_error_line(noisy) == "RuntimeError: the run's own error"
    exited = Finding(code="failure.torchrun_exit", figures={"returncode": 1})
    reason = failed_run_reason(result(Status.FAILED, exited), log)
    assert "torchrun exited with 1" in reason
    assert "its log says: Agent launcher failed." in reason
    assert str(log) in reason and "\n" not in reason
    # an exception that already carries the line does not repeat it
    raised = result(
        Status.FAILED, Finding(code="failure.raised"), exception="Agent launcher failed."
    )
    said = failed_run_reason(raised, log)
    assert said.count("Agent launcher failed.") == 1


def test_a_profile_without_analysis_fails_the_benchmark(tmp_path: Path) -> None:
    from torchscale.orchestration.profiling.session import ProfiledCell
    from torchscale.orchestration.schedulers.api import BenchmarkRun
    from torchscale.orchestration.sweep_outcome import SweepOutcome

    measured = SweepOutcome(results=[result(Status.OK)])
    run = BenchmarkRun(plan=None, store=None, sweep=measured)  # type: ignore[arg-type]
    assert run.exit_code == 0
    exited = Finding(code="failure.torchrun_exit", figures={"returncode": 1})
    failed = ProfiledCell(tmp_path, result(Status.FAILED, exited), analysis_error="why")
    run.profiles.append((None, failed))  # type: ignore[arg-type]
    assert run.exit_code == 1
