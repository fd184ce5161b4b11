"""`validate --level perf`: the plan, the judging of the figures, the fleet line, the Slurm
preflight's argv, and one real run on this CPU through the CLI (its report saved where
`torchscale report` finds it, read back, verdicts stable across two judgings)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult, CommRow
from torchscale.contracts.schema.perf import (
    BandwidthResult,
    P2PMatrix,
    P2PPair,
    PeakResult,
    PerfRun,
    RankPerf,
)
from torchscale.contracts.schema.validate_report import SCHEMA_VERSION as VALIDATE_SCHEMA_VERSION
from torchscale.contracts.wording import validate_measured as shown
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.documents import read_validate_report
from torchscale.orchestration.schedulers.slurm.preflight import validate_argv
from torchscale.orchestration.validate.check_result import (
    CheckStatus,
    Measurement,
    ValidateReport,
)
from torchscale.orchestration.validate.fleet_table import fleet_summary, measurement_table
from torchscale.orchestration.validate.perf import (
    CPU_DTYPES,
    GPU_DTYPES,
    busbw_rows,
    judge_perf,
    measured_peaks,
    perf_checks,
    plan_perf,
    worst,
)
from torchscale.orchestration.validate.reference import expected_for
from torchscale.orchestration.validate.run_checks import is_ok

H100 = "NVIDIA H100 80GB HBM3"


def test_plan_is_one_rank_per_gpu_or_one_cpu_rank_with_every_core(tmp_path: Path) -> None:
    gpu = plan_perf("cuda", 8, 64, tmp_path)
    assert (gpu.nproc, gpu.omp_num_threads, tuple(gpu.spec.dtypes)) == (8, 1, GPU_DTYPES)
    cpu = plan_perf("cpu", 0, 2, tmp_path, matmul_budget_s=0.5)
    assert (cpu.nproc, cpu.omp_num_threads, tuple(cpu.spec.dtypes)) == (1, 2, CPU_DTYPES)
    assert cpu.spec.matmul_budget_s == 0.5
    assert cpu.timeout_s > 0.5 * len(CPU_DTYPES)


PLANTED = Finding(code="perf.wrong_sums", figures={"wrong": 1, "comm_run": "planted"})
NO_FP8 = Finding(code="matmul.no_fp8", figures={"capability": [9, 0]})


def _peak(dtype: str, tflops: float | None, name: str = H100, **extra: Any) -> PeakResult:
    return PeakResult(dtype=dtype, device="cuda:0", device_name=name, best_tflops=tflops, **extra)


def _rank(rank: int, bf16: float, name: str = H100) -> RankPerf:
    return RankPerf(
        rank=rank,
        device=f"cuda:{rank}",
        device_name=name,
        matmul=[_peak("bf16", bf16, name), _peak("fp8", None, name, unavailable=NO_FP8)],
        bandwidth=[
            BandwidthResult(
                check="memory.triad",
                device=f"cuda:{rank}",
                gbps=3000.0,
                bytes_per_call=3 << 30,
                seconds_per_call=0.001,
                calls=10,
                unavailable=None,
            )
        ],
    )


def test_each_gpus_figure_is_judged_against_its_skus_reference() -> None:
    run = PerfRun(world_size=2, ranks=[_rank(1, 700.0), _rank(0, 780.0)])
    rows = judge_perf(run, "cuda")
    bf16 = [r for r in rows if r.check == "matmul.bf16"]
    assert [r.gpu for r in bf16] == [0, 1]  # in GPU order whatever the gather order
    expected = expected_for(H100, "matmul.bf16")
    assert expected is not None
    for row in bf16:
        assert row.expected == expected.value and row.expected_source == expected.source
        assert row.ratio == pytest.approx(row.value / expected.value)  # type: ignore[operator]
    fp8 = [r for r in rows if r.check == "matmul.fp8"]
    assert all(r.value is None and r.status is CheckStatus.SKIP for r in fp8)
    assert (
        shown.unavailable(fp8[0]) == "compute capability (9, 0) has no fp8 tensor cores (needs 8.9)"
    )
    assert fp8[0].finding == NO_FP8  # stored as the rank's finding, no sentence beside it
    assert "said" not in fp8[0].model_dump()


def test_a_figure_above_the_spec_sheet_is_a_fail_and_never_a_value() -> None:
    figures = {"best": 2000.0, "shape": [8192] * 3, "dtype": "bf16", "spec": 989.0}
    too_fast = Finding(code="matmul.suspect", figures=figures | {"ratio": 2.02, "allowed": 1.05})
    suspect = _peak("bf16", 2000.0, suspect=too_fast)
    run = PerfRun(
        world_size=1, ranks=[RankPerf(rank=0, device="cuda:0", device_name=H100, matmul=[suspect])]
    )
    [row] = judge_perf(run, "cuda")
    assert row.status is CheckStatus.FAIL and row.value is None
    assert "exceeds" in shown.detail(row)


def test_a_cpu_figure_has_no_reference_and_says_so() -> None:
    cpu = RankPerf(
        rank=0,
        device="cpu",
        device_name="CPU x86_64",
        matmul=[PeakResult(dtype="fp32", device="cpu", device_name="CPU x86_64", best_tflops=0.05)],
    )
    [row] = judge_perf(PerfRun(world_size=1, ranks=[cpu]), "cpu")
    assert (row.status, row.expected, row.gpu) == (CheckStatus.INFO, None, None)
    assert row.value == 0.05


def test_the_check_line_carries_the_worst_gpu_and_the_spread() -> None:
    rows = [
        Measurement(
            check="matmul.bf16",
            title="matmul bf16",
            gpu=g,
            value=v,
            unit="TFLOP/s",
            status=s,
            finding=Finding(code="perf.pass", figures={"ratio": v / 989.0, "expected": 989.0}),
        )
        for g, v, s in [
            (0, 780.0, CheckStatus.PASS),
            (1, 500.0, CheckStatus.FAIL),
            (2, 781.0, CheckStatus.PASS),
        ]
    ]
    [check] = perf_checks(rows, "GPU")
    assert check.status is CheckStatus.FAIL
    assert "3 GPUs, 500 TFLOP/s to 781 TFLOP/s" in shown.detail(check)
    assert "GPU 1: 51 % of the spec-sheet 989" in shown.detail(check)
    assert (
        shown.hint(check)
        == "see docs/validate.md ('How to read a FAIL') for what to check on this node"
    )
    stored = check.model_dump()  # schema 5: codes and figures, no sentence
    assert not {"detail", "hint", "said", "said_fix"} & set(stored)
    assert [f["code"] for f in stored["findings"]] == ["perf.spread"]
    assert [f["code"] for f in stored["fix"]] == ["perf.fix_fail"]
    assert worst([CheckStatus.INFO, CheckStatus.SKIP]) is CheckStatus.INFO
    assert measured_peaks(rows) == {"bf16": 780.0}  # the median GPU, not the best


def _comm_row(op: str, size: int, busbw: float | None, **extra: Any) -> CommRow:
    return CommRow(
        op=op,
        size_bytes=size,
        count=size // 4,
        dtype="float32",
        placement="out-of-place",
        busbw_gbps=busbw,
        **extra,
    )


def test_busbw_is_the_largest_size_out_of_place_and_wrong_sums_fail() -> None:
    result = CommResult(
        id="run1",
        world_size=2,
        device="cpu",
        backend="gloo",
        dtype="float32",
        check=True,
        rows=[
            _comm_row("all_reduce", 1024, 5.0, wrong=0),
            _comm_row("all_reduce", 1 << 20, 2.0, wrong=0),
            _comm_row("all_gather", 1 << 20, 3.0, wrong=4),
            _comm_row("reduce_scatter", 1 << 20, None, status="failed", reason="gloo lacks it"),
        ],
    )
    rows = {r.check: r for r in busbw_rows(result, "CPU x86_64", "comm/run1.json")}
    assert rows["busbw.all_reduce"].value == 2.0  # the bandwidth regime, not the best figure
    assert rows["busbw.all_reduce"].data["size_bytes"] == 1 << 20
    assert rows["busbw.all_gather"].status is CheckStatus.FAIL
    assert "4 wrong element(s)" in shown.detail(rows["busbw.all_gather"])
    assert shown.unavailable(rows["busbw.reduce_scatter"]) == "gloo lacks it"
    assert rows["busbw.all_to_all"].value is None


def test_p2p_pairs_are_rows_per_pair_with_latency_lower_is_better() -> None:
    matrix = P2PMatrix(
        gpus=[0, 1],
        pairs=[
            P2PPair(src=0, dst=1, peer_access=True, gbps=400.0, latency_us=2.0),
            P2PPair(src=1, dst=0, peer_access=False, gbps=20.0, latency_us=9.0),
        ],
    )
    run = PerfRun(
        world_size=1, ranks=[RankPerf(rank=0, device="cuda:0", device_name=H100)], p2p=matrix
    )
    rows = judge_perf(run, "cuda")
    bw = [r for r in rows if r.check == "p2p.bw"]
    assert [(r.data["src"], r.data["dst"], r.value) for r in bw] == [(0, 1, 400.0), (1, 0, 20.0)]
    assert bw[1].data["peer_access"] is False
    latency = [r for r in rows if r.check == "p2p.latency"]
    assert all(not r.higher_is_better for r in latency)


def _report(host: str, bf16: float) -> ValidateReport:
    rows = [
        Measurement(
            check="matmul.bf16",
            title="matmul bf16",
            gpu=g,
            value=bf16 - g,
            unit="TFLOP/s",
            status=CheckStatus.PASS,
        )
        for g in range(2)
    ]
    return ValidateReport(
        torchscale_version="0",
        created_at="2026-01-01T00:00:00+00:00",
        hostname=host,
        device="cuda",
        quick=True,
        ok=True,
        counts={},
        verdict_basis=Finding(code="validate.ready", figures={"quick": True, "path": "GPU"}),
        checks=[],
        level="perf",
        measurements=rows,
    )


def test_the_fleet_line_names_the_slow_node_with_its_evidence() -> None:
    reports = [_report(f"node{k}", 780.0) for k in range(5)] + [_report("node5", 600.0)]
    assert len(measurement_table(reports)) == 12
    outliers, line = fleet_summary(reports)
    assert set(outliers["node"]) == {"node5"}
    assert line.startswith("2 outlier(s) among 6 nodes: ")
    assert "node5" in line
    _, few = fleet_summary(reports[:2])
    assert few.startswith("not judged: 2 node(s)")


def test_preflight_argv_saves_each_nodes_perf_report_in_the_experiment(tmp_path: Path) -> None:
    root = tmp_path / "results" / "exp"
    basic = validate_argv(2, "python", "cuda", tmp_path)
    assert not any(a.startswith("--level") for a in basic)
    perf = validate_argv(2, "python", "cuda", tmp_path, "perf", root)
    assert perf[-3:] == ["--level=perf", f"--output-dir={root.parent}", "--name=exp"]


# --- one real run on this CPU --------------------------------------------------------------


@pytest.fixture(scope="module")
def perf_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    out = tmp_path_factory.mktemp("perf") / "results"
    env = {**os.environ, "COLUMNS": "200"}
    result = CliRunner().invoke(
        app,
        [
            "validate",
            "--device",
            "cpu",
            "--level",
            "perf",
            "--quick",
            "--budget",
            "0.3",
            "-o",
            str(out),
            "--name",
            "accept",
            "--json",
        ],
        env=env,
    )
    return result, out


@pytest.mark.slow  # a real perf run under torchrun
def test_a_real_cpu_perf_run_measures_judges_and_saves(perf_run: tuple[Any, Path]) -> None:
    result, out = perf_run
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["level"] == "perf" and report["schema_version"] == VALIDATE_SCHEMA_VERSION
    rows = {(r["check"], r["gpu"]): r for r in report["measurements"]}
    for check in ("matmul.fp32", "memory.copy", "memory.triad", "busbw.all_reduce"):
        row = rows[(check, None)]
        assert row["value"] is not None and row["value"] > 0, row
        assert row["status"] == "INFO"  # a CPU: measured, nothing to compare with
    for check in ("h2d", "d2h"):
        assert rows[(check, None)]["value"] is None
        why = rows[(check, None)]["finding"]["code"]
        assert why in ("bandwidth.cpu_only_torch", "bandwidth.too_few_gpus")
        assert "detail" not in rows[(check, None)]  # schema 5: no sentence stored
    assert report["measured_peaks"]["fp32"] == rows[("matmul.fp32", None)]["value"]
    saved = out / "accept" / "acceptance" / f"{socket.gethostname()}.perf.json"
    again = read_validate_report(saved).doc
    assert again is not None
    assert again.measurements == ValidateReport.model_validate(report).measurements
    assert list((out / "accept" / "comm").glob("*.json"))  # comm's own run, stored as comm's


@pytest.mark.slow  # a real perf run under torchrun
def test_a_run_whose_stderr_is_no_terminal_prints_a_line_per_phase_and_keeps_them(
    perf_run: tuple[Any, Path],
) -> None:
    """Every phase (each matmul dtype) in a line on stderr as it ends, its file kept under
    -o with perf.json; stdout stays the JSON alone."""
    from torchscale.contracts.schema.perf import PerfSpec
    from torchscale.orchestration.validate.perf import PERF_DIR, PHASES_DIR, planned_phases

    result, out = perf_run
    (folder,) = (out / "accept" / PERF_DIR).iterdir()
    spec = PerfSpec.model_validate_json((folder / "perf-spec.json").read_text())
    titles = planned_phases(spec)
    lines = result.stderr.splitlines()
    said = [line.split(":")[1].strip() for line in lines if line.startswith("> perf: ")]
    assert said[1:-1] == titles, result.stderr  # between the launch's line and the comm sweep's
    assert lines[-1] == "> perf: collective bus bandwidth (comm sweep)"
    assert len(list((folder / PHASES_DIR).glob("*.json"))) == len(titles)
    assert (folder / "perf.json").is_file()


@pytest.mark.slow  # a real perf run under torchrun
def test_the_verdicts_are_the_same_when_judged_again(perf_run: tuple[Any, Path]) -> None:
    """Same figures, same verdicts: nothing in judging depends on order, time or chance."""
    result, _ = perf_run
    report = ValidateReport.model_validate_json(result.stdout)
    rows = report.measurements
    again = perf_checks(list(reversed(rows)), "rank")
    assert sorted((c.id, c.status) for c in again) == sorted(
        (c.id, c.status) for c in perf_checks(rows, "rank")
    )


def test_fail_on_warn_blocks_on_a_warn_and_info_never_blocks() -> None:
    assert is_ok({CheckStatus.PASS: 3, CheckStatus.WARN: 1, CheckStatus.INFO: 2}, "fail")
    assert not is_ok({CheckStatus.PASS: 3, CheckStatus.WARN: 1}, "warn")
    assert not is_ok({CheckStatus.FAIL: 1}, "fail")
    assert is_ok({CheckStatus.INFO: 5, CheckStatus.SKIP: 1}, "warn")


def test_a_bad_output_dir_and_a_bad_duration_are_one_line_each(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(
        app, ["validate", "--device", "cpu", "--level", "perf", "--quick", "-o", str(blocker)]
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    bad = CliRunner().invoke(app, ["validate", "--level", "burn", "--duration", "soon"])
    assert bad.exit_code == 2 and "--duration: 'soon' is not a duration" in bad.output


def test_a_fail_in_the_measurements_exits_one_and_the_saved_report_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit codes never lie: a measured FAIL (here a planted one) makes the command exit 1,
    with the report saved all the same (a finished measurement is never lost)."""
    import torchscale.orchestration.validate.perf as perf
    from torchscale.orchestration.validate.check_result import CheckResult

    def planted(*args: Any, **kwargs: Any) -> perf.PerfOutcome:
        row = Measurement(check="memory.triad", title="memory triad", value=1.0, unit="GB/s",
                          status=CheckStatus.FAIL, finding=PLANTED)  # fmt: skip
        check = CheckResult(id="perf_memory_triad", title="memory triad", status=CheckStatus.FAIL,
                            findings=[PLANTED])  # fmt: skip
        return perf.PerfOutcome(measurements=[row], checks=[check])

    monkeypatch.setattr(perf, "run_perf", planted)
    out = tmp_path / "results"
    result = CliRunner().invoke(
        app, ["validate", "--device", "cpu", "--level", "perf", "--quick", "-o", str(out)]
    )
    assert result.exit_code == 1, result.output
    assert "NOT ready" in result.output
    saved = read_validate_report(
        out / "standalone" / "acceptance" / f"{socket.gethostname()}.perf.json"
    ).doc
    assert saved is not None
    assert saved.ok is False and saved.measurements[0].finding == PLANTED
