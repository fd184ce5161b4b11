"""What a stakeholder reads in ten seconds: the one-sentence verdict and the header
(hardware, dates, description), the price in the summary when it comes from the config, a
Markdown that fits a pull-request comment at 500 cells, the config appendix holding only what
was set, unreadable inputs counted against the headline, comm-only sources named as such, and a
baseline report titled by what it compares."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from torchscale.contracts.schema.comm_result import CommResult
from torchscale.interfaces.api.report_generate import ReportRequest, generate
from torchscale.interfaces.report.build import build_report, default_title
from torchscale.interfaces.report.estimates import efficiency_phrase
from torchscale.interfaces.report.model import (
    Findings,
    KeyFigures,
    Report,
    Table,
    Text,
)
from torchscale.interfaces.report.parts.headline import describe_hardware
from torchscale.interfaces.report.render import markdown
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sections.appendix import set_keys
from torchscale.interfaces.report.sources import read_sources
from torchscale.orchestration.comm.sweep_launch import store_result

REPO = Path(__file__).parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"
V3 = FIXTURES / "cpu_sweep_profile"
V3_SWEEP = V3 / "v3_fixture"
GENERATED_AT = "2026-11-22T12:00:00Z"
GITHUB_COMMENT_LIMIT = 65_536


def build(source: Path, baseline: Path | None = None, **options: Any) -> Report:
    return build_report(
        read_sources(source),
        ReportOptions(generated_at=GENERATED_AT, **options),
        read_sources(baseline) if baseline is not None else None,
    )


def figures(report: Report) -> dict[str, Any]:
    section = report.section("summary")
    assert section is not None
    return {f.label: f for b in section.blocks if isinstance(b, KeyFigures) for f in b.figures}


def copy_sweep(root: Path, name: str = "v3_fixture") -> Path:
    dest = root / name
    shutil.copytree(V3_SWEEP, dest)
    return dest


# ------------------------------------------------------------------------ the verdict


@pytest.fixture(scope="module")
def priced() -> Report:
    return build(V3, cost_per_gpu_hour=2.5)


def test_the_verdict_says_first_whether_the_numbers_can_be_used(priced: Report) -> None:
    """Every measured cell of the fixture ran 2 repeats, too wide by its t interval: 2 vary past
    ±10 % (noisy), 2 agree but are too few to judge; the headline says the numbers cannot be
    used, why and what to do (more repeats first), in one sentence; the models
    follow, one line each with the summary's efficiency as its 95 % interval."""
    assert priced.headline is not None and priced.decision is not None
    text = priced.headline.text
    assert text == (
        "No accelerator figure here: CPU ranks measure Python, the host and gloo. "
        "These numbers cannot be used: 2 of 4 cells noisy, 2 with too few repeats to judge: "
        "rerun with `measurement.repeats: 4` or more."
    )
    assert priced.headline.severity == "bad" and priced.decision.usable == "no"
    # under "cannot be used" the card shows no figure, only why (the line keeps its words)
    card = figures(priced)["Scaling efficiency at 2 CPU ranks: tiny-gpt2"]
    assert card.value == "not usable" and card.note.startswith("these numbers cannot be used")
    # the model line says what the card says: not usable, no figure (no efficiency, no cost)
    (models,) = [t.text for t in priced.decision.models]
    assert models == (
        "tiny-gpt2, tiny-mlp (2 models), scaling to 2 CPU ranks: "
        "not usable (these numbers cannot be used)"
    )
    assert priced.decision.best is not None
    assert priced.decision.best.text == (
        "Best configuration: none named (these numbers cannot be used)."
    )
    actions = [t.text for t in priced.decision.actions]
    assert actions[0].startswith("Raise `measurement.repeats` from 2 to 4 or more")
    assert any(a.startswith("Fix the 2 failed cells") for a in actions)
    everything = " ".join([text, *models, *actions])
    assert "GPU" not in everything  # CPU ranks are never called GPUs
    assert "47-59" not in everything  # one spelling of the efficiency: never a range form


def test_the_header_holds_hardware_dates_and_description(priced: Report) -> None:
    assert priced.hardware == "a CPU-only host (AMD EPYC, 2 cores)"
    assert priced.measured == "2026-11-22"
    assert priced.description == "written by torchscale at result schema 3 for the report tests"
    assert priced.source_path == str(V3)


def test_a_gpu_run_is_named_by_its_gpu(tmp_path: Path) -> None:
    """One H100 cell (recorded on a real GPU): the GPU as the driver names it, the one
    throughput with its interval (no scaling to speak of), the cost per M tokens, and what a GPU
    reader decides on: MFU against its peak, with the throughput's interval scaled (one
    estimator), and the memory it took."""
    cells = tmp_path / "h100" / "cells"
    cells.mkdir(parents=True)
    result = FIXTURES / "cells" / "h100_gpt2_bf16_compiled.json"
    shutil.copy(result, cells / "gpt2__b8__w1__bf16__ddp__aa00afb8.json")
    report = build(tmp_path / "h100", cost_per_gpu_hour=3.0)
    assert report.hardware == "1 x H100 80GB HBM3"
    assert report.headline is not None
    # two repeats (237.2 and 251.8): Student t on log throughput, not their range (±7.3),
    # and 2 repeats 6 % apart are too few for a reliable measurement, not noisy
    assert report.headline.text == (
        "Scaling not measured: this node has 1 GPU. "
        "These numbers cannot be used: its one cell ran 2 repeats, too few to judge: "
        "rerun with `measurement.repeats: 4` or more."
    )
    assert report.decision is not None
    # its numbers cannot be used: the decision's line shows none, as the cards show none; the
    # GPU table below keeps MFU against its peak and the memory it took
    line, unreferenced = report.decision.models
    assert line.text == "gpt2: not usable (these numbers cannot be used)"
    # its record holds no compile: an eager cell, whose reference on an H100 is not measured,
    # so more repeats alone would still leave it without an MFU call
    assert unreferenced.text.startswith(
        "gpt2: no MFU call: no reference for gpt2 (bf16, eager) on an H100 80GB HBM3; measure "
    )
    gpu = next(
        t for s in report.sections for t in s.blocks if getattr(t, "id", "") == "summary-gpu"
    )
    (row,) = gpu.rows
    assert row["mfu_text"] == "22 % ±9 %" and row["peak"] == 989.0 and row["peak_reserved"]
    assert report.headline.severity == "bad"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((0.94, 0.92, 0.96), "94.0 % ±2.0 % of linear"),  # as every figure is spelled
        ((0.91, 0.80, 1.02), "91 % ±11 % of linear"),
        ((1.04, 0.97, 1.11), "linear within noise"),
        ((1.2, 1.1, 1.3), "super-linear (120 % ±10 %: check for cache effects)"),
        ((1.05, None, None), "not measurable (above linear on one repeat)"),
        ((0.9, None, None), "90.0 % of linear (one repeat)"),
        ((None, None, None), "not measurable"),
        ((0.976, 0.323, 2.949), "not measurable"),  # wider than the figure: no number
        ((0.976, 0.323, 2.949, 2), "not measurable (2 repeats)"),
        ((0.25, 0.17, 0.44), "not measurable"),
    ],
)
def test_a_scaling_phrase_never_prints_a_figure_inside_its_noise(
    args: tuple[float | None, ...], expected: str
) -> None:
    assert efficiency_phrase(*args) == expected


def test_hardware_in_words() -> None:
    from torchscale.interfaces.report.parts.headline import _Run

    h100 = {"device_name": "NVIDIA H100 80GB HBM3"}
    runs = [_Run("cuda", 8, 1, h100), _Run("cuda", 16, 2, h100), _Run("cuda", 2, 1, h100)]
    assert describe_hardware(runs) == "16 x H100 80GB HBM3 on 2 nodes"
    older = {"gpus": ["NVIDIA A100-SXM4-40GB"] * 8}  # before device_name was recorded
    assert describe_hardware([_Run("cuda", 4, 1, older)]) == "4 x A100-SXM4-40GB"
    cpu = {"cpu_model": "Intel Xeon", "usable_cores": 16}
    assert describe_hardware([_Run("cpu", 2, 1, cpu)]) == "a CPU-only host (Intel Xeon, 16 cores)"
    assert describe_hardware([_Run("cuda", 2, 1, {})]) == "2 x cuda devices (model not recorded)"
    assert describe_hardware([]) is None


# ------------------------------------------------------------------------ the price


def test_the_config_price_is_the_price_the_summary_says(tmp_path: Path) -> None:
    """Priced by the config's cost.per_gpu_hour (no --cost-per-gpu-hour): the summary names
    that price, not '-'."""
    sweep = copy_sweep(tmp_path)
    for cell in (sweep / "cells").glob("*.json"):
        data = json.loads(cell.read_text(encoding="utf-8"))
        if data.get("status") == "ok":
            data["data"] = None
            data["cost"] = {
                "per_gpu_hour": 3.6,
                "gpu_hours_per_m_samples": None,
                "cost_per_m_samples": None,
                "cost_per_m_tokens": None,
            }
            cell.write_text(json.dumps(data), encoding="utf-8")
    report = build(tmp_path)
    # the cost card of numbers that cannot be used shows no figure: the table names the price
    notes = [f.note or "" for f in figures(report).values() if f.label.startswith("Cost")]
    assert notes and all(n.startswith("these numbers cannot be used") for n in notes)
    summary = report.section("summary")
    assert summary is not None
    best = next(b for b in summary.blocks if isinstance(b, Table))
    assert "at $3.60 per rank-hour" in (best.note or "")  # CPU ranks
    assert " - per rank-hour" not in report.model_dump_json()


# ------------------------------------------------------------------------ unreadable inputs


def test_unreadable_cells_count_against_the_headline(tmp_path: Path) -> None:
    sweep = copy_sweep(tmp_path)
    broken = sorted((sweep / "cells").glob("tiny-mlp*.json"))
    for path in broken:
        path.write_text('{"kind": "torchscale.cell", "status": "ok", "cel', encoding="utf-8")
    report = build(tmp_path)
    assert report.headline is not None and report.decision is not None
    assert report.headline.severity == "bad"
    actions = [a.text for a in report.decision.actions]
    assert "2 cell files could not be read (see the skipped inputs): rerun those cells." in actions
    cells = figures(report)["Cells measured"]
    assert cells.value == "2 of 6"
    assert cells.note == "2 failed, 2 unreadable"
    (source,) = report.sources
    assert source.unreadable == 2
    assert source.contents() == "4 of 6 cells readable (2 ok, 2 failed)"
    text = markdown.render(report).decode("utf-8")
    assert "4 of 6 cells readable (2 ok, 2 failed)" in text
    assert "### Skipped inputs (2, left out of every figure)" in text  # bold: the decision only


def test_a_comm_only_source_is_not_called_profiles(tmp_path: Path) -> None:
    run = CommResult(
        id="ours",
        world_size=8,
        device="cuda",
        backend="nccl",
        device_name="NVIDIA H100 80GB HBM3",
        dtype="float32",
        check=True,
    )
    store_result(run, tmp_path / "net" / "comm" / "ours.json")
    report = build(tmp_path)
    dumped = report.model_dump_json()
    assert "profiles only" not in dumped and "profiled run" not in dumped
    assert (
        figures(report)["Cells measured"].note
        == "no benchmark sweep in the sources (1 comm run only)"
    )
    failures = report.section("failures")
    assert failures is not None
    assert any(
        isinstance(b, Text) and b.text == "No sweep cells in the sources (1 comm run only)."
        for b in failures.blocks
    )
    assert report.sources[0].contents() == "1 comm run"
    assert report.hardware == "8 x H100 80GB HBM3"
    assert report.headline is not None
    # its own verdict: a comm run without a single size measured is nothing to use
    assert report.headline.text == (
        "These bandwidth figures cannot be used: torchscale 8x nccl float32: no message size "
        "measured: fix it and rerun `torchscale comm`."
    )


# ------------------------------------------------------------------------ titles


def test_a_baseline_report_is_titled_by_what_it_compares(tmp_path: Path) -> None:
    new = copy_sweep(tmp_path / "new")
    old = copy_sweep(tmp_path / "old")
    current, baseline = read_sources(new), read_sources(old)
    # both sides are the experiment v3_fixture (a config re-run keeps its name)
    assert default_title(current, baseline) == "torchscale report: new/v3_fixture vs old/v3_fixture"
    assert default_title(current, read_sources(V3_SWEEP)).endswith(
        "new/v3_fixture vs cpu_sweep_profile/v3_fixture"
    )
    assert default_title(current, current) == f"torchscale report: {new} against itself"
    assert (
        default_title(read_sources(V3), read_sources(FIXTURES / "cpu_crashes"))
        == "torchscale report: profile, v3_fixture vs v1_fixture"
    )


# ------------------------------------------------------------------------ config appendix


def test_the_appendix_holds_only_what_the_config_set(priced: Report) -> None:
    appendix = priced.section("appendix")
    assert appendix is not None
    (config,) = [b for b in appendix.blocks if isinstance(b, Text) and b.preformatted]
    assert "null" not in config.text and "{}" not in config.text
    assert yaml.safe_load(config.text) == {
        "experiment_name": "v3_fixture",
        "description": "written by torchscale at result schema 3 for the report tests",
        "models": ["tiny-mlp", "tiny-gpt2", "torchscale_missing_plugin:factory"],
        "batch_sizes": [8],
        "gpu_counts": [1, 2],
        "device": "cpu",
        "measurement": {"warmup_steps": 2, "steps": 6, "repeats": 2},
        "launcher": {"cell_timeout_s": 120.0, "nnodes": 1},
        # written when compile defaulted to false; today's default is null (on for CUDA
        # cells), so an old experiment's uncompiled cells say so
        "training": {"compile": False},
        # written when a profile traced 10 steps by default; today's default is 24
        "profiling": {"steps": 10},
    }
    environment = next(
        b for b in appendix.blocks if isinstance(b, Table) and b.id == "appendix-environment"
    )
    labels = [c.label for c in environment.columns]
    assert labels[:6] == ["Experiment", "Host", "GPUs", "CPU", "Cores", "torch threads"]


def test_set_keys_keeps_a_model_with_options_and_keys_older_configs_had() -> None:
    config = {
        "experiment_name": "x",
        "models": [{"name": "gpt2", "label": None, "options": {"n_layer": 2}}],
        "batch_sizes": [8],
        "gpu_counts": [1],
        "training": {"optimizer": "adamw", "compile": True, "fused_optimizer": None},
        "retired_key": 3,
        "also_retired": None,
    }
    assert set_keys(config) == {
        "experiment_name": "x",
        "models": [{"name": "gpt2", "options": {"n_layer": 2}}],
        "batch_sizes": [8],
        "gpu_counts": [1],
        "training": {"compile": True},
        "retired_key": 3,
    }


# ------------------------------------------------------------------------ Markdown size


def _scale_module() -> Any:
    path = REPO / "benchmarks" / "report_scale.py"
    spec = importlib.util.spec_from_file_location("report_scale", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("report_scale", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("cells", [8, 500])
@pytest.mark.slow  # over 2 s on 2 cores
def test_markdown_fits_a_pull_request_comment(tmp_path: Path, cells: int) -> None:
    experiment = _scale_module().write_results(tmp_path, cells)
    report = build(experiment, cost_per_gpu_hour=2.5)
    text = markdown.render(report).decode("utf-8")
    assert len(text) < GITHUB_COMMENT_LIMIT
    assert report.headline is not None
    assert markdown.inline(report.headline.text) in text
    assert report.decision is not None
    for line in report.decision.conclusions() + report.decision.by_model():
        assert markdown.inline(line.text) in text
    if cells == 500:  # five models that read alike: one line naming them, over all configurations
        (models,) = [t.text for t in report.decision.models]
        assert models.startswith(
            "scale-model-1, scale-model-2, scale-model-3 and 2 more (5 models)"
        )
    assert "Best configuration per model" in text
    # the command that makes the HTML report, by the results folder's name (no local path)
    assert f"run torchscale report -s {experiment.name} -f html" in text
    assert str(experiment.parent) not in text
    assert "experiment\\_name" not in text and "experiment_name" not in text  # no config dump


def test_the_markdown_links_only_a_url_to_the_html_report(tmp_path: Path) -> None:
    """A PR comment resolves no relative link and a reviewer has no use for a path of the
    machine that wrote it: an HTML report found beside the Markdown is named by its file name
    as text, and only a URL (--html-link) is linked."""
    sweep = copy_sweep(tmp_path)
    html = generate(ReportRequest(source=sweep, fmt="html", generated_at=GENERATED_AT))
    assert html.path == sweep / "v3_fixture_report.html"
    md = generate(ReportRequest(source=sweep, fmt="md", generated_at=GENERATED_AT))
    assert md.report.html_report == str((sweep / "v3_fixture_report.html").resolve())
    text = md.content.decode("utf-8")
    assert "](" not in text  # no link at all
    assert markdown.escape("v3_fixture_report.html") in text
    assert str(sweep) not in text and markdown.escape(str(sweep)) not in text
    elsewhere = generate(
        ReportRequest(source=sweep, fmt="md", output=tmp_path / "pr" / "comment.md")
    )
    assert elsewhere.report.html_report == md.report.html_report  # absolute: never ../
    given = generate(
        ReportRequest(source=sweep, fmt="md", html_link="https://ci.example.com/r.html")
    )
    assert "(https://ci.example.com/r.html)" in given.content.decode("utf-8")
    relative = markdown.render(md.report.model_copy(update={"html_report": "r.html"}))
    assert b"](r.html)" not in relative and b"](" not in relative


# ------------------------------------------------------------ CPU ranks are not GPUs


def test_a_cpu_report_never_counts_ranks_as_gpus(priced: Report) -> None:
    """Every cell of the fixture ran on CPU ranks: the tables and charts that count them say
    'CPU ranks' (and 'per rank'), never 'GPUs'; the efficiency is a percentage, so linear is
    100 %, not 1.0."""
    from torchscale.interfaces.report.model import Chart

    labels: list[str] = []
    for section in priced.sections:
        for block in section.blocks:
            if isinstance(block, Table) and block.id != "appendix-environment":  # host's GPUs
                labels += [c.label for c in block.columns] + [block.title or ""]
            if isinstance(block, Chart):
                labels += [block.title, block.x_label or ""]
    assert "CPU ranks" in labels
    assert [label for label in labels if "GPUs" in label or "per GPU" in label] == []
    # the prose too: notes, texts, key figures' notes (such as 'at $2.50 per GPU-hour',
    # 'linear in GPUs', 'batch per GPU' and "a 'GPU' is one rank")
    prose: list[str] = [f.note or "" for f in figures(priced).values()]
    for section in priced.sections:
        for block in section.blocks:
            if isinstance(block, Text):
                prose.append(block.text)
            if isinstance(block, Table) and block.id != "appendix-environment":
                prose.append(block.note or "")
                prose += [str(v) for row in block.rows for k, v in row.items() if k == "how"]
            if isinstance(block, Chart):  # 'from the smallest GPU count' under a scaling chart
                prose.append(block.note or "")
    gpu_words = re.compile(r"GPU-hour|per GPU|in GPUs|GPU count|'GPU'|\bGPUs\b")
    assert [p for p in prose if gpu_words.search(p)] == []
    notes = [f.note or "" for f in figures(priced).values()]
    assert not any("1.0 = linear" in note for note in notes)


def test_the_summary_names_cells_by_label_not_by_hashed_id() -> None:
    """The summary, read in ten seconds, and the findings' sources name each cell as the rest
    of the report does, never by its hashed id (a sweep whose diagnoses have findings)."""
    report = build(FIXTURES / "cpu_default_sweep")
    findings = [b for s in report.sections for b in s.blocks if isinstance(b, Findings)]
    sources = [f.source for block in findings for f in block.findings]
    assert sources and [s for s in sources if re.search(r"__[0-9a-f]{8}", s)] == []
    section = report.section("summary")
    assert section is not None
    texts = [b.text for b in section.blocks if isinstance(b, Text)]
    assert any("of the step:" in t for t in texts), texts  # the fixture has top findings
    assert [t for t in texts if re.search(r"__[0-9a-f]{8}", t)] == []
