"""`validate --level perf` and `--level workload` speak and keep: a line per phase when stderr
is not a terminal, each finished perf phase written under -o as it ends, and a stop line that
says what was kept (one real perf run stopped by SIGTERM after its first phase)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.processes import processes_mentioning, start, stop, wait_for
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.perf import BandwidthResult, PeakResult, PerfRun, RankPerf
from torchscale.contracts.signals import Terminated
from torchscale.contracts.wording import say
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.console.validate import NOTHING_KEPT, perf_kept, workload_kept
from torchscale.offline.results.documents import read_validate_report
from torchscale.orchestration.validate.perf import (
    PHASES_DIR,
    finished_phases,
    merge_phases,
    phase_line,
    phase_title,
    plan_perf,
    planned_phases,
)
from torchscale.orchestration.validate.run_checks import CHECKS


def _phase(*ranks: RankPerf) -> PerfRun:
    return PerfRun(world_size=len(ranks), ranks=list(ranks))


def _matmul(rank: int, tflops: float | None, dtype: str = "bf16") -> RankPerf:
    peak = PeakResult(
        dtype=dtype,
        device=f"cuda:{rank}",
        device_name="NVIDIA H100 80GB HBM3",
        best_tflops=tflops,
        probes=[],
        elapsed_s=4.2,
        unavailable=None
        if tflops
        else Finding(code="matmul.no_fp8", figures={"capability": [9, 0]}),
    )
    return RankPerf(rank=rank, device=f"cuda:{rank}", device_name=peak.device_name, matmul=[peak])


def _copy(rank: int, gbps: float) -> RankPerf:
    figure = BandwidthResult(check="memory.copy", device=f"cuda:{rank}", gbps=gbps)
    return RankPerf(rank=rank, device=f"cuda:{rank}", device_name="H100", bandwidth=[figure])


def test_the_phases_are_named_in_the_order_the_ranks_run_them(tmp_path: Path) -> None:
    spec = plan_perf("cpu", 0, 2, tmp_path).spec
    assert spec.phase_dir == str(tmp_path / PHASES_DIR)  # under the run's folder, not a temp
    assert planned_phases(spec) == [
        "matmul fp32",
        "matmul bf16",
        "matmul fp16",
        "memory copy",
        "memory triad",
        "host to device",
        "device to host",
    ]
    assert phase_title("03-matmul-bf16") == "matmul bf16"
    assert phase_title("07-host-d2h") == "device to host"


def test_a_phase_line_gives_its_figure_over_the_ranks_or_why_not() -> None:
    one = phase_line("matmul bf16", _phase(_matmul(0, 612.0)))
    assert one == "perf: matmul bf16: 612 TFLOP/s (0 probes, 4.2 s)"
    two = phase_line("matmul bf16", _phase(_matmul(0, 612.0), _matmul(1, 598.0)))
    assert "598 to 612 TFLOP/s over 2 ranks" in two
    none = phase_line("matmul fp8", _phase(_matmul(0, None, "fp8")))
    assert none == (
        "perf: matmul fp8: not measured: compute capability (9, 0) has no fp8 tensor cores "
        "(needs 8.9)"
    )
    assert phase_line("memory copy", _phase(_copy(0, 2900.0))) == "perf: memory copy: 2900 GB/s"


def test_finished_phases_merge_into_one_run_per_rank(tmp_path: Path) -> None:
    phases = tmp_path / PHASES_DIR
    phases.mkdir()
    (phases / "01-matmul-bf16.json").write_text(
        _phase(_matmul(0, 612.0), _matmul(1, 598.0)).model_dump_json()
    )
    (phases / "02-memory-copy.json").write_text(
        _phase(_copy(0, 1.0), _copy(1, 2.0)).model_dump_json()
    )
    (phases / "03-memory-triad.json.tmp").write_text("{")  # an atomic write under way
    found = finished_phases(tmp_path)
    assert [title for title, _ in found] == ["matmul bf16", "memory copy"]
    merged = merge_phases([run for _, run in found])
    assert merged is not None and [r.rank for r in merged.ranks] == [0, 1]
    assert [len(r.matmul) for r in merged.ranks] == [1, 1]
    assert [r.bandwidth[0].gbps for r in merged.ranks] == [1.0, 2.0]
    assert merge_phases([]) is None


def test_the_stop_line_says_what_was_kept_and_where(tmp_path: Path) -> None:
    folder = tmp_path / "perf" / "node-20261126-120000"
    report = tmp_path / "acceptance" / "node.perf.json"
    kept = perf_kept(["matmul fp32", "matmul tf32", "matmul bf16", "memory copy"], folder, report)
    assert kept == (
        f"kept: matmul fp32, tf32, bf16, memory copy in {folder / 'phases'}; their report: {report}"
    )
    assert perf_kept([], folder, None) == NOTHING_KEPT == "nothing had finished: nothing was kept"
    assert workload_kept(["node checks", "eager cells"], tmp_path, "summary.md") == (
        f"kept: node checks, eager cells in {tmp_path} (summary.md says where it stopped)"
    )
    assert "nothing had finished" in workload_kept([], tmp_path, "summary.md")


@pytest.mark.parametrize(
    ("stop", "code", "head"),
    [
        (Terminated(signal.SIGTERM), 143, "stopped by SIGTERM"),
        (Terminated(signal.SIGHUP), 129, "stopped by SIGHUP"),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
    ids=["term", "hup", "ctrl-c"],
)
def test_a_stopped_workload_level_names_its_finished_steps_and_printed_each(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stop: BaseException, code: int, head: str
) -> None:
    """Off a terminal, a line per step; stopped during the third: the two before it named."""
    from torchscale.interfaces.api import workload

    def steps(plan, device, folder, env, done, say):  # type: ignore[no-untyped-def]
        for step in ("node checks", "eager cells", "max-batch search"):
            say(step)
        raise stop

    monkeypatch.setattr(workload, "_run_steps", steps)
    out = tmp_path / "results"
    result = CliRunner().invoke(
        app, ["validate", "--level", "workload", "--device", "cpu", "-o", str(out)]
    )
    assert result.exit_code == code, result.output
    (folder,) = (out / "standalone").glob("workload-*")
    assert result.stderr.splitlines() == [
        "> workload: node checks",
        "> workload: eager cells",
        "> workload: max-batch search",
        f"{head}; kept: node checks, eager cells in {folder} (summary.md says where it stopped)",
    ]
    assert "during max-batch search" in (folder / "summary.md").read_text()


# --- one real perf run on this CPU, stopped after its first phase ------------------------------


def _phase_files(out: Path) -> list[Path]:
    return sorted(out.glob(f"standalone/perf/*/{PHASES_DIR}/*.json"))


@pytest.mark.slow  # a real perf launch under torchrun, stopped by SIGTERM
def test_a_perf_run_to_a_file_prints_each_phase_and_sigterm_keeps_the_finished_ones(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results"
    log = tmp_path / "stderr.txt"
    argv = [sys.executable, "-m", "torchscale", "validate", "--device", "cpu", "--level", "perf"]
    argv += ["--quick", "--budget", "0.5", "-o", str(out)]
    # stderr (and stdout) to a file: not a terminal
    proc = start(argv, log, env={"COLUMNS": "400"})
    try:
        assert wait_for(lambda: bool(_phase_files(out)) or proc.poll() is not None, 300), (
            log.read_text()
        )
        assert proc.poll() is None, log.read_text()  # the comm sweep still follows the phases
        os.kill(proc.pid, signal.SIGTERM)  # as a scheduler stops a job
        proc.wait(timeout=120)
        leftovers = processes_mentioning(str(out), grace_s=10)
    finally:
        stop(proc, str(out))
    text = log.read_text()
    assert proc.returncode == 128 + signal.SIGTERM, text
    assert leftovers == []  # no rank or torchrun outlives the stop
    assert "Traceback" not in text
    lines = text.splitlines()
    kept = finished_phases(_phase_files(out)[0].parent.parent)
    assert kept and kept[0][0] == "matmul fp32"
    # a line per finished phase (each dtype), whatever the stop cut
    for title, _ in kept:
        assert sum(line.startswith(f"> perf: {title}: ") for line in lines) == 1, text
    assert lines[0] == f"> validate: {len(CHECKS)} node checks"
    folder = _phase_files(out)[0].parent
    stop_line = next(line for line in lines if line.startswith("stopped by SIGTERM"))
    assert "kept: matmul fp32" in stop_line and f" in {folder}" in stop_line, stop_line
    # the acceptance report of what finished, where `torchscale report` finds it
    saved = read_validate_report(
        out / "standalone" / "acceptance" / f"{socket.gethostname()}.perf.json"
    ).doc
    assert saved is not None
    conclusion = say(saved.verdict_basis)
    assert saved.ok is False and conclusion.startswith("Not judged: stopped by SIGTERM")
    assert "fp32" in saved.measured_peaks
    assert json.loads(_phase_files(out)[0].read_text())["ranks"][0]["matmul"][0]["dtype"] == "fp32"
