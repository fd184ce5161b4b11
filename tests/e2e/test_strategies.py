"""tp, pp and hybrid in the plan and end to end: which layouts a strategy gives, why a layout is
skipped before launch, and a real sweep over every strategy of a small GPT-2 on CPU ranks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine

runner = CliRunner()
CPU2 = Machine(gpu_count=0, cpu_cores=2)


def config(**training: Any) -> BenchConfig:
    return BenchConfig.model_validate(
        {
            "experiment_name": "st",
            "models": ["tiny-gpt2"],
            "batch_sizes": [8],
            "gpu_counts": [1, 2, 4],
            "device": "cpu",
            "training": training,
        }
    )


def cells(cfg: BenchConfig) -> dict[str, str | None]:
    """cell id without its hash -> skip reason."""
    return {p.cell.id.rsplit("__", 1)[0]: p.skip_reason for p in build_plan(cfg, CPU2)}


def test_ddp_and_fsdp_cells_keep_their_ids_when_parallel_settings_are_added() -> None:
    before = [p.cell.id for p in build_plan(config(strategy=["ddp", "fsdp"]), CPU2)]
    after = build_plan(
        config(strategy=["ddp", "fsdp"], parallel={"tp": [2], "microbatches": [2, 4]}), CPU2
    )
    assert [p.cell.id for p in after] == before  # --resume of earlier sweeps still matches
    assert all(p.cell.parallel is None for p in after)


def test_each_strategy_expands_to_its_layouts_with_reasons() -> None:
    plan = cells(
        config(
            strategy=["tp", "pp", "hybrid"],
            parallel={"schedule": ["gpipe", "interleaved_1f1b"], "hybrid": ["fsdp_tp", "ddp_pp"]},
        )
    )
    assert plan["tiny-gpt2__b8__w2__fp32__tp2"] is None
    assert "whole world" in (plan["tiny-gpt2__b8__w1__fp32__tp1"] or "")
    assert plan["tiny-gpt2__b8__w2__fp32__pp2-gpipe-m4"] is None
    # tiny-gpt2 has 2 blocks: 2 ranks x 2 virtual stages do not fit
    assert "fewer than the 4 stage modules" in (plan["tiny-gpt2__b8__w2__fp32__pp2-i1f1b-m4"] or "")
    assert plan["tiny-gpt2__b8__w4__fp32__fsdp2xtp2"] is None
    assert plan["tiny-gpt2__b8__w4__fp32__ddp2xpp2-gpipe-m4"] is None
    assert "not divisible by the mesh" in (plan["tiny-gpt2__b8__w1__fp32__fsdp1xtp2"] or "")


@pytest.mark.parametrize(
    ("training", "cell", "reason"),
    [
        ({"strategy": "tp", "parallel": {"tp": [2]}}, "w4__fp32__tp2", "parallel.tp 2 != world"),
        ({"strategy": "pp", "parallel": {"microbatches": [3]}}, "w2__fp32__pp2-1f1b-m3", "divide"),
        ({"strategy": "pp", "parallel": {"microbatches": [1]}}, "w2__fp32__pp2-1f1b-m1", "1f1b"),
        ({"strategy": "pp", "compile": True}, "w2__fp32__pp2-1f1b-m4", "training.compile"),
        ({"strategy": "pp", "grad_accum_steps": 2}, "w2__fp32__pp2-1f1b-m4", "accumulation"),
        ({"strategy": "tp", "precision": "amp"}, "w2__amp__tp2", "fp16 needs GradScaler"),
    ],
)
def test_infeasible_layouts_are_skipped_before_launch(
    training: dict[str, Any], cell: str, reason: str
) -> None:
    skip = cells(config(**training))[f"tiny-gpt2__b8__{cell}"]
    assert skip is not None and reason in skip, skip


def test_heads_not_divisible_by_tp_are_skipped() -> None:
    cfg = config(strategy="tp")
    cfg = cfg.model_copy(update={"gpu_counts": [4]})
    plan = build_plan(cfg.model_copy(update={"models": cfg.models}), Machine(0, 4))
    tiny_heads = plan[0]
    # tiny-gpt2 has 4 heads: tp 4 divides them; 3 ranks would not
    assert tiny_heads.skip_reason is None
    odd = BenchConfig.model_validate(
        {**cfg.model_dump(mode="json"), "gpu_counts": [3], "training": {"strategy": "tp"}}
    )
    (cell,) = build_plan(odd, Machine(0, 4))
    assert cell.skip_reason is not None and "heads" in cell.skip_reason


def test_a_plugin_without_a_plan_is_skipped_with_the_reason() -> None:
    cfg = BenchConfig.model_validate(
        {
            "experiment_name": "st",
            "models": ["tests.plugin_models:factory"],
            "batch_sizes": [8],
            "gpu_counts": [2],
            "device": "cpu",
            "training": {"strategy": ["tp", "pp"]},
        }
    )
    reasons = [p.skip_reason or "" for p in build_plan(cfg, CPU2)]
    assert any("declares no tp_plan" in r for r in reasons), reasons
    assert any("declares no pp_split" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("training", "message"),
    [
        ({"strategy": "tensor"}, "strategy"),
        ({"parallel": {"schedule": "zero_bubble"}}, "schedule"),
        ({"parallel": {"tp": 0}}, "tp"),
        ({"parallel": {"hybrid": "fsdp_pp"}}, "hybrid"),
    ],
)
def test_bad_parallel_settings_are_one_line_config_errors(
    tmp_path: Path, training: dict[str, Any], message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "experiment_name: bad\nmodels: [tiny-gpt2]\nbatch_sizes: [8]\ngpu_counts: [2]\n"
        f"device: cpu\ntraining: {json.dumps(training)}\n"
    )
    result = runner.invoke(app, ["config", "validate", str(path)])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


SWEEP = """experiment_name: strategies
models:
  - name: tiny-gpt2
batch_sizes: [8]
gpu_counts: [2]
device: cpu
training:
  strategy: [ddp, fsdp, tp, pp, hybrid]
  parallel: {schedule: [gpipe], hybrid: [fsdp_tp, ddp_pp]}
measurement:
  warmup_steps: 1
  steps: 3
  repeats: 1
  telemetry: {enabled: false}
"""


@pytest.mark.slow  # about 70 s on 2 cores; each strategy also runs for real in test_parallel_*
def test_a_sweep_over_every_strategy_runs_and_carries_the_strategy_metrics(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    result = runner.invoke(app, ["benchmark", "-c", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    results = {
        r["cell"]["id"].split("__")[4]: r
        for r in (json.loads(p.read_text()) for p in (tmp_path / "strategies" / "cells").glob("*"))
    }
    assert sorted(results) == [
        "ddp",
        "ddp1xpp2-gpipe-m4",
        "fsdp",
        "fsdp1xtp2",
        "pp2-gpipe-m4",
        "tp2",
    ]
    assert all(r["status"] == "ok" for r in results.values())
    ddp, tp, pp = results["ddp"], results["tp2"], results["pp2-gpipe-m4"]
    # two data-parallel ranks read two batches; a TP group or a pipeline reads one
    assert ddp["global_batch"] == 16 and tp["global_batch"] == 8 and pp["global_batch"] == 8
    # FLOPs once per replica: a TP or pipeline rank does half of one replica's step
    assert tp["compute"]["flops_per_step"] * 2 == pytest.approx(ddp["compute"]["flops_per_step"])
    assert pp["compute"]["flops_per_step"] * 2 == pytest.approx(ddp["compute"]["flops_per_step"])
    assert tp["cell"]["parallel"]["tp"] == 2 and tp["parallel"]["mesh_dim_names"] == ["tp"]
    assert "tp_plan" in tp["environment"]["model_parallel"]
    # the pipeline: both stages timed, the bubble measured beside the schedule's theory
    par = pp["parallel"]
    assert [s["stages"] for s in par["stages"]] == [[0], [1]]
    assert all(0 < s["busy_s"] < s["step_s"] for s in par["stages"])
    assert par["bubble_theoretical"] == pytest.approx(1 / 5)  # (p-1)/(m+p-1), p=2, m=4
    assert 0 < par["bubble_measured"] < 1
    assert "interleave" in say(Finding.model_validate(pp["unavailable"]["phases"]))
    # tensor parallelism: its collectives profiled after the windows, the exposed part split
    comm = tp["parallel"]["profiled_comm"]
    assert comm["steps"] >= 2 and comm["matched_collectives"] > 0
    assert 0 < comm["exposed"] <= comm["comm"] < 1  # a CPU rank blocks in every all-reduce
    assert comm["waiting_for_peers"] + comm["exposed_transfer"] == pytest.approx(comm["exposed"])
    assert "parallel.profiled_comm" not in tp["unavailable"]
    # hybrid fsdp_tp: its FSDP collectives matched beside the tensor-parallel ones
    assert results["fsdp1xtp2"]["parallel"]["profiled_comm"]["matched_collectives"] > 0
    assert pp["parallel"]["profiled_comm"] is None  # no tp: not probed
    hybrid = results["ddp1xpp2-gpipe-m4"]["parallel"]
    assert hybrid["mesh_dim_names"] == ["dp", "pp"] and hybrid["mesh_shape"] == [1, 2]
    # the per-rank static memory shows what sharding saves
    ddp_params = ddp["memory"]["parameter_bytes"]
    assert tp["memory"]["parameter_bytes"] < ddp_params
    assert pp["memory"]["parameter_bytes"] < ddp_params
    report = runner.invoke(
        app,
        ["report", "--source", str(tmp_path / "strategies"), "-o", str(tmp_path / "r.html")],
    )
    assert report.exit_code == 0, report.output
    # the report puts the six layouts side by side, each with its communication method
    as_json = runner.invoke(
        app,
        [
            "report",
            "--source",
            str(tmp_path / "strategies"),
            "-f",
            "json",
            "--full",  # the strategies section is past the short report's decision
            "-o",
            str(tmp_path / "r.json"),
        ],
    )
    assert as_json.exit_code == 0, as_json.output
    sections = json.loads((tmp_path / "r.json").read_text())["sections"]
    (view,) = [s for s in sections if s["id"] == "strategies"]
    (table,) = [b for b in view["blocks"] if b.get("id") == "strategies-side-by-side"]
    rows = {row["layout"]: row for row in table["rows"]}
    assert sorted(rows) == sorted(results)
    # ddp: its diagnosis (decided by the phase timers), its shares with their intervals
    assert rows["ddp"]["method"] == "diagnosis (phase timers)" and rows["ddp"]["vs_ddp"] == 1.0
    assert "%" in rows["ddp"]["exposed"] and "%" in rows["ddp"]["waiting"]
    assert rows["tp2"]["method"] == "profiled steps"
    assert rows["tp2"]["waiting"] == comm["waiting_for_peers"]
    assert rows["pp2-gpipe-m4"]["bubble_theory"] == pytest.approx(1 / 5)
    assert rows["fsdp"]["vs_ddp"] == pytest.approx(0.5, abs=0.01)  # half the state per rank
    charts = {b["id"] for b in view["blocks"] if b["type"] == "chart"}
    assert {"strategies-throughput", "strategies-memory"} <= charts


def test_throughput_by_layout_goes_on_a_log_axis_when_it_spans_a_decade() -> None:
    """Seen in a 50-cell report: a linear axis up to ~50k samples/s with most bars squashed
    near zero. Rates spanning more than 10x are drawn on a log axis, said in the label; memory
    and shares keep their linear axis. The PDF's chart draws it (a log y axis)."""
    from torchscale.interfaces.report.render.svg_direct import chart_svg
    from torchscale.interfaces.report.sections.strategies import _chart

    rows = [
        {"group": "tiny-gpt2 x2", "layout": "ddp", "samples": 50_000.0, "static": 1e6},
        {"group": "tiny-gpt2 x2", "layout": "pp2", "samples": 900.0, "static": 5e5},
    ]
    wide = _chart("t", "Throughput by layout", "samples/s", "rate", rows, "samples")
    assert wide is not None and wide.y_log and wide.y_label == "samples/s (log scale)"
    rows[1]["samples"] = 20_000.0
    narrow = _chart("t", "Throughput by layout", "samples/s", "rate", rows, "samples")
    assert narrow is not None and not narrow.y_log and narrow.y_label == "samples/s"
    memory = _chart("m", "Static memory", "bytes per rank", "bytes", rows, "static")
    assert memory is not None and not memory.y_log
    assert "<svg" in chart_svg(wide)
