"""The decision line on the first screen (docs/reporting.md, "The decision line"): a buy-or-fix
call stored as a finding in the report's `decision.calls`, worded in every format, from kept GPU
results; none from a CPU sweep, none from numbers that cannot be used."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.h100_replay import H100_DIR
from torchscale.interfaces.console import report_summary
from torchscale.interfaces.console.report_recap import summary_lines
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.model import Report
from torchscale.interfaces.report.render import markdown
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIRST_H100_RUN = H100_DIR
GENERATED_AT = "2026-11-27T00:00:00Z"


def _report(source: Path, price: float | None = None) -> Report:
    options = ReportOptions(generated_at=GENERATED_AT, cost_per_gpu_hour=price)
    return build_report(read_sources(source), options)


def _codes(report: Report) -> list[str]:
    assert report.decision is not None
    return [call.code for call in report.decision.calls]


def test_a_cpu_sweep_gets_no_call() -> None:
    """The CPU sweep's scaling intervals are as narrow as ±3.3 %: still no call (CPU ranks say
    nothing about buying GPUs), and nothing on its first screen says buy or fix."""
    report = _report(FIXTURES / "cpu_default_sweep", price=2.5)
    assert _codes(report) == []
    assert report.decision is not None
    assert not any("buy" in line.text for line in report.decision.in_reading_order())


def test_the_h100_gpt2_step_is_set_against_the_cited_reference() -> None:
    """One H100, GPT-2 b16 at MFU 39.8 % ±3.1 %: on par with the kept reference's 40.2 % on the
    same GPU (tests/fixtures/h100_second_run/ref.out.txt); at one GPU, no buy."""
    report = _report(FIXTURES / "h100_second_run" / "default-sweep", price=2.5)
    assert _codes(report) == ["decision.step_on_par"]
    call = report.decision.calls[0] if report.decision else None
    assert call is not None and call.figures["reference_mfu"] == 0.402
    said = (
        "gpt2: the step is on par: MFU 39.8 % ±3.1 % against 40.2 %, a plain PyTorch gpt2 "
        "loop's at batch 16 on an H100 (benchmarks/workload_reference.py); measure 2 GPUs or "
        "more before buying"
    )
    assert report.decision is not None and report.decision.conclusions()[0].text == said
    # the same words in the Markdown and the terminal's short form, from the stored finding
    assert said in markdown.render(report).decode().replace("\n", " ")
    short = " ".join(" ".join(report_summary.summary(report, 200)).split())
    assert "gpt2: the step is on par: MFU 39.8 % ±3.1 %" in short
    # stored as a code with its figures, never as the sentence
    stored = report.model_dump(mode="json")["decision"]["calls"]
    assert stored[0]["code"] == "decision.step_on_par" and "text" not in stored[0]
    assert said not in str(stored)


def test_tiny_models_on_a_gpu_are_said_too_small_never_told_to_fix_the_host(
    tmp_path: Path,
) -> None:
    """The first H100 run's tiny models: the GPU waits for the host by design (they are sized
    for tests), so no call and how to measure the GPU, never "fix the host". Two models with
    the same line read as one (the stopped sweep's term page has no room for two). The same
    cells under a model that is not sized for tests are told to fix the host."""
    report = _report(FIRST_H100_RUN / "default-sweep")
    assert _codes(report) == ["decision.too_small", "decision.too_small"]
    assert report.decision is not None
    (first,) = report.decision.conclusions()
    assert first.severity == "info"
    assert first.text == (
        "tiny-gpt2 and tiny-mlp: no call: too small to load the GPU, by design; `torchscale "
        "validate --level perf` measures it"
    )
    assert not any("too small to load" in line.text for line in report.decision.by_model())
    assert "fix the host" not in markdown.render(report).decode().split("## ")[0]
    renamed = _report(_renamed(FIRST_H100_RUN / "default-sweep", tmp_path, "my-model"))
    assert _codes(renamed) == ["decision.fix_host"]
    assert renamed.decision is not None and renamed.decision.conclusions()[0].text == (
        "my-model: fix the host first: the GPU waits for Python and kernel launches "
        "(host-bound); more GPUs would wait too"
    )


def test_numbers_that_cannot_be_used_get_no_call() -> None:
    """The H200 zoo (2 repeats, throughput not measurable): no call, as its headline says these
    numbers cannot be used; and since neither model has a reference of its own on an H200, By
    model says that a rerun alone would still get no MFU call, and what would measure one."""
    report = _report(FIXTURES / "h200_zoo_compiled")
    assert report.decision is not None and report.decision.usable == "no"
    assert _codes(report) == []
    lines = [line.text for line in report.decision.by_model()]
    shown = markdown.render(report).decode().replace("\n", " ")
    for model in ("bert-large", "vit-b16"):
        said = (
            f"{model}: no MFU call: no reference for {model} (bf16, compiled) on an H200; "
            f"measure one with `python benchmarks/workload_reference.py --model {model} "
            "--batch 16 --device cuda --compile`"
        )
        assert said in lines and said in shown


def test_the_second_h100_workload_run_is_below_the_reference_by_its_gap() -> None:
    """Compiled GPT-2 b8 at MFU 36.0 % ±2.8 %, its whole interval under the reference's 40.2 %
    (one round: a band of one value): below it by the gap, with the gap's interval, on every
    surface; never "on par"."""
    report = _report(FIXTURES / "h100_second_run" / "workload" / "runs")
    assert _codes(report) == ["decision.step_below"]
    said = (
        "gpt2: the step is below the reference by 4.2 pts ±2.8 pts: MFU 36.0 % ±2.8 % against "
        "40.2 %, a plain PyTorch gpt2 loop's at batch 16 on an H100 "
        "(benchmarks/workload_reference.py)"
    )
    assert report.decision is not None and report.decision.conclusions()[0].text == said
    assert said in markdown.render(report).decode().replace("\n", " ")
    short = " ".join(" ".join(report_summary.summary(report, 200)).split())
    assert "below the reference by 4.2 pts ±2.8 pts" in short and "on par" not in short
    # and in the lines printed after a report is written, right under the headline
    assert summary_lines(report)[1:3] == [report.headline.text, said]


def _renamed(source: Path, tmp_path: Path, model: str) -> Path:
    """A copy of a kept run whose model is called `model`: the same figures, no reference."""
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    for path in copy.rglob("cells/*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["cell"]["model"] = data["cell"]["label"] = model
        path.write_text(json.dumps(data), encoding="utf-8")
    return copy


@pytest.mark.parametrize(
    "kept",
    [FIXTURES / "h100_second_run" / "default-sweep", FIXTURES / "h100_second_run" / "workload"],
    ids=["on-par", "below"],
)
def test_the_same_figures_under_a_model_without_a_reference_get_no_mfu_call(
    kept: Path, tmp_path: Path
) -> None:
    """The kept GPT-2 cells renamed: the same MFU has nothing of its own model to be set
    against, so no surface calls it on par or below; the line says what would measure one."""
    source = kept / "runs" if kept.name == "workload" else kept
    report = _report(_renamed(source, tmp_path, "gpt2-xl"))
    assert _codes(report) == ["decision.no_reference"]
    said = (
        "gpt2-xl: no MFU call: no reference for gpt2-xl (bf16, compiled) on an H100 80GB HBM3; "
        "benchmarks/workload_reference.py has no loop of it yet"
    )
    assert report.decision is not None and report.decision.conclusions()[0].text == said
    page = markdown.render(report).decode().replace("\n", " ")
    assert said in page and "on par" not in page and "below the reference" not in page


@pytest.mark.parametrize("where", ["folder", "run"])
def test_a_kept_profile_is_a_report_with_the_same_rule(where: str) -> None:
    """`report -s` on the kept H200 GPT-2 profile (its folder, or the run in it): read as a
    report of its profiled run, whose measured window is set against the reference of the same
    configuration. One window has no interval: no call, said with what would give one."""
    folder = FIXTURES / "h200_gpt2_profile"
    source = folder if where == "folder" else next(p for p in folder.iterdir() if p.is_dir())
    report = _report(source)
    assert report.skipped == []
    assert _codes(report) == ["decision.no_interval"]
    said = (
        "gpt2: no MFU call: MFU 41.3 % from one window has no interval to set against 42.3 %, "
        "a plain PyTorch gpt2 loop's at batch 16 on an H200 (benchmarks/workload_reference.py); "
        "`torchscale benchmark` with `measurement.repeats: 4` gives one"
    )
    assert report.decision is not None and report.decision.conclusions()[0].text == said
    assert said in markdown.render(report).decode().replace("\n", " ")


def test_the_lines_after_a_written_report_carry_its_calls_within_their_bound() -> None:
    """Five calls and a baseline verdict: two calls and a count of the rest under the headline,
    the verdict left to the 'regressions:' line, and no more lines than the bound."""
    from torchscale.contracts.finding import Finding
    from torchscale.interfaces.console.report_recap import SUMMARY_MAX_LINES
    from torchscale.interfaces.report.model import Text

    report = _report(FIXTURES / "h100_second_run" / "workload" / "runs")
    assert report.decision is not None
    call = report.decision.calls[0]
    report.decision.calls = [
        Finding(code=call.code, figures={**call.figures, "model": f"m{i}", "mfu": 0.30 + i / 100})
        for i in range(5)
    ]
    report.decision.baseline = Text(text="Slower than the base by 9 %.")
    lines = summary_lines(report)
    assert len(lines) <= SUMMARY_MAX_LINES
    assert lines[2].startswith("m0: the step is below the reference")
    assert lines[3].startswith("m1: the step is below the reference")
    assert lines[4] == "and 3 more calls (the report's first lines)"
    assert "Slower than the base by 9 %." not in lines
