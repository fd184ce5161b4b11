"""Terminal rendering (torchscale.interfaces.console): levels come from the data, every user
string is escaped, the tables show what the flat cells table holds."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, CellResult
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.console.cells import cell_lines, reused_line, running_line
from torchscale.interfaces.console.dry_run import plan_lines
from torchscale.interfaces.console.sweep_tables import model_tables
from torchscale.offline.results.frame import cells_table
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine


def identity(**overrides: Any) -> dict[str, Any]:
    return {
        "id": "c",
        "definition_sha256": "a" * 64,
        "model": "tiny-mlp",
        "label": "tiny-mlp",
        "batch_size": 8,
        "world_size": 2,
        "precision": "fp32",
        "strategy": "ddp",
        "device": "cpu",
        "backend": "gloo",
        **overrides,
    }


def said_after_result(words: str) -> Finding:
    """A warning whose words carry `words` (a path a user chose, shown as it is)."""
    return Finding(code="warning.exit_after_result", figures={"returncode": 1, "log_dir": words})


def ok_result(warnings: list[Finding] | None = None, label: str = "tiny-mlp") -> CellResult:
    stats = {
        "count": 4,
        "mean": 0.01,
        "p50": 0.01,
        "p95": 0.02,
        "p99": 0.02,
        "min": 0.01,
        "max": 0.02,
        "std": 0.001,
        "cv": 0.1,
    }
    return CellResult.model_validate(
        {
            "cell": identity(label=label),
            "status": "ok",
            "model_kind": "other",
            "throughput": {
                "samples_per_s": 1600.0,
                "samples_per_s_per_device": 800.0,
                "tokens_per_s": None,
                "repeats": [1600.0],
                "spread": 0.0,
            },
            "step_time": stats,
            "warnings": [{"kind": "other", "finding": w.model_dump()} for w in warnings or []],
        }
    )


def render(markup: str) -> str:
    console = Console(record=True, width=200, color_system="truecolor")
    console.print(markup)
    return console.export_text()


def test_ok_cell_lines_and_levels() -> None:
    variance = Finding(code="warning.step_time_cv", figures={"cv": 0.2, "threshold": 0.1})
    lines = cell_lines(ok_result(warnings=[variance]))
    texts = [line.text for line in lines]
    assert texts[2].endswith("High variance in step time: CV 0.20 > 0.10")
    assert texts[0] == "> [INFO] Average Throughput: 1,600 samples/sec"
    assert texts[1] == "> [INFO] Iteration Latency: 10.0 ms (p95 20.0 ms)"
    # no step model in this result (and no reason given): no communication line at all,
    # never the older point figure as a headline
    assert not [t for t in texts if "communication" in t.lower()]
    assert [line.level for line in lines] == ["info", "info", "warn"]


@pytest.mark.slow  # over 2 s on 2 cores
def test_step_model_lines_come_from_the_diagnosis() -> None:
    """The Step and Straggler lines say what the diagnosis holds, in `diagnosis_text`'s words,
    and a named straggler is a warning; the cross-checks come with -v only, a disagreeing one
    as one line without it."""
    from tests.rank.test_aggregate import make_rank, run
    from torchscale.interfaces.report.diagnosis_text import straggler_text

    phases = {"data": 0.0001, "forward": 0.002, "backward": 0.003, "optimizer": 0.0009}
    result = run(
        [
            make_rank(
                0,
                [1, 1, 1],
                (0.02,) * 4,
                no_sync=(0.006,) * 4,
                phases={**phases, "grad_sync_wait": 0.011},
            ),
            make_rank(
                1,
                [1, 1, 1],
                (0.02,) * 4,
                no_sync=(0.016,) * 4,
                phases={**phases, "backward": 0.013, "grad_sync_wait": 0.001},
            ),
        ]
    )
    lines = cell_lines(result)
    step = next(line for line in lines if line.text.startswith("> [ANALYSIS] Step "))
    assert "compute 54.5 %" in step.text and "exposed comm 5.0 %" in step.text
    straggler = next(line for line in lines if "Straggler:" in line.text)
    assert straggler.level == "warn"
    assert result.diagnosis is not None
    assert straggler.text == f"> [ANALYSIS] {straggler_text(result.diagnosis.straggler, 2)}"
    assert straggler.text.startswith("> [ANALYSIS] Straggler: rank 1, compute in backward, +10 ms")
    assert not [line for line in lines if line.text.startswith("> [CHECK]")]
    notes = [line.text for line in lines if line.text.startswith("> [NOTE] cross-checks")]
    assert len(notes) == 1
    verbose = cell_lines(result, verbose=True)
    checks = [line.text for line in verbose if line.text.startswith("> [CHECK]")]
    assert len(checks) == 4
    assert any(text.startswith("> [CHECK] paired per-step test") for text in checks)
    # these synthetic windows carry no wait for a CPU: its check says so, judging nothing
    assert any(text.startswith("> [CHECK] CPU wait (host): not judged") for text in checks)
    assert any("communication cost (no_sync windows)" in text for text in checks)
    assert any(text.startswith("> [CHECK] others' wait for it: ") for text in checks)


def test_a_warning_that_says_fail_is_still_a_warning() -> None:
    """The level is the data's, not a search of the text."""
    said = said_after_result("[FAIL] looks bad but is a warning")
    (_, _, warning) = cell_lines(ok_result(warnings=[said]))
    assert "[FAIL] looks bad" in warning.text and warning.level == "warn"


def test_failed_and_skipped_lines() -> None:
    for status, level, tag in (
        (Status.FAILED, "fail", "FAIL"),
        (Status.OOM, "fail", "FAIL"),
        (Status.TIMEOUT, "fail", "FAIL"),
        (Status.SKIPPED, "skip", "SKIP"),
    ):
        result = CellResult(
            cell=identity(),
            status=status,
            error=CellError(why=Finding(code="failure.torchrun_exit", figures={"returncode": 1})),
        )
        (line,) = cell_lines(result)
        assert line.level == level
        assert line.text == f"> [{tag}] {status.value}: torchrun exited with 1"


def test_user_strings_are_escaped() -> None:
    result = ok_result(
        warnings=[said_after_result("[bold red]not markup[/]")], label="[blink]model[/]"
    )
    shown = render(cell_lines(result)[-1].markup())
    assert "[bold red]not markup[/]" in shown
    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": [{"name": "tiny-mlp", "label": "[blink]model[/]"}],
            "batch_sizes": [8],
            "gpu_counts": [2],
            "device": "cpu",
        }
    )
    planned = build_plan(config, Machine(0, 2))[0]
    assert "[blink]model[/]" in render(running_line(planned).markup())
    console = Console(record=True, width=200)
    for table in model_tables(cells_table([result]), 200).tables:
        console.print(table)
    assert "[blink]model[/]" in console.export_text()


def test_table_shows_the_cells_table_figures() -> None:
    console = Console(record=True, width=200)
    for table in model_tables(cells_table([ok_result()]), 200).tables:
        console.print(table)
    text = console.export_text()
    assert "1,600" in text and "800" in text
    assert "10.0|20.0" in text
    assert "20 %" not in text  # comm: the diagnosis' exposed transfer only, and it has none
    assert "ok" in text


def test_plan_lines_show_argv_skips_and_estimate(tmp_path: Any) -> None:
    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [1, 2],
            "device": "cuda",
        }
    )
    plan = build_plan(config, Machine(gpu_count=1, cpu_cores=2))
    lines = plan_lines(plan, ResultStore(tmp_path), {})
    texts = [line.text for line in lines]
    assert any("argv:" in t and "--nproc-per-node=1" in t for t in texts)
    skip = [line for line in lines if line.text.strip().startswith("skip:")]
    assert len(skip) == 1 and skip[0].level == "skip"
    assert "needs 2 GPUs" in skip[0].text
    assert texts[-1].startswith("1 cell(s) to run, 1 skipped; estimated >= ")


def test_benchmark_table_never_cuts_a_figure_on_a_narrow_console() -> None:
    """Seen on an H100 log (80 columns): MFU '16.6 %' printed as '16…'."""
    import io

    import pandas as pd
    from rich.console import Console

    from torchscale.interfaces.console.sweep_tables import model_tables

    row = {
        "model_label": "gpt2",
        "world_size": 1,
        "batch_size": 8,
        "precision": "fp32",
        "strategy": "ddp",
        "samples_per_s": 48.1,
        "samples_per_s_per_device": 48.1,
        "step_p50_s": 0.1662,
        "step_p95_s": 0.1664,
        "scaling_efficiency": 1.0,
        "comm_overhead": None,
        "mfu": 0.642,
        "peak_allocated_bytes": 11489 * 2**20,
        "peak_rss_bytes": None,
        "status": "ok",
    }
    console = Console(width=80, file=io.StringIO(), soft_wrap=True)
    for table in model_tables(pd.DataFrame([row]), 80).tables:
        console.print(table)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "64.2 %" in out and "166.2|166.4" in out and "…" not in out


# --- wording, and the headlines a cell's result holds ------------------------------------


def _planned(world: int, device: str) -> Any:
    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [world],
            "device": device,
        }
    )
    return build_plan(config, Machine(gpu_count=world if device == "cuda" else 0, cpu_cores=4))[0]


@pytest.mark.parametrize(
    ("world", "device", "ranks"),
    [
        (1, "cpu", "1 CPU rank"),
        (2, "cpu", "2 CPU ranks"),
        (1, "cuda", "1 GPU"),
        (2, "cuda", "2 GPUs"),
    ],
)
def test_running_line_counts_ranks_in_words_that_agree(world: int, device: str, ranks: str) -> None:
    text = running_line(_planned(world, device)).text
    assert text.startswith(f"> Running tiny-mlp on {ranks} (Batch 8, fp32, ddp)...")
    assert ("GPU" in text) == (device == "cuda")  # CPU ranks are never called GPUs


def test_a_reused_cell_is_named_by_its_label_not_its_hashed_id() -> None:
    result = ok_result()
    text = reused_line(result).text
    assert text == "> [INFO] tiny-mlp b8 x2 fp32 ddp: ok in a previous run (--resume), not rerun"
    assert result.cell.id not in text.replace("tiny-mlp b8", "")


def _with(result: CellResult, **sections: Any) -> CellResult:
    return CellResult.model_validate({**result.model_dump(), **sections})


COST = {
    "per_gpu_hour": 2.5,
    "gpu_hours_per_m_samples": 0.347,
    "cost_per_m_samples": 0.8675,
    "cost_per_m_tokens": None,
}


@pytest.mark.parametrize(("device", "hour"), [("cpu", "rank-hour"), ("cuda", "GPU-hour")])
def test_a_priced_cell_says_its_cost_per_gpu_or_rank_hour(device: str, hour: str) -> None:
    base = ok_result()
    cell = {**base.cell.model_dump(), "device": device}
    result = _with(base, cost=COST, cell=cell)
    (line,) = [line for line in cell_lines(result) if "Cost" in line.text]
    price = format_value(COST["per_gpu_hour"], "money")
    assert line.text == (
        f"> [INFO] Cost: {format_value(COST['cost_per_m_samples'], 'money')} per M samples "
        f"at {price} per {hour}"
    )
    unpriced = {**COST, "per_gpu_hour": None, "cost_per_m_samples": None}
    assert not [t for t in cell_lines(_with(result, cost=unpriced)) if "Cost" in t.text]


def test_a_cell_reading_data_says_its_wait() -> None:
    data = {
        "source": "disk",
        "wait_s": 0.0042,
        "share": 0.21,
        "wait_s_per_rank": [0.0042, 0.003],
        "num_workers": 2,
        "read_bytes_per_s": 123e6,
    }
    texts = [line.text for line in cell_lines(_with(ok_result(), data=data))]
    (line,) = [t for t in texts if t.startswith("> [INFO] Data")]
    synthetic = {**data, "source": "synthetic"}  # its wait is the Step line's 'data' part
    assert not [t for t in cell_lines(_with(ok_result(), data=synthetic)) if "Data (" in t.text]
    assert line == (
        "> [INFO] Data (disk, 2 worker(s) per rank): the slowest rank waits 4.2ms per step "
        "(21.0 % of the step), read 123 MB/s"
    )


def test_gpu_telemetry_headline_reaches_the_cell_lines() -> None:
    base = ok_result()
    telemetry = {
        "source": "nvml+psutil",
        "interval_ms": 100,
        "windows": 2,
        "ranks": [],
        "gpu_util_pct_mean": 97.2,
        "power_w_mean": 351.0,
        "temperature_c_max": 71.0,
        "sm_clock_mhz_mean": 1980.0,
        "cpu_util_pct_mean": 40.0,
        "energy_j": 1000.0,
        "samples_per_joule": 2.13,
        "tokens_per_joule": None,
        "throttled": False,
    }
    cell = {**base.cell.model_dump(), "device": "cuda", "backend": "nccl"}
    texts = [line.text for line in cell_lines(_with(base, telemetry=telemetry, cell=cell))]
    (line,) = [t for t in texts if t.startswith("> [INFO] Telemetry")]
    assert line == (
        "> [INFO] Telemetry: GPU util 97 %, 351 W, max 71 °C, SM 1,980 MHz, 2.13 samples/J"
    )


def test_a_profile_says_why_its_step_is_not_the_measured_one() -> None:
    """`profile` prints the measured steps' median on its [RUN] line ('step 62.4 ms median')
    and then the traced steps' split ('Step 137 ms: ...'): the shares are of the traced steps,
    which the profiler slows. One line of at most 80 columns says so; none where the two
    agree."""
    from pathlib import Path

    from tests.interfaces.test_report_diagnosis import busy_diagnosis
    from tests.interfaces.test_report_uncertainty import estimate
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.interfaces.console.lines import Line
    from torchscale.interfaces.console.profile import analysis_lines, run_lines

    def analysed(step_s: float) -> ProfileAnalysis:
        return ProfileAnalysis(
            torchscale_version="0",
            target="sync_stalls",
            source="d",
            tool="torch",
            world_size=2,
            ranks_analysed=2,
            backend="gloo",
            device_type="cpu",
            overlap_pct=None,
            diagnosis=busy_diagnosis(step_s=estimate(step_s, step_s * 0.95, step_s * 1.05)),
        )

    base = ok_result()
    assert base.step_time is not None
    measured = base.step_time.model_copy(update={"p50": 0.0624})
    result = base.model_copy(update={"step_time": measured})
    analysis = analysed(0.137)
    texts = [line.text for line in run_lines(result, Path("d"), analysis)]
    line = "> [RUN] traced steps ran 2.2x slower (137 ms vs 62.4 ms): shares are of 137 ms"
    assert texts[0].endswith("step 62.4 ms median") and texts[-1] == line
    assert len(line) <= 80
    steps = [t.text for t in analysis_lines(analysis) if t.text.startswith("> [ANALYSIS] Step ")]
    assert steps == [steps[0]] and steps[0].startswith("> [ANALYSIS] Step 137 ms: ")
    # a narrower terminal wraps it (rich, at COLUMNS), never wider
    console = Console(record=True, width=50, color_system=None)
    console.print(Line("info", line).markup(), soft_wrap=False)
    assert max(len(row) for row in console.export_text().splitlines()) <= 50
    # -v says it too, before the run's directory
    verbose = [t.text for t in run_lines(result, Path("d"), analysis, verbose=True)]
    assert verbose.count(line) == 1 and verbose[-1].startswith("> [RUN] traces and analysis")
    # within 10 % of each other: one step time, nothing to explain
    assert not [t for t in run_lines(result, Path("d"), analysed(0.066)) if "traced" in t.text]
    faster = [t.text for t in run_lines(result, Path("d"), analysed(0.050))]
    assert faster[-1] == (
        "> [RUN] traced steps ran 1.2x faster (50 ms vs 62.4 ms): shares are of 50 ms"
    )
