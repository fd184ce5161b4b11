"""What the second H100 run wrote at schema 16 (tests/fixtures/h100_second_run, kept in the
project, converted: a GPU is rarely lent). Only a GPU writes these: power from the energy counter
at the 700 W limit, SwPowerCap with the SM clock down to 79 % of its top, NVML averages over windows
too short to judge, the busy probe where the host waited for the GPU, and the fixed costs of a
CUDA context and an NCCL communicator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.h100_replay import read_cell
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording import say, why
from torchscale.contracts.wording.validate_measured import detail as shown_detail
from torchscale.contracts.wording.validate_measured import hint as shown_hint
from torchscale.interfaces.report.parts.findings import throttling_finding
from torchscale.orchestration.validate.workload_judge import judge_telemetry

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "h100_second_run"
WORKLOAD_CELLS = sorted((RUN / "workload" / "runs").glob("*/cells/*.json"))


def _sweep(stem: str) -> CellResult:
    (path,) = (RUN / "default-sweep" / "cells").glob(f"{stem}*.json")
    return read_cell(path)


def test_short_windows_without_a_power_figure_are_no_telemetry_warning() -> None:
    """The workload's cells run 4 x 4 steps (0.15 s windows): NVML's 1 s power average cannot
    describe them and the level must not send the user to reinstall pynvml for that."""
    cells = [read_cell(p) for p in WORKLOAD_CELLS]
    assert len(cells) == 4
    blind = [c for c in cells if c.telemetry is not None and c.telemetry.power_w_mean is None]
    assert blind, "the fixture holds cells whose windows were too short for a power figure"
    check = judge_telemetry(cells)
    assert check.status == "PASS", check
    assert "pynvml" not in shown_hint(check) and "short" in shown_detail(check)


def test_a_gpu_held_at_its_default_power_limit_is_context_not_an_action() -> None:
    """GPT-2 b16 compiled: 676 W by the counter at the 700 W default limit (97 %), SwPowerCap
    in 42 of 44 in-window samples, the SM clock at 1,823 MHz mean of 1,980. Stored at schema 16
    as throttled ("down to 1560 MHz, 79 %") and said first in the report's actions; read today
    as the GPU keeping to its limit: at its power limit, no throttling warning, no finding."""
    cell = _sweep("gpt2__b16__w1")
    telemetry = cell.telemetry
    assert telemetry is not None and telemetry.power_method == "counter"
    assert (telemetry.clock_verdict, telemetry.throttled) == ("at_power_limit", False)
    assert telemetry.throttle_reasons == []
    (rank,) = telemetry.ranks
    assert rank.clock_finding is not None and rank.clock_finding.code == "clocks.power_managed"
    words = say(rank.clock_finding)
    assert "SwPowerCap in 42 of 44" in words and "drawing 676 W, 97 % of its limit" in words
    assert not [w for w in cell.warnings if w.kind == "throttling"]
    assert throttling_finding(cell, "gpt2 b16") is None
    # the b8 cell's verdict was at its power limit already: kept as stored (the words its basis
    # was stored in have no code: not kept)
    b8 = _sweep("gpt2__b8__w1")
    assert b8.telemetry is not None and b8.telemetry.throttled is False
    assert b8.telemetry.ranks[0].clock_verdict == "at_power_limit"


def test_the_report_of_the_second_h100_sweep_gives_the_power_limit_no_action(
    tmp_path: Path,
) -> None:
    """The report's first screen and its 'What to do' list held the power limit as action 1."""
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app

    out = tmp_path / "report.md"
    args = ["report", "-s", str(RUN / "default-sweep"), "-f", "md", "-o", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "gpt2" in text
    assert "held down by the power limit" not in text and "below full clocks" not in text


@pytest.mark.parametrize("path", WORKLOAD_CELLS, ids=lambda p: p.stem)
def test_a_gpu_cell_itemises_its_fixed_costs_and_says_why_the_probe_could_not_judge(
    path: Path,
) -> None:
    cell = read_cell(path)
    assert cell.window_edge_steps == 1
    costs = cell.fixed_costs
    assert costs is not None and costs.device_init_s is not None and costs.device_init_s > 0
    assert costs.process_group_init_s is not None and costs.process_group_init_s > 0
    probe = cell.host_bound
    # GPT-2's steps fill the launch queue behind the probe's sleep: the host waited for the
    # GPU, so the busy share is not measured and no host-bound verdict is given (the probe
    # stored why in words, which no code says: not recorded)
    assert probe is not None and probe.host_bound is None and probe.gpu_busy_share is None
    assert probe.reason is not None and probe.reason.code == "host_bound.not_judged"
    said = why(probe.reason) or ""
    assert said.startswith("not recorded by the torchscale that wrote this file (its schema 16)")
    assert said.endswith("at least 1 %: not judged")
    assert cell.diagnosis is None or not any(
        f.title.startswith("host-bound") for f in cell.diagnosis.findings
    )


def test_the_sweep_says_where_its_minutes_went_and_v_itemises_each_cell() -> None:
    """The default sweep on the H100: 101 s for two cells, half of it compiling: said after the
    table; -v gives each cell's stages."""
    from torchscale.interfaces.console.cells import cell_lines, sweep_time_line

    cells = [_sweep("gpt2__b8__w1"), _sweep("gpt2__b16__w1")]
    line = sweep_time_line(cells)
    assert line is not None and line.startswith("time: 2 cell(s) in ")
    assert "compile 51.1 s" in line and "start-up" in line
    verbose = [item.text for item in cell_lines(cells[1], verbose=True)]
    (fixed,) = [t for t in verbose if t.startswith("> [INFO] Fixed costs:")]
    assert "CUDA context" in fixed and "process group" in fixed and "compile" in fixed
    assert not any(
        t.startswith("> [INFO] Fixed costs:")
        for t in (item.text for item in cell_lines(cells[1], verbose=False))
    )


def test_a_traced_split_the_noise_cannot_clear_says_so_in_its_own_line() -> None:
    """The compiled profile: 3 traced steps at 23.3 ms against 20.1 ms measured, +16 % [-3,
    +36]: not shown inflated, not shown clean either. Its split (compute 79.7 %, where the
    measured windows' timers say 99.9 %) carries that caveat in the same line."""
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.interfaces.report.diagnosis_text import split_text

    path = RUN / "workload" / "profile" / "analysis.json"
    analysis = ProfileAnalysis.model_validate_json(path.read_text(encoding="utf-8"))
    assert analysis.diagnosis is not None and analysis.diagnosis.source == "traces"
    line = split_text(analysis.diagnosis)
    assert line.startswith("Step 23.2 ms traced (+16 % [-3, +35] over the untraced step")
    assert "not measurable" in line.split(":")[0] + line.split(":")[1]
    # validate --level workload's line gives the same step with the same caveat
    from torchscale.contracts.wording.validate_workload import step_words
    from torchscale.orchestration.validate.workload_judge import profile_step

    assert step_words(profile_step(analysis)).startswith(
        "step 23.2 ms traced (+16 % over the untraced"
    )


def test_no_bottleneck_does_not_read_as_not_host_bound(tmp_path: Path) -> None:
    """Every GPT-2 cell's busy probe was not measurable: the report's 'No bottleneck' line says
    the GPU's wait for the host was not measured, rather than imply it was not there."""
    import shutil

    from torchscale.interfaces.api import build_report

    source = tmp_path / "runs"
    shutil.copytree(RUN / "workload" / "runs", source)
    out = tmp_path / "report.md"
    build_report(source, "md", output=out)
    text = " ".join(out.read_text(encoding="utf-8").split())
    assert "No bottleneck" in text
    assert "whether the GPU waits for the host was not measured in 4 GPU cell(s)" in text
