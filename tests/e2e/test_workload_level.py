"""`validate --level workload`: its plan (pure), each step's verdict on real results bent into
the faults a node can show, and the whole level end to end on CPU (slow: every path of a
training job under torchrun, about 5 minutes on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.h100_replay import WORKLOAD, read_cells
from tests.processes import processes_mentioning
from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, CellResult
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import say
from torchscale.contracts.wording import validate_measured as shown
from torchscale.interfaces.api.workload import read_node, summary_markdown
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.documents import read_cell
from torchscale.orchestration.profiling.session import ProfiledCell
from torchscale.orchestration.validate import workload_judge as judge
from torchscale.orchestration.validate.check_result import CheckStatus, ValidateReport
from torchscale.orchestration.validate.workload_plan import (
    OOM_BATCH,
    OOM_FACTOR,
    NodeFacts,
    oom_hidden,
    plan_workload,
    strategies_for,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
SWEEP = FIXTURES / "cpu_default_sweep" / "default_scaling" / "cells"
PROFILED = FIXTURES / "cpu_profile_injected" / "standalone" / "profile"
GIB = 1024**3


def _cell(name: str = "tiny-gpt2__b16__w2__fp32__ddp__3ce244dc") -> CellResult:
    read = read_cell(SWEEP / f"{name}.json")
    assert read.doc is not None, read.problem
    return read.doc


# -- the plan ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("world", "expected"),
    [
        (1, ["ddp"]),
        (2, ["ddp", "fsdp", "tp", "pp"]),
        (8, ["ddp", "fsdp", "tp", "pp", "hybrid"]),
    ],
)
def test_every_strategy_the_node_can_hold(world: int, expected: list[str]) -> None:
    assert strategies_for(world) == expected


def _strategies(groups: dict[str, dict[str, object]]) -> dict[str, list[str]]:
    return {name: data["training"]["strategy"] for name, data in groups.items()}  # type: ignore[index]


def test_the_cells_run_as_many_repeats_as_the_report_asks_for() -> None:
    """The report advises `measurement.repeats: 4` or more for a set with fewer (a 95 %
    interval on 2 repeats uses t = 12.7): the level's own cells run that many, so its report
    never advises a rerun the level refuses."""
    from torchscale.offline.analysis.uncertainty import SMALL

    plan = plan_workload(NodeFacts("cuda", 1, 80 * GIB, nsys=None, cpu_cores=16))
    for groups in (plan.eager, plan.compiled):
        for config in groups.values():
            assert config["measurement"]["repeats"] >= SMALL  # type: ignore[index]


def test_an_8_gpu_node_runs_every_strategy_where_gpt2_splits() -> None:
    plan = plan_workload(NodeFacts("cuda", 8, 80 * GIB, nsys="/usr/bin/nsys", cpu_cores=16))
    assert plan.unplaced == {}
    # GPT-2's 12 heads do not split over 8 GPUs: tensor parallelism runs on 6; 8 pipeline
    # stages want 8 micro-batches of at least 2 samples: the pipeline runs at batch 16
    assert _strategies(plan.eager) == {
        "eager": ["ddp", "fsdp", "hybrid"],
        "eager-tp-x6": ["tp"],
        "eager-pp-x8": ["pp"],
    }
    pipeline = plan.eager["eager-pp-x8"]
    assert pipeline["training"]["parallel"]["microbatches"] == [8]  # type: ignore[index]
    assert pipeline["batch_sizes"] == [16]
    assert _strategies(plan.compiled) == {
        "compiled": ["ddp", "fsdp", "hybrid"],
        "compiled-tp-x6": ["tp"],
    }  # a pipeline is never compiled
    assert plan.eager["eager"]["training"]["compile"] is False  # type: ignore[index]
    assert plan.compiled["compiled"]["training"]["compile"] is True  # type: ignore[index]
    assert plan.profile_tools == ("torch", "nsys") and plan.nsys_skipped is None
    assert "comm" in plan.eager["eager"]
    assert plan.fit["memory"]["max_batch_search"] is True


@pytest.mark.parametrize("gpus", [1, 2, 3, 4, 5, 6, 7, 8])
def test_no_planned_cell_is_skipped_on_any_gpu_count(gpus: int) -> None:
    from torchscale.orchestration.config.loader import validate_data
    from torchscale.orchestration.plan.build import build_plan
    from torchscale.orchestration.plan.nodes import Machine

    plan = plan_workload(NodeFacts("cuda", gpus, 80 * GIB, cpu_cores=16))
    assert plan.unplaced == {}
    machine = Machine(gpu_count=gpus, cpu_cores=16)
    placed = []
    for data in [*plan.eager.values(), *plan.compiled.values(), plan.fit, plan.oom]:
        assert data is not None
        cells = build_plan(validate_data(dict(data), "test"), machine).cells
        assert [c.skip_reason for c in cells if c.skip_reason] == []
        placed += [c.cell.strategy for c in cells]
    assert set(strategies_for(gpus)) <= set(placed)


def test_one_gpu_has_no_collective_sweep_and_says_so() -> None:
    plan = plan_workload(NodeFacts("cuda", 1, 80 * GIB))
    assert "comm" not in plan.eager["eager"]
    assert plan.nsys_skipped is not None and say(plan.nsys_skipped) == "nsys is not on PATH"
    assert any("one device" in note for note in plan.notes)


def test_fsdp_is_judged_at_two_devices_or_more_and_one_gpu_runs_only_its_machinery() -> None:
    """FSDP at world 1 shards nothing: it is planned as a strategy from 2 devices up; one GPU
    runs it, labelled, to prove FSDP2's code path on CUDA, and says ddp has no wrapper."""
    one = plan_workload(NodeFacts("cuda", 1, 80 * GIB))
    assert one.machinery_only == ("fsdp",)
    assert _strategies(one.eager) == {"eager": ["ddp", "fsdp"]}
    [note] = [n for n in one.notes if n.startswith("one device")]
    assert "FSDP2 machinery only, nothing sharded" in note and "no wrapper at world 1" in note
    for gpus in (2, 4, 8):
        plan = plan_workload(NodeFacts("cuda", gpus, 80 * GIB, cpu_cores=16))
        assert plan.machinery_only == ()
        assert "fsdp" in strategies_for(gpus)
        assert "fsdp" in plan.eager["eager"]["training"]["strategy"]
        assert plan.eager["eager"]["gpu_counts"] == [gpus]


def test_the_cpu_path_compiles_one_strategy_and_never_runs_nsys() -> None:
    plan = plan_workload(NodeFacts("cpu", 2, 24 * GIB, overcommit_mode=0, nsys="/usr/bin/nsys"))
    assert _strategies(plan.compiled) == {"compiled": ["ddp"]}
    assert _strategies(plan.eager) == {"eager": ["ddp", "fsdp", "tp", "pp"]}
    assert plan.profile_tools == ("torch",) and plan.nsys_skipped


@pytest.mark.parametrize("memory_gib", [24, 80, 141])
def test_the_oom_cell_outgrows_memory_in_its_first_activation(memory_gib: int) -> None:
    memory = memory_gib * GIB
    hidden = oom_hidden(memory)
    first_activation = OOM_BATCH * hidden * 4
    assert first_activation >= OOM_FACTOR * memory
    assert 4 * (32 + 10 + 2) * hidden * 4 <= memory / 4  # the model itself is built
    plan = plan_workload(NodeFacts("cuda", 1, memory))
    assert plan.oom is not None and plan.oom["batch_sizes"] == [OOM_BATCH]
    assert plan.oom["training"]["compile"] is False
    assert plan.oom["models"][0]["options"]["hidden"] == hidden


def test_no_oom_cell_when_the_kernel_would_kill_instead_or_memory_is_unknown() -> None:
    always = plan_workload(NodeFacts("cpu", 2, 24 * GIB, overcommit_mode=1))
    assert always.oom is None and always.oom_skipped is not None
    assert "overcommit" in say(always.oom_skipped)
    unknown = plan_workload(NodeFacts("cuda", 1, None, memory_unknown="NVML failed"))
    assert unknown.oom is None and unknown.oom_skipped is not None
    assert "NVML failed" in say(unknown.oom_skipped)


# -- the verdicts ---------------------------------------------------------------------------------


def test_a_cell_that_ran_passes_and_a_failed_one_names_its_cause(tmp_path: Path) -> None:
    ok = _cell()
    assert judge.judge_cell(ok, False, tmp_path).status is CheckStatus.PASS
    raised = CellError(
        why=Finding(code="failure.raised"), root_cause_rank=1, exception="NCCL timeout"
    )
    broken = ok.model_copy(update={"status": Status.FAILED, "error": raised})
    verdict = judge.judge_cell(broken, True, tmp_path)
    assert verdict.status is CheckStatus.FAIL and "NCCL timeout" in shown.detail(verdict)
    assert verdict.id == "cell.ddp.compiled" and str(tmp_path) in shown.hint(verdict)


@pytest.mark.parametrize(
    ("strategy", "mfu", "status"),
    [("ddp", 0.9, "FAIL"), ("ddp", 0.01, "WARN"), ("ddp", 0.17, "PASS"), ("tp", 0.01, "PASS")],
)
def test_gpu_mfu_outside_the_possible_band_is_judged(
    strategy: str, mfu: float, status: str
) -> None:
    ok = _cell()
    assert ok.compute is not None
    gpu = ok.model_copy(
        update={
            "cell": ok.cell.model_copy(update={"device": "cuda", "strategy": strategy}),
            "compute": ok.compute.model_copy(update={"mfu": mfu}),
        }
    )
    assert judge.judge_cell(gpu, False, Path(".")).status.value == status


def test_a_planned_cell_the_planner_skips_is_a_fail_and_so_is_an_unplaced_strategy() -> None:
    needs = Finding(code="plan.needs_gpus", figures={"gpus": 8, "have": 4})
    skipped = _cell().model_copy(update={"status": Status.SKIPPED, "error": CellError(why=needs)})
    verdict = judge.judge_cell(skipped, False, Path("."))
    assert verdict.status is CheckStatus.FAIL and "needs 8 GPUs" in shown.detail(verdict)
    [unplaced] = judge.judge_unplaced({"tp": "heads not divisible"})
    assert unplaced.status is CheckStatus.FAIL and "heads not divisible" in shown.detail(unplaced)


def test_recovery_after_the_oom_is_judged_on_cells_that_ran() -> None:
    from torchscale.interfaces.api.workload import _recovered

    ok = _cell()
    skipped = ok.model_copy(update={"status": Status.SKIPPED})
    failed = ok.model_copy(update={"status": Status.FAILED})
    oom = ok.model_copy(update={"status": Status.OOM})
    assert _recovered([skipped, ok]) is True
    assert _recovered([ok, oom]) is False
    assert _recovered([failed, skipped]) is None  # their own failures: judged in their rows
    assert _recovered([]) is None


def test_the_oom_step_needs_the_oom_status_and_recovery() -> None:
    ok = _cell()
    out = CellError(why=Finding(code="failure.oom"), root_cause_rank=0)
    oom = ok.model_copy(update={"status": Status.OOM, "error": out})
    assert judge.judge_oom(oom, None, True).status is CheckStatus.PASS
    assert judge.judge_oom(oom, None, False).status is CheckStatus.FAIL
    ran = judge.judge_oom(ok, None, True)
    assert ran.status is CheckStatus.FAIL and "ended ok" in shown.detail(ran)
    killed = CellError(why=Finding(code="failure.killed", figures={"signum": 9}))
    crashed = ok.model_copy(update={"status": Status.FAILED, "error": killed})
    assert judge.judge_oom(crashed, None, True).status is CheckStatus.FAIL
    unknown = judge.said("oom_memory_unknown", why="NVML failed")
    assert judge.judge_oom(None, unknown, None).status is CheckStatus.SKIP


def _profiled() -> ProfiledCell:
    [directory] = list(PROFILED.iterdir())
    read = read_cell(directory / "result.json")
    assert read.doc is not None
    analysis = ProfileAnalysis.model_validate_json((directory / "analysis.json").read_text())
    return ProfiledCell(directory, read.doc, analysis)


def test_a_real_profile_passes_and_one_without_collectives_or_kernels_fails() -> None:
    profiled = _profiled()
    assert judge.judge_profile("torch", profiled).status is CheckStatus.PASS
    assert profiled.analysis is not None
    no_match = ProfiledCell(
        profiled.directory,
        profiled.result,
        profiled.analysis.model_copy(update={"matched_collectives": 0}),
    )
    verdict = judge.judge_profile("torch", no_match)
    assert verdict.status is CheckStatus.FAIL and "no collective" in shown.detail(verdict)
    on_gpu = ProfiledCell(
        profiled.directory,
        profiled.result.model_copy(
            update={"cell": profiled.result.cell.model_copy(update={"device": "cuda"})}
        ),
        profiled.analysis,
    )
    verdict = judge.judge_profile("nsys", on_gpu)
    assert verdict.status is CheckStatus.FAIL and "no GPU kernels" in shown.detail(verdict)
    none = ProfiledCell(profiled.directory, profiled.result, None, "no traces to analyse")
    assert "no traces" in shown.detail(judge.judge_profile("nsys", none))


def test_the_summary_puts_failures_first() -> None:
    plan = plan_workload(NodeFacts("cpu", 2, 24 * GIB, overcommit_mode=0))
    checks = [
        judge.judge_report([Path(__file__)]),
        judge.judge_oom(_cell(), None, True),
    ]
    report = ValidateReport(
        torchscale_version="0",
        created_at="now",
        hostname="node|1",
        device="cpu",
        quick=False,
        ok=False,
        counts={},
        verdict_basis=judge.workload_verdict("cpu", 2, checks),
        checks=checks,
        level="workload",
    )
    text = summary_markdown(report, plan)
    rows = [
        line for line in text.splitlines() if line.startswith("| FAIL") or line.startswith("| PASS")
    ]
    assert rows == [
        "| FAIL | deliberate out-of-memory | a batch that cannot fit ended ok: it ran | the "
        "out-of-memory classification missed it: please report it with oom/ |",
        "| PASS | report | written: test_workload_level.py |  |",
    ]  # the words each step stored before, made from its codes
    assert "**The CPU (gloo) training stack is NOT proven on this node: deliberate " in text
    assert "node|1" in text  # the title is prose, not a table cell


# -- the first H100 run's cells (one GPU, 2 repeats: tests/fixtures/h100_first_run) ---------------


def _h100(folder: str) -> list[CellResult]:
    return read_cells(WORKLOAD / "runs" / folder)


def test_h100_compiled_against_eager_is_judged_by_the_reports_estimator_not_called_noise() -> None:
    """2 repeats a side: the ratio of medians with Welch's t on the log ratio (the report's own
    figure, `analysis.compile_gain`) calls compiled faster beyond noise, by a gain its interval
    (1.51x [1.14, 1.99]) is too wide to size; FSDP at world 1 is not compared at all."""
    eager, compiled = _h100("eager"), _h100("compiled")
    verdict = judge.judge_compile(eager, compiled)
    assert verdict.status is CheckStatus.INFO
    assert shown.detail(verdict).startswith(
        "ddp: compiled faster beyond noise, by a ratio not measurable (2 + 2 repeats)"
    )
    ddp = verdict.data["ddp"]["figures"]
    assert 1.0 < ddp["low"] < ddp["ratio"] < ddp["high"]
    assert ddp["high"] - ddp["low"] > ddp["ratio"] - 1.0
    assert "fsdp: FSDP on one device shards nothing" in shown.detail(verdict)
    assert "within noise" not in shown.detail(verdict)
    assert "Welch's t on the log ratio" in verdict.data["method"]


def test_h100_fsdp_at_world_1_is_machinery_only_and_ddp_says_it_has_no_wrapper() -> None:
    for results, compiled in ((_h100("eager"), False), (_h100("compiled"), True)):
        by = {r.cell.strategy: judge.judge_cell(r, compiled, WORKLOAD) for r in results}
        assert by["fsdp"].status is CheckStatus.PASS
        assert "FSDP on one device shards nothing" in shown.detail(by["fsdp"])
        assert "never ranked or compared" in shown.detail(by["fsdp"])
        assert shown.detail(by["fsdp"]).endswith("MFU not judged")
        assert "MFU 1" not in shown.detail(by["fsdp"])  # its 10 % is no figure to read
        assert "no wrapper at world 1" in shown.detail(by["ddp"])
        assert "MFU 24 %" in shown.detail(by["ddp"]) or "MFU 35 %" in shown.detail(by["ddp"])


def test_h100_verdict_names_what_one_gpu_did_not_exercise() -> None:
    eager, compiled = _h100("eager"), _h100("compiled")
    checks = [judge.judge_cell(r, False, WORKLOAD) for r in eager]
    checks.append(judge.judge_compile(eager, compiled))
    verdict = say(judge.workload_verdict("cuda", 1, checks))
    assert "works end to end on one GPU" in verdict
    assert "the DDP wrapper, sharding" in verdict and "NCCL moved nothing" in verdict
    assert "GPU (NCCL) training stack works" not in verdict
    two = say(judge.workload_verdict("cuda", 2, checks))
    assert two.startswith("The GPU (NCCL) training stack works end to end") and "one GPU" not in two


def test_one_cpu_rank_is_one_rank() -> None:
    verdict = say(judge.workload_verdict("cpu", 1, []))
    assert verdict == "The CPU (gloo) training stack works end to end on this node (1 rank)."
    assert "(2 ranks)" in say(judge.workload_verdict("cpu", 2, []))


def test_mfu_reference_is_todays_measurement() -> None:
    assert "24 % eager, 35 % compiled" in judge.MFU_SOURCE
    assert "16-17" not in judge.MFU_SOURCE


def test_h100_max_batch_says_the_limit_and_the_memory_share_at_it() -> None:
    from torchscale.contracts.schema.max_batch import MaxBatchResult

    [path] = (WORKLOAD / "memory" / "fit" / "max_batch").glob("*.json")
    result = MaxBatchResult.model_validate_json(path.read_text())
    verdict = judge.judge_max_batch([result], None)
    assert shown.detail(verdict).startswith("fits 32 (the limit tried")
    assert "at 25 % of memory" in shown.detail(verdict)
    assert "estimate ~130" in shown.detail(verdict)  # 11.5 GB at 16, 21.3 GB at 32, 85.5 GB in all
    assert "fits up to the limit tried" not in shown.detail(verdict)


def _repeats(result: CellResult, *figures: float) -> CellResult:
    assert result.throughput is not None
    throughput = result.throughput.model_copy(update={"repeats": list(figures)})
    return result.model_copy(update={"throughput": throughput})


def test_compile_is_judged_faster_slower_or_within_the_repeats_spread() -> None:
    ok = _cell()
    eager = _repeats(ok, 100.0, 101.0, 99.0, 100.5)
    faster = judge.judge_compile([eager], [_repeats(ok, 150.0, 151.0, 149.0, 150.5)])
    assert faster.status is CheckStatus.INFO and "compiled faster (4 + 4" in shown.detail(faster)
    assert "compiled/eager 1.50x [" in shown.detail(faster)
    same = judge.judge_compile([eager], [_repeats(ok, 95.0, 110.0, 98.0, 104.0)])
    assert same.status is CheckStatus.INFO and "not measurable (4 + 4 repeats)" in shown.detail(
        same
    )
    slower = judge.judge_compile([eager], [_repeats(ok, 70.0, 71.0, 69.0, 70.5)])
    assert slower.status is CheckStatus.WARN and "compiled slower" in shown.detail(slower)
    once = judge.judge_compile([eager], [_repeats(ok, 150.0)])
    assert once.status is CheckStatus.INFO and "no interval: one figure on a side" in shown.detail(
        once
    )


# -- the whole level on CPU ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_workload_level_runs_every_path_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "results"
    run = CliRunner().invoke(
        app, ["validate", "--level", "workload", "--device", "cpu", "-o", str(out), "--json"]
    )
    leftovers = processes_mentioning(str(out))
    assert run.exit_code == 0, run.output
    assert not leftovers
    report = ValidateReport.model_validate_json(run.stdout)
    assert report.level == "workload" and report.ok and report.folder is not None
    statuses = {c.id: c.status for c in report.checks}
    steps = ["max_batch", "comm", "profile.torch", "report"]
    if read_node("cpu").overcommit_mode == 1:  # no allocator error to provoke: said, skipped
        assert statuses["oom"] is CheckStatus.SKIP
    else:
        steps.append("oom")
    for step in steps:
        assert statuses[step] is CheckStatus.PASS, [c for c in report.checks if c.id == step]
    for strategy in ("ddp", "fsdp", "tp", "pp"):
        assert statuses[f"cell.{strategy}.eager"] is CheckStatus.PASS
    assert statuses["cell.ddp.compiled"] is CheckStatus.PASS
    assert statuses["profile.nsys"] is CheckStatus.SKIP
    folder = Path(report.folder)
    for name in ("summary.md", "validate.json", "report.md", "report.html"):
        assert (folder / name).is_file(), name
    assert json.loads((folder / "validate.json").read_text())["level"] == "workload"
    assert len(list(folder.glob("runs/*/cells/*.json"))) == 5  # 4 eager, 1 compiled
    assert len(list(folder.glob("memory/*/cells/*.json"))) == 2  # fit, oom
    assert list(folder.glob("runs/profile-torch/profile/*/rank*.trace.json.gz"))  # short traces
    assert not list(folder.glob("*/*/compile_cache"))  # rebuildable: not in the attachment
    report_md = (folder / "report.md").read_text()
    assert "out of memory" not in report_md  # the failure on purpose is not one to fix


# -- faults of the level itself ---------------------------------------------------------------


def _fault_everywhere(
    monkeypatch: pytest.MonkeyPatch, sweep_fault: dict[str, BaseException]
) -> None:
    """Every step's entry point replaced: a sweep raises its experiment's fault, the profile
    and the report refuse."""
    from torchscale.contracts.errors import ResultsError, ToolNotFoundError
    from torchscale.interfaces.api import benchmark, profile, report

    def run_benchmark(config: object, *args: object, **kwargs: object) -> None:
        raise sweep_fault.get(config.experiment_name, ToolNotFoundError("no C compiler"))  # type: ignore[attr-defined]

    def refuse(error: Exception) -> object:
        def call(*args: object, **kwargs: object) -> None:
            raise error

        return call

    monkeypatch.setattr(benchmark, "run_benchmark", run_benchmark)
    monkeypatch.setattr(profile, "run_profile", refuse(ToolNotFoundError("no profiler")))
    monkeypatch.setattr(report, "build_report", refuse(ResultsError("no results to report")))


CPU_NODE = NodeFacts("cpu", 2, 24 * GIB, overcommit_mode=0)


def test_a_step_that_crashes_or_refuses_is_its_fail_and_the_next_steps_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from torchscale.interfaces.api.workload import run_workload

    _fault_everywhere(monkeypatch, {"eager": RuntimeError("boom")})
    run = run_workload("cpu", tmp_path, node=CPU_NODE)
    assert run.exit_code == 1
    by_id = {c.id: c for c in run.report.checks}
    assert by_id["eager.run"].status is CheckStatus.FAIL
    assert "the step crashed: RuntimeError: boom" in shown.detail(by_id["eager.run"])
    assert "torchscale bug" in shown.hint(by_id["eager.run"])
    assert "RuntimeError: boom" in by_id["eager.run"].data["traceback"]
    assert shown.detail(by_id["compiled.run"]) == "no C compiler"  # a refusal: its own line
    assert "no profiler" in shown.detail(by_id["profile.torch"])
    assert "no results" in shown.detail(by_id["report"])
    assert by_id["oom"].status is CheckStatus.FAIL  # the OOM cell left nothing: not a pass
    summary = (run.folder / "summary.md").read_text()
    assert "NOT proven" in summary and "| FAIL | eager cells |" in summary
    assert "**The CPU (gloo) training stack is NOT proven on this node: eager cells, " in summary


def test_the_stored_report_holds_codes_not_sentences(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """validate.json of the workload level: every step's verdict, its fix and the level's
    conclusion are codes and figures (worded when shown): no field holds their words."""
    from torchscale.interfaces.api.workload import run_workload

    _fault_everywhere(monkeypatch, {"eager": RuntimeError("boom")})
    run = run_workload("cpu", tmp_path, node=CPU_NODE)
    stored = json.loads((run.folder / "validate.json").read_text())
    assert "verdict" not in stored and stored["verdict_basis"]["code"] == "workload.not_proven"
    assert len(stored["checks"]) > 5
    for check in stored["checks"]:
        assert not {"said", "said_fix"} & set(check), check
        assert check["findings"], check
        assert check["status"] == "PASS" or check["fix"] or check["status"] == "SKIP", check


def test_ctrl_c_keeps_what_ran_writes_where_it_stopped_and_stops(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from torchscale.interfaces.api.workload import run_workload

    _fault_everywhere(monkeypatch, {"fit": KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        run_workload("cpu", tmp_path, node=CPU_NODE)
    [folder] = list((tmp_path / "standalone").glob("workload-*"))
    summary = (folder / "summary.md").read_text()
    assert "stopped by Ctrl-C during max-batch search" in summary
    assert ValidateReport.model_validate_json((folder / "validate.json").read_text()).ok is False
