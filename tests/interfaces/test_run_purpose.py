"""What a run can be used for comes first: a report's first line says so by
the kind of run (docs/reporting.md, "What a run is for"): CPU ranks or a GPU waiting for the
host hold no GPU figure, the workload level's cells prove a path, one world size measures no
scaling; a steady cell on a busy machine is never 'reliable'. From kept results only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.h100_replay import DEFAULT_SWEEP, WORKLOAD
from torchscale.interfaces.report.parts.context import make_context
from torchscale.interfaces.report.parts.headline import verdict
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sections import summary
from torchscale.interfaces.report.sources import read_sources
from torchscale.results import load

FIXTURES = Path(__file__).parents[1] / "fixtures"
SWEEP8 = FIXTURES / "cpu_default_sweep"
H100_DEFAULT = FIXTURES / "h100_second_run" / "default-sweep"
H100_STOPPED = DEFAULT_SWEEP
H100_WORKLOAD = WORKLOAD / "runs"
STEADY = "tiny-gpt2__b32__w1__fp32__ddp__96a787a3"  # sweep8's reliable cell at world 1


def _headline(source: Path) -> str:
    text, _ = verdict(make_context(read_sources(source), ReportOptions(), None))
    assert text is not None
    return text.text


def test_a_cpu_sweep_says_first_it_holds_no_gpu_figure() -> None:
    """sweep8 ran on 2 CPU ranks: it opened 'These numbers can be used with care'."""
    assert _headline(SWEEP8).startswith("No accelerator figure here: CPU ranks measure Python")


def test_a_host_bound_gpu_sweep_on_one_gpu_says_it_first() -> None:
    """The H100 default sweep of tiny models (MFU 0.00244 %, the GPU waiting for the host in
    every cell, its world-2 cells skipped on a 1-GPU node) opened with the sweep's state and
    'These numbers can be used with care'. No GPU figure is no GPU scaling either: the node's
    one GPU is left unsaid."""
    text = _headline(H100_STOPPED)
    assert text.startswith(
        "No GPU figure: the GPU waited for the host throughout. Sweep stopped by SIGTERM"
    )
    assert "Scaling not measured" not in text


def test_a_gpu_sweep_at_one_world_size_says_scaling_was_not_measured() -> None:
    assert _headline(H100_DEFAULT).startswith("Scaling not measured: this node has 1 GPU. ")


def test_the_workload_level_is_a_path_check_not_a_measurement() -> None:
    """Its configs say 'a proof that the path works, not a figure'. The report read 'use no
    figure of theirs for a decision' and then 'These numbers can be used with care', named a
    best, made an MFU call and advised more repeats. Now: how many cells ran, no usability of
    its figures, no call, no best, and a measurement as its next step."""
    context = make_context(read_sources(H100_WORKLOAD), ReportOptions())
    headline, decision = verdict(context)
    assert headline is not None and decision is not None
    assert headline.text == (
        "A path check, not a measurement: these cells prove the code path runs (validate "
        "--level workload); no figure of theirs is judged. 4 of 4 cells ran ok."
    )
    assert headline.severity == "good"
    assert "with care" not in headline.text and decision.calls == [] and decision.best is None
    (action,) = decision.actions
    assert action.text.startswith("Measure the workload: `torchscale benchmark` (on a GPU node")


def test_a_path_check_kept_without_its_config_is_known_by_its_records(tmp_path: Path) -> None:
    """The same kind of run kept without its config.yaml: today's workload level marks each
    cell's own record (`warning.path_check`, from its plan), so it still reads as a path check;
    the kept H100 run itself predates the mark and, without its config, reads as a sweep."""
    from torchscale.contracts.run_kinds import PATH_CHECK_MARK

    bare = tmp_path / "runs"
    shutil.copytree(H100_WORKLOAD, bare)
    for config in bare.rglob("config.yaml"):
        config.unlink()
    assert not _headline(bare).startswith("A path check")  # recorded before the mark
    for path in bare.rglob("cells/*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["warnings"].append({"kind": "other", "finding": {"code": PATH_CHECK_MARK}})
        path.write_text(json.dumps(data), encoding="utf-8")
    assert _headline(bare).startswith("A path check, not a measurement")


def test_the_workload_levels_plan_marks_every_cell() -> None:
    """Every cell the workload level plans carries the mark in its warnings, which the worker
    writes into the cell's result."""
    from torchscale.contracts.run_kinds import PATH_CHECK_DESCRIPTION, PATH_CHECK_MARK
    from torchscale.orchestration.config.loader import parse_config
    from torchscale.orchestration.plan.build import build_plan
    from torchscale.orchestration.schedulers.local.launcher import machine_here

    text = f"experiment_name: wl\ndescription: '{PATH_CHECK_DESCRIPTION}'\nmodels: [tiny-mlp]\n"
    text += "batch_sizes: [8]\ngpu_counts: [1]\ndevice: cpu\n"
    plan = build_plan(parse_config(text), machine_here())
    assert plan.cells and all(
        any(w.finding.code == PATH_CHECK_MARK for w in cell.cell_warnings) for cell in plan.cells
    )
    other_text = "experiment_name: x\nmodels: [tiny-mlp]\nbatch_sizes: [8]\ngpu_counts: [1]\n"
    other = build_plan(parse_config(other_text + "device: cpu\n"), machine_here())
    assert not any(w.finding.code == PATH_CHECK_MARK for c in other.cells for w in c.cell_warnings)


def test_the_rule_is_one_pure_table() -> None:
    from torchscale.offline.analysis.run_purpose import run_purpose

    cells = pd.DataFrame(
        [
            {"status": "ok", "samples_per_s": 10.0, "device": "cuda", "world_size": 1},
            {"status": "ok", "samples_per_s": 19.0, "device": "cuda", "world_size": 2},
        ]
    )
    assert run_purpose(cells, node_gpus=2) == []  # a measurement: judged by its noise alone
    codes = [f.code for f in run_purpose(cells, path_check=True)]
    assert codes == ["purpose.path_check"]
    bound = cells.assign(host_bound=True)
    assert [f.code for f in run_purpose(bound)] == ["purpose.no_gpu_figure"]


@pytest.fixture
def busy_steady(tmp_path: Path) -> Path:
    """sweep8 with its steady world-1 tiny-gpt2 cell's host set busy (other processes on 1.7
    of its 2 cores), as a contended machine's telemetry records it."""
    root = tmp_path / "sweep8"
    shutil.copytree(SWEEP8, root)
    path = root / "default_scaling" / "cells" / f"{STEADY}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for host in data["telemetry"]["hosts"]:
        host.update(busy=True, other_cores=1.7, busy_cores=1.7 + host["cell_cores"])
    path.write_text(json.dumps(data), encoding="utf-8")
    return root


def test_a_steady_cell_on_a_busy_machine_is_never_reliable(busy_steady: Path) -> None:
    """It was rated 'reliable' in the tables and counted among the reliable cells while the
    headline listed it among the busy ones."""
    cells = load(busy_steady / "default_scaling").cells.set_index("cell_id")
    assert cells.loc[STEADY, "busy_machine"]
    assert cells.loc[STEADY, "reliability"] == "busy_machine"
    assert "ran on a busy machine" in cells.loc[STEADY, "reliability_reason"]
    ctx = make_context(read_sources(busy_steady), ReportOptions(), None)
    said = " ".join(t.text for t in summary.build(ctx).blocks if hasattr(t, "text"))
    assert "1 of 8 cells reliable" in said and "1 busy machine" in said
    # and the table of cells not measured reliably says why
    from torchscale.interfaces.report.build import build_report
    from torchscale.interfaces.report.model import Table

    report = build_report(read_sources(busy_steady), ReportOptions())
    section = report.section("latency")
    assert section is not None
    (why,) = [b for b in section.blocks if isinstance(b, Table) and b.id == "latency-reliability"]
    row = next(r for r in why.rows if r["reliability"] == "busy machine")
    assert row["cell"].startswith("tiny-gpt2 b32 x1") and row["_severity"] == "warn"


V10_BUSY = FIXTURES / "cpu_busy_sweep" / "busy"


def test_the_live_table_and_the_report_withhold_the_same_figures() -> None:
    """One rule for 'not measurable': the live table said it where the report's tables printed
    the figure with its interval ('11,800 [6,100, 22,700]')."""
    from torchscale.interfaces.console.live_table import throughput_text as live
    from torchscale.interfaces.report.parts.context import throughput_text as reported

    for source in (V10_BUSY / "default_scaling", SWEEP8 / "default_scaling", H100_DEFAULT):
        for _, row in load(source).cells.iterrows():
            said_live = live(row).startswith("not measurable")
            assert said_live == str(reported(row)).startswith("not measurable"), row["cell_id"]
    rows = load(V10_BUSY / "default_scaling").cells
    assert all(str(reported(r)).startswith("not measurable") for _, r in rows.iterrows())


def test_a_card_under_cannot_be_used_shows_no_figure(tmp_path: Path) -> None:
    """Under '✖ cannot be used' (benchmarks/report_scale.py's noisy cells) the cards printed
    '661,000' and '63.33 %', greyed with no why."""
    from tests.scale_sample import report_scale
    from torchscale.interfaces.report.model import KeyFigures
    from torchscale.interfaces.report.parts.usability import judge

    experiment = report_scale().write_results(tmp_path, 40)
    ctx = make_context(read_sources(experiment), ReportOptions(), None)
    ctx.usability = judge(ctx)
    assert ctx.usability.usable == "no"
    figures = [
        f
        for b in summary.build(ctx).blocks
        if isinstance(b, KeyFigures)
        for f in b.figures
        if f.label.startswith(summary.MODEL_FIGURES)
    ]
    assert figures
    for figure in figures:  # no figure: none at all, or the words that say why
        assert not isinstance(figure.value, (int, float)), figure


H200_PROFILE = FIXTURES / "h200_gpt2_profile"
V2 = FIXTURES / "cpu_ddp_fsdp" / "v2_fixture"


@pytest.fixture
def h200_profile(tmp_path: Path) -> Path:
    """The kept H200 profile, as `torchscale profile -o DIR` leaves it under an experiment."""
    root = tmp_path / "h200"
    for run in H200_PROFILE.iterdir():
        if run.is_dir():
            shutil.copytree(run, root / "profile" / run.name)
    return root


def test_a_profile_report_carries_its_runs_throughput_mfu_and_memory(h200_profile: Path) -> None:
    """Its result holds 466 samples/s, MFU 41.3 % and the allocator's peaks; the report showed
    none of them."""
    ctx = make_context(read_sources(h200_profile), ReportOptions(), None)
    _, decision = verdict(ctx)
    assert decision is not None
    said = " ".join(t.text for t in decision.models)
    assert "measured 466 samples/s (one window), MFU 41.3 % of 989 TFLOP/s" in said
    assert "9.32 GiB peak allocated and 10 GiB peak reserved per rank" in said


def test_each_peak_memory_has_one_name_in_a_report(tmp_path: Path) -> None:
    """'Peak memory per rank' on the first screen was the reserved peak; 'Peak memory (largest
    rank)' in the strategies table the allocated one (or a CPU rank's RSS)."""
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app

    texts = []
    for source in (H100_DEFAULT, V2):
        out = tmp_path / f"{source.name}.md"
        args = ["report", "-s", str(source), "-f", "md", "--full", "-o", str(out)]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
        assert result.exit_code == 0, result.output
        texts.append(out.read_text(encoding="utf-8"))
    h100, v2 = texts
    assert "peak memory" not in h100.lower() and "peak memory" not in v2.lower()
    assert "9.99 GiB peak reserved per rank" in h100 and "Peak reserved per rank" in h100
    assert "Peak RSS (largest rank)" in v2


def test_benchmarks_end_answer_opens_with_what_the_run_is_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The lines after a sweep said where the results are and how long it took, never that a
    CPU sweep holds no accelerator figure. A finished run's table, as `benchmark` holds it."""
    from types import SimpleNamespace

    from torchscale.interfaces.console import benchmark

    experiment = SWEEP8 / "default_scaling"
    config = yaml.safe_load((experiment / "config.yaml").read_text(encoding="utf-8"))
    run = SimpleNamespace(
        sweep=SimpleNamespace(
            table=load(experiment).cells, results=[], failures=[], stopped_early=False
        ),
        plan=SimpleNamespace(description=config.get("description", "")),
        store=SimpleNamespace(root=experiment),
        nothing_measured=None,
    )
    benchmark._sweep_summary(run)  # type: ignore[arg-type]
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("No accelerator figure here: CPU ranks measure Python")
