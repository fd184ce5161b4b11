"""`torchscale profile` end to end with real torchrun ranks on CPU (gloo), against a straggler
whose rank, phase and size are known (`--inject-delay 1:backward:50`), and the config's
`profiling:` section acting after a sweep.

The expected sync stall follows from the injected delay D and the measured cycle T: every rank
but the late one waits about D per step, so the stall is D (N-1)/N / T; the tolerance is 25 %
(relative), as the issue asks. Timings on a shared 2-core machine are noisy: only what the
delay makes unmistakable is asserted.

One answer per question: the straggler is named once, by the step model's verdict,
with the same figures in the terminal and in analysis.json; the run's phase timers, arrival
order and the what-if are [CHECK] lines of that model, never rival headlines; a balanced run
names no straggler. Each run's surfaces (terminal, result.json, analysis.json, the Markdown,
HTML and term reports) say the same (tests/e2e/surfaces.py): the injected runs and a balanced
4-rank run are launched once each and read by every test here.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.e2e import surfaces
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.thresholds import TRACED_STEPS
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording.diagnosis_checks import check_label
from torchscale.contracts.wording.diagnosis_checks import detail as said
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.report.diagnosis_text import split_text, straggler_text, whatif_text
from torchscale.offline.analysis.diagnosis.inflation import disagreement
from torchscale.offline.analysis.diagnosis.timers import step_parts
from torchscale.offline.results import profile_figures
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.profile_windows import read_step_records, steps_table

DELAY_MS = 50.0


def overheads(notes: list[Finding | str], tool: str) -> list[Finding]:
    """The capture overhead notes of `tool` (a code: compared, never its words)."""
    code = "profile.capture_overhead"
    return [
        n for n in notes if isinstance(n, Finding) and (n.code, n.figure("tool")) == (code, tool)
    ]


def invoke(*args: str | Path) -> Result:
    """The command as in an 80-column terminal (COLUMNS): its lines cut to fit, each
    continuation row starting '>   ' (read them back with `unwrapped`)."""
    return CliRunner().invoke(app, [*map(str, args)], env={"COLUMNS": "80"})


def unwrapped(text: str) -> str:
    """The lines as printed before the terminal cut them, whitespace collapsed."""
    return " ".join(text.replace("\n>   ", " ").split())


def _profile(tmp_path: Path, ranks: int) -> tuple[Result, Path]:
    result = invoke(
        "profile",
        "--gpus",
        str(ranks),
        "--model",
        "tiny-mlp",
        "--batch-size",
        "8",
        "--steps",
        "10",
        "--inject-delay",
        f"1:backward:{DELAY_MS:g}",
        "--tool",
        "torch",
        "-o",
        tmp_path,
        "--name",
        f"straggler{ranks}",
    )
    cells = sorted((tmp_path / f"straggler{ranks}" / "profile").iterdir())
    assert len(cells) == 1, result.output
    return result, cells[0]


# 4 ranks (~40 s on 2 cores) only with --runslow: the 2-rank run checks the same analysis, and
# tests/interfaces/test_profile_analyze.py names stragglers among 4 and 8 synthetic ranks
@pytest.fixture(
    scope="module",
    params=[2, pytest.param(4, marks=pytest.mark.slow)],
    ids=["2ranks", "4ranks"],
)
def profiled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, Result, Path]:
    ranks = int(request.param)
    result, directory = _profile(tmp_path_factory.mktemp(f"profile{ranks}"), ranks)
    return ranks, result, directory


@pytest.mark.slow  # a real torchrun profile
def test_trace_analysis_names_rank_phase_and_size(profiled: tuple[int, Result, Path]) -> None:
    ranks, result, directory = profiled
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in directory.glob("rank*.trace.json.gz"))
    assert files == [f"rank{r}.trace.json.gz" for r in range(ranks)]
    analysis = ProfileAnalysis.model_validate_json((directory / "analysis.json").read_text())
    assert analysis.ranks_analysed == ranks and analysis.backend == "gloo"
    assert analysis.diagnosis is not None, analysis.unavailable
    verdict = analysis.diagnosis.straggler
    assert verdict is not None and verdict.named, verdict_words.straggler_text(verdict, ranks)
    assert (verdict.rank, verdict.phase) == (1, "backward")
    assert verdict.phase_gap_s is not None and verdict.phase_gap_s.value is not None
    assert verdict.phase_gap_s.value * 1e3 == pytest.approx(DELAY_MS, rel=0.25)
    stall = profile_figures.sync_stall_pct(analysis).value
    cycle = profile_figures.cycle_us(analysis)
    assert stall is not None and cycle is not None
    assert stall == pytest.approx(100 * DELAY_MS * 1e3 * (ranks - 1) / ranks / cycle, rel=0.25)
    assert analysis.findings[0].category == "straggler"
    assert "rank 1" in analysis.findings[0].title and "backward" in analysis.findings[0].title


@pytest.mark.slow  # a real torchrun profile
def test_capture_overhead_against_the_measured_windows(profiled: tuple[int, Result, Path]) -> None:
    """The traced steps timed like the measured ones: their cost is one line in result.json's
    profile notes, in analysis.json's notes and in the printed [NOTE]s."""
    ranks, result, directory = profiled
    run = read_cell(directory / "result.json").doc
    assert run is not None and run.profile is not None and run.step_time is not None
    [line] = overheads(run.profile.notes, "torch")
    assert (line.figures["ranks"], line.figures["timing"]) == (ranks, "perf_counter")
    analysis = ProfileAnalysis.model_validate_json((directory / "analysis.json").read_text())
    assert line in analysis.notes
    assert "capture overhead" not in result.output  # a note: shown with -v
    for rank in range(ranks):
        own = json.loads((directory / f"rank{rank}.phases.json").read_text())
        assert len(own["step_s"]) == len(own["steps"]) == TRACED_STEPS  # the default


@pytest.mark.slow  # a real torchrun profile
def test_one_straggler_line_with_the_stored_figures(profiled: tuple[int, Result, Path]) -> None:
    """One diagnosis per run: result.json and analysis.json hold the same one; the terminal
    prints its sync stall, step split and verdict once, in at most 15 lines of at most 80
    columns (beside what only a loaded machine adds: the busy-machine caveat and the note that
    the cross-checks disagree); the finding costs its wait; the what-if is bounded by the other
    ranks' wait; the phase timers are cross-checks kept in the JSON, not printed by default."""
    ranks, result, directory = profiled
    assert result.exit_code == 0, result.output
    analysis = ProfileAnalysis.model_validate_json((directory / "analysis.json").read_text())
    diagnosis = analysis.diagnosis
    assert diagnosis is not None and diagnosis.straggler is not None
    # the traces head the diagnosis unless tracing slowed the steps beyond the noise (a busy
    # machine can): then the phase timers do, and the traced split is a named cross-check
    if diagnosis.source != "traces":
        assert diagnosis.source == "phase timers"
        assert any(c.check == "inflation" for c in diagnosis.cross_checks)
    run = read_cell(directory / "result.json").doc
    assert run is not None and run.diagnosis == diagnosis
    lines = result.stdout.splitlines()
    assert len(lines) - len(_load_only_lines(lines)) <= 15, result.stdout
    assert max(len(line) for line in lines) <= 80, result.stdout
    out = unwrapped(result.stdout)
    assert out.count("[ANALYSIS] Straggler") == 1 and out.count("[ANALYSIS] Step ") == 1
    assert f"[ANALYSIS] {straggler_text(diagnosis.straggler, ranks)}" in out
    assert diagnosis.straggler.injected is True
    assert "[ANALYSIS] Straggler (injected: --inject-delay): rank 1," in out
    assert f"[ANALYSIS] {split_text(diagnosis)}" in out
    assert out.count("Sync stall time:") == 1 and "[CHECK]" not in out
    checks = {c.check: c for c in diagnosis.cross_checks}
    # the other source's verdict is the cross-check: the timers' under the traces, or the
    # traces' where the timers head (with_inflation); both name rank 1, and a loaded machine
    # may read its kind otherwise from one side's evidence, which the check then says
    other = checks["timers_straggler" if diagnosis.source == "traces" else "traces_straggler"]
    assert other.agrees is True or "one rank, its kind read from different evidence" in said(
        other.detail
    )
    assert checks["arrival_order"].agrees is True
    differ = [
        check_label(c.check)
        for c in diagnosis.cross_checks
        if c.agrees is False and c.check != "inflation"
    ]
    # under load the timers' split may leave the traces' intervals: then one line says so (the
    # profiler's inflation is said on the Step line instead)
    line = disagreement(diagnosis.cross_checks)
    assert (line is None) == (not differ)
    assert all(name in (line or "") for name in differ)
    wait = next(p for p in diagnosis.parts if p.name == "wait_for_peers")
    assert analysis.findings[0].cost_share == wait.share
    whatif = diagnosis.whatif
    assert whatif is not None and whatif.rank == 1 and whatif.named
    others = _others_wait(analysis, directory, diagnosis.source)
    assert whatif.saved_s.value is not None and whatif.extra_work_s is not None
    assert whatif.saved_s.value <= min(others) + 1e-9
    assert whatif.saved_s.value <= whatif.extra_work_s + 1e-9
    assert "What-if: rank 1 on par" in out
    for part in diagnosis.parts:
        for figure in (part.share.value, part.share.low, part.share.high):
            assert figure is None or 0.0 <= figure <= 1.0


def _others_wait(analysis: ProfileAnalysis, directory: Path, source: str) -> list[float]:
    """Each other rank's mean wait for peers, from the source the what-if was computed from:
    the traces' ranks, or, where the profiler slowed the traced steps and the phase timers
    head (`with_inflation`), the measured windows' steps. Across sources the bound is none."""
    if source == "traces":
        return [
            next(p.seconds.value for p in r.parts if p.name == "wait_for_peers")
            for r in analysis.ranks
            if r.rank != 1
        ]
    table, _ = steps_table(read_step_records(directory / "steps.jsonl"))
    parts = step_parts(table)
    return parts[parts["rank"] != 1].groupby("rank")["wait_for_peers"].mean().tolist()


@pytest.fixture(scope="module")
def balanced(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Result, Path]:
    """A balanced 4-rank profile: nobody slowed on purpose."""
    out = tmp_path_factory.mktemp("balanced")
    result = invoke(
        "profile",
        "--gpus",
        "4",
        "--model",
        "tiny-mlp",
        "--batch-size",
        "8",
        "--steps",
        "10",
        "--tool",
        "torch",
        "-o",
        out,
        "--name",
        "balanced",
    )
    assert result.exit_code == 0, result.output
    (directory,) = sorted((out / "balanced" / "profile").iterdir())
    return 4, result, directory


@pytest.mark.slow  # a real torchrun profile
def test_a_balanced_run_says_its_verdict_once(balanced: tuple[int, Result, Path]) -> None:
    """A balanced run: the verdict the diagnosis stored is the one headline, and only its
    findings follow from it. How often a balanced run names nobody is a rate, measured by
    benchmarks/straggler_detection.py (docs/profiling.md: 43 of 47 at 2 ranks on this VM,
    whose two vCPUs are not alike), not something one run can assert."""
    ranks, result, directory = balanced
    analysis = ProfileAnalysis.model_validate_json((directory / "analysis.json").read_text())
    diagnosis = analysis.diagnosis
    assert diagnosis is not None
    verdict = diagnosis.straggler
    assert verdict is not None
    out = unwrapped(result.stdout)
    assert out.count("Straggler:") == 1
    assert f"[ANALYSIS] {straggler_text(verdict, ranks)}" in out
    if not verdict.named:
        assert "straggler" not in {f.category for f in analysis.findings}
        # only a cross-check may say otherwise, and only under -v: never a headline
        assert "is the straggler" not in out and "[CHECK]" not in out, result.output


@pytest.mark.slow  # a real torchrun profile
def test_a_profile_says_the_same_on_every_surface(
    profiled: tuple[int, Result, Path], tmp_path: Path
) -> None:
    _check_surfaces(profiled, tmp_path, injected=True)


@pytest.mark.slow  # a real torchrun profile
def test_a_balanced_profile_says_the_same_on_every_surface(
    balanced: tuple[int, Result, Path], tmp_path: Path
) -> None:
    _check_surfaces(balanced, tmp_path, injected=False)


def _check_surfaces(run: tuple[int, Result, Path], tmp_path: Path, injected: bool) -> None:
    """One diagnosis per run, the same on every surface: the step split, the straggler verdict,
    its what-if and the exposed-communication figure read from the terminal, result.json,
    analysis.json and the Markdown, HTML and term reports."""
    _, result, directory = run
    analysis = ProfileAnalysis.model_validate_json((directory / "analysis.json").read_text())
    diagnosis = analysis.diagnosis
    assert diagnosis is not None
    stored = read_cell(directory / "result.json").doc
    assert stored is not None and stored.diagnosis == diagnosis  # stored once, the same
    # the headline figures are read off the diagnosis, never stored beside it
    stall = diagnosis.part("wait_for_peers")
    exposed = diagnosis.part("exposed_transfer")
    assert stall is not None and exposed is not None
    if stall.share.value is not None:
        shown = profile_figures.sync_stall_pct(analysis).value
        assert shown == pytest.approx(100 * stall.share.value)
    if exposed.share.value is not None:
        shown = profile_figures.exposed_comm_pct(analysis).value
        assert shown == pytest.approx(100 * exposed.share.value)
    printed = json.loads(analysis.model_dump_json())["diagnosis"]
    assert printed == json.loads(diagnosis.model_dump_json())
    terminal = unwrapped(result.stdout)
    for text in surfaces.headline_texts(diagnosis):
        assert terminal.count(text) == 1, (text, terminal)
    verdict = diagnosis.straggler
    assert verdict is not None
    if injected:
        assert verdict.named and verdict.rank == 1
        assert whatif_text(diagnosis) is not None  # so the what-if is checked below
    for fmt, text in surfaces.reports(directory.parents[1], tmp_path).items():
        for line in surfaces.verdict_texts(diagnosis):
            assert line in text, (fmt, line)


@pytest.mark.slow  # a real torchrun profile
def test_phase_timers_of_the_same_run_name_it_too(profiled: tuple[int, Result, Path]) -> None:
    """The plain measurement (no profiler) before the traced steps: per-rank phase timers."""
    _, result, directory = profiled
    assert result.exit_code == 0, result.output
    read = read_cell(directory / "result.json")
    assert read.doc is not None, read.problem
    diagnosis = read.doc.diagnosis
    assert diagnosis is not None and diagnosis.straggler is not None
    straggler = diagnosis.straggler
    assert straggler.named and (straggler.rank, straggler.phase) == (1, "backward")
    assert straggler.injected is True  # every surface says so (straggler_text)
    assert straggler.phase_gap_s is not None
    assert straggler.phase_gap_s.value == pytest.approx(DELAY_MS / 1e3, rel=0.25)


@pytest.mark.slow  # ~25-45 s: a sweep, then its profile; the profile path itself runs above
def test_sweep_profiling_section_profiles_after_the_sweep(tmp_path: Path) -> None:
    config = tmp_path / "cfg.yaml"
    config.write_text(
        "experiment_name: swept\n"
        "models: [tiny-mlp]\n"
        "batch_sizes: [8]\n"
        "gpu_counts: [2]\n"
        "device: cpu\n"
        "measurement: {warmup_steps: 2, steps: 5, repeats: 1}\n"
        "profiling: {enabled: true, trigger: always, steps: 3, warmup_steps: 1}\n"
    )
    result = invoke("benchmark", "-c", config, "-o", tmp_path)
    assert result.exit_code == 0, result.output
    assert "> [PROFILE]" in result.output and "trigger is 'always'" in result.output
    root = tmp_path / "swept"
    (cell,) = sorted((root / "cells").glob("*.json"))
    profile_dir = root / "profile" / cell.stem
    analysis = ProfileAnalysis.model_validate_json((profile_dir / "analysis.json").read_text())
    assert analysis.ranks_analysed == 2
    assert "[ANALYSIS] Step " in result.output and "[ANALYSIS] Straggler:" in result.output
    # the sweep's own result is untouched by the profiled run
    read = read_cell(cell)
    assert read.doc is not None and read.doc.measured_steps == 5


@pytest.mark.slow  # a real profile under nsys (skips without it)
def test_profile_under_nsys_end_to_end(tmp_path: Path) -> None:
    """`--tool nsys`: the torchrun launch inside `nsys profile`, exported to SQLite and read.
    On CPU nsys sees no collectives (no kernels): the stall is unavailable with the reason,
    while the ranks, steps and phases come through the NVTX marks."""
    from torchscale.orchestration.profiling.nsys import find_nsys, nsys_unavailable_reason

    if find_nsys() is None:
        pytest.skip(f"Nsight Systems not available: {nsys_unavailable_reason()}")
    pytest.importorskip("nvtx", reason="CPU workers need the nvtx package (< 0.2.12) for nsys")
    result = invoke(
        "profile",
        "--gpus",
        "2",
        "--model",
        "tiny-mlp",
        "--batch-size",
        "8",
        "--steps",
        "3",
        "--profile-steps",
        "6",
        "--tool",
        "nsys",
        "-o",
        tmp_path,
    )
    # one CI run saw torchrun exit 1 under nsys with nothing in the reason: keep the log
    logs = sorted(tmp_path.glob("standalone/profile/*/logs/*.log"))
    assert result.exit_code == 0, "\n".join([result.output, *(p.read_text() for p in logs)])
    (directory,) = sorted((tmp_path / "standalone" / "profile").iterdir())
    assert (directory / "capture.sqlite").exists()
    analysis = ProfileAnalysis.model_validate_json((directory / "analysis.json").read_text())
    assert analysis.tool == "nsys" and analysis.ranks_analysed == 2
    assert all(f.rank_source == "nvtx_mark" for f in analysis.files)
    # a step under half the median counts as cut by the capture; on a loaded machine one of
    # these millisecond steps may be, so 6 are traced and 3 required
    assert all(r.steps >= 3 for r in analysis.ranks)
    # nsys sees no collectives on CPU, so the traces cannot give the stall; when the capture
    # inflated the traced steps beyond the noise (it often does: ~+300 % on these 1 ms steps),
    # the phase timers head the diagnosis and measure the wait themselves
    assert analysis.diagnosis is not None
    stall = profile_figures.sync_stall_pct(analysis)
    if analysis.diagnosis.source == "traces":
        assert stall.value is None and stall.reason == profile_figures.NO_MATCH
    else:
        assert analysis.diagnosis.source == "phase timers"
        assert overheads(analysis.notes, "nsys")
        assert (stall.reason is not None) != (stall.value is not None)
    # only the profiled steps: the ranks' empty `torchscale:capture` range started the
    # collection, so nothing of the start-up (torch's imports alone are ~1 s of OS calls)
    # or of the measured windows before it is in the report
    run = read_cell(directory / "result.json").doc
    assert run is not None and "--capture-range=nvtx" in run.launch["argv"]
    assert run.launch["env"]["TORCHSCALE_NSYS_CAPTURE"] == "nvtx"
    con = sqlite3.connect(directory / "capture.sqlite")
    [(trigger_ns,)] = con.execute(
        "SELECT MIN(n.start) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE COALESCE(n.text, s.value) = 'torchscale:capture'"
    ).fetchall()
    [(first_osrt_ns,)] = con.execute("SELECT MIN(start) FROM OSRT_API").fetchall()
    con.close()
    assert trigger_ns is not None and first_osrt_ns is not None
    assert trigger_ns - first_osrt_ns < 1e9, (trigger_ns, first_osrt_ns)
    # what the traced steps cost against the measured windows, in both files
    assert run.profile is not None
    [overhead] = overheads(run.profile.notes, "nsys")
    assert overhead in analysis.notes


@pytest.mark.slow
def test_a_profiled_run_that_fails_says_why_and_where_its_log_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rank that raises under the profiler: exit 1, and one error line with the cause and
    torchrun's log (where a profiler's own failure, e.g. nsys's, is said), never only "no
    traces to analyse"."""
    from tests.processes import REPO_ROOT

    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    result = invoke(
        "profile",
        "--gpus",
        "2",
        "--model",
        "tests.fault_models:crash",
        "--batch-size",
        "8",
        "--steps",
        "8",
        "--tool",
        "torch",
        "-o",
        tmp_path,
        "--name",
        "crashed",
    )
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert "the profiled run failed, no traces to analyse:" in line
    assert "torchrun.log" in line and "injected" in line.lower()


def _load_only_lines(lines: list[str]) -> list[str]:
    """The lines of the blocks only a loaded machine prints (each block: its first line and
    its indented continuation lines)."""
    said, inside = [], False
    for line in lines:
        if line.startswith("> ["):
            inside = line.startswith(("> [CAVEAT] busy machine", "> [NOTE] cross-checks disagree"))
        if inside:
            said.append(line)
    return said
