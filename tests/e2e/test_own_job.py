"""`torchscale profile -- torchrun ... train.py` on a user's own, unmodified DDP script
(examples/own_job/ddp_train.py: written as its author would, it imports nothing of
torchscale), with real torchrun ranks on CPU (gloo).

One probed run, shared by every test here (a launch is most of a test's time): the script's own
bug, a Dataset that decodes slowly on rank 1 (`--slow-rank 1 --slow-ms 30`), with gradient
accumulation (2 micro-batches a step), a DataLoader worker and dropout. The slow loader is
named with its rank and kind (input) on the terminal, in result.json and in `report -f md`;
every rank ends at the agreed step W + N with exit 0 and leaves no process behind (its loader
worker included); the samples per step are the micro-batches' sum; the job's own output is kept
in the result folder, never in torchscale's. How often a balanced run names nobody is a rate
for a benchmark, not a per-run assert (this machine cannot hold it to 95 %).

The probe never changes what the job computes: the same command run bare
under torchrun logs the same losses bit for bit up to the stop. Dropout masks, the sampler's
shuffle and the worker's seed all come from the job's random streams, so a draw the probe took
from them would change the losses (that one draw does is shown, a launch cheaper, in
tests/rank/test_own_job_probe.py). The losses come from the script's own metrics log
(`--metrics`, rank 0's loss per optimizer step, as JSON floats: exact).

The run is traced by default (K optimizer steps after the measured ones): each rank writes its
trace as the built-in profile does, the result holds the traces' analysis, and `torchscale
profile analyze` of the ranks' folder gives the same verdict; the window's placement, skips and
failures are tests/rank/test_own_job_trace.py.

The runs and what they are read by: tests/own_job_runs.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.own_job_runs import (
    EXAMPLES,
    RANKS,
    TIMEOUT_S,
    OwnRun,
    assert_straggler_on_every_surface,
    profile_job,
    rank_files,
    stored_result,
    text_files,
)
from tests.processes import kill_mentioning
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.cli.profile_cmd import DEFAULT_OWN_TRACE_STEPS
from torchscale.rank.own_job import PROFILER_WARMUP, read_rank_files
from torchscale.rank.own_job.probe import CALIBRATION_REPS

pytestmark = pytest.mark.slow

SCRIPT = EXAMPLES / "ddp_train.py"
SLOW_RANK, SLOW_MS = 1, 30
# 40 measured steps of batches 30 ms slower: the size tests/e2e/test_straggler_kinds.py found
# holds on a loaded machine (here 2 such batches a step)
WARMUP, STEPS = 4, 40
# 2 batches of 16 per optimizer step, one loader worker: 4096 samples over 2 ranks make 64
# steps in the one epoch, so the stop at W + N comes before the script's own end
GRAD_ACCUM, BATCH, DATASET = 2, 16, 4096
METRICS = "losses.jsonl"  # the script's metrics log, in the job's folder
ARGS = (
    "--slow-rank", str(SLOW_RANK), "--slow-ms", str(SLOW_MS), "--grad-accum", str(GRAD_ACCUM),
    "--batch-size", str(BATCH), "--num-workers", "1", "--dataset-size", str(DATASET),
    "--epochs", "1", "--dropout", "0.2", "--metrics", METRICS,
)  # fmt: skip
JOB_LINE = "step 10 loss"  # what rank 0 of the job prints at its 10th optimizer step
# the losses a probed run logs: its last step ends inside `optimizer.step`, before its loss is
# written: the traced window's last
LOGGED_TRACED = WARMUP + STEPS + PROFILER_WARMUP + DEFAULT_OWN_TRACE_STEPS - 1


def losses(folder: Path) -> list[float]:
    """Rank 0's losses, one per optimizer step, from the script's metrics log in `folder`."""
    lines = (folder / METRICS).read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["loss"] for line in lines]


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory: pytest.TempPathFactory) -> OwnRun:
    return profile_job(tmp_path_factory.mktemp("own_job"), SCRIPT, WARMUP, STEPS, *ARGS)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> list[float]:
    """Rank 0's losses of the same command under torchrun alone, nothing of torchscale on the
    path, run to the script's own end."""
    job = tmp_path_factory.mktemp("own_job_bare")
    script = job / SCRIPT.name  # its path marks the job's processes
    shutil.copy(SCRIPT, script)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    argv += [f"--nproc-per-node={RANKS}", "--max-restarts=0", str(script), *ARGS]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSCALE_OWN_JOB")}
    env.pop("PYTHONPATH", None)
    try:
        done = subprocess.run(
            argv, env=env, cwd=job, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    finally:
        kill_mentioning(str(script))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "done: 64 steps on 2 processes" in done.stdout  # its own end: every step ran
    return losses(job)


def test_the_slow_loader_is_named_with_rank_and_kind_on_every_surface(
    slow_run: OwnRun, tmp_path: Path
) -> None:
    assert_straggler_on_every_surface(slow_run, SLOW_RANK, "input", tmp_path / "r")


def test_every_rank_stops_at_the_agreed_step_and_none_is_left(slow_run: OwnRun) -> None:
    """Exit 0, each rank's measurement says the probe ended it after W + N optimizer steps, and
    no process of the job (agent, ranks, the loader worker) outlives the run."""
    assert slow_run.returncode == 0, slow_run.said()
    assert slow_run.leftovers == [], slow_run.leftovers
    ranks, findings = read_rank_files(rank_files(slow_run))
    assert [r.rank for r in ranks] == list(range(RANKS)), findings
    for rank in ranks:
        assert rank.steps == slow_run.steps, (rank.rank, rank.steps)
        # what only a user's job records (OwnJobMeasurement): the probe's stop at W + N
        assert getattr(rank, "stopped", None) is True, rank.rank
        assert getattr(rank, "optimizer_steps", None) == slow_run.warmup + slow_run.steps
    # every rank timed the cell's calibration after that same step, kept once in the result
    calibrations = [r.calibration for r in stored_result(slow_run).ranks]
    assert all(c is not None and c.timer == "thread_time" for c in calibrations)
    assert [len(c.device_s) for c in calibrations if c] == [1] * RANKS
    assert [len(c.device_s[0]) for c in calibrations if c] == [CALIBRATION_REPS] * RANKS
    # the script's own end ("done: 64 steps on 2 processes") never came: the probe ended it
    job_text = "".join(text for _, text in text_files(slow_run.root))
    assert "steps on 2 processes" not in job_text


def test_samples_per_step_sum_the_accumulated_batches(slow_run: OwnRun) -> None:
    """Two batches of 16 per optimizer step: 32 samples per rank and step."""
    assert slow_run.returncode == 0, slow_run.said()
    ranks, _ = read_rank_files(rank_files(slow_run))
    for rank in ranks:
        samples = getattr(rank, "samples_per_step", None)
        assert samples == [GRAD_ACCUM * BATCH] * slow_run.steps, (rank.rank, samples)


def test_the_jobs_own_output_is_in_the_folder_not_in_torchscales(slow_run: OwnRun) -> None:
    assert slow_run.returncode == 0, slow_run.said()
    holding = [p for p, text in text_files(slow_run.root) if JOB_LINE in text]
    assert holding, "no file of the result folder holds the job's own output"
    for stream in (slow_run.stdout, slow_run.stderr):
        assert JOB_LINE not in stream, slow_run.said()
        assert "loss " not in stream, slow_run.said()


def test_the_probed_job_logs_the_same_losses_bit_for_bit(
    slow_run: OwnRun, bare: list[float]
) -> None:
    assert slow_run.returncode == 0, slow_run.said()
    probed = losses(slow_run.job)
    assert len(probed) == LOGGED_TRACED and len(set(probed)) > 1  # a loss a step, and they move
    assert probed == bare[:LOGGED_TRACED]


def test_each_rank_traces_the_window_and_analyze_agrees_with_the_run(
    slow_run: OwnRun, tmp_path: Path
) -> None:
    assert slow_run.returncode == 0, slow_run.said()
    ranks = rank_files(slow_run)
    traces = [f"rank{r}.trace.json.gz" for r in range(RANKS)]
    assert sorted(p.name for p in ranks.glob("rank*.trace.json.gz")) == traces
    for rank in range(RANKS):
        record = json.loads((ranks / f"rank{rank}.phases.json").read_text())
        assert record["steps"] == list(range(1, DEFAULT_OWN_TRACE_STEPS + 1))
        measured = json.loads((ranks / f"rank{rank}.measurement.json").read_text())
        assert measured["steps"] == STEPS  # the traced steps are not among the measured
    result = stored_result(slow_run)
    assert result.profile is not None and result.profile.active == DEFAULT_OWN_TRACE_STEPS
    assert result.profile.files == traces
    stored = ProfileAnalysis.model_validate_json((ranks / "analysis.json").read_text())
    assert stored.ranks_analysed == RANKS and stored.diagnosis is not None
    # the run's verdict is its measured steps' (every step of every rank); the traces' analysis
    # is the detail beside it, never the verdict of a few traced steps
    assert result.diagnosis is not None and result.diagnosis.source != "traces"
    assert stored.diagnosis.source == "traces"
    out = tmp_path / "analysis.json"
    again = CliRunner().invoke(app, ["profile", "analyze", str(ranks), "--output", str(out)])
    assert again.exit_code == 0, again.output
    analysed = ProfileAnalysis.model_validate_json(out.read_text())
    assert analysed.diagnosis == stored.diagnosis


def test_the_fix_names_the_jobs_own_loader_settings(slow_run: OwnRun, tmp_path: Path) -> None:
    """A plain loop with one loader worker, not persistent: the slow loader's fix, in the
    terminal's -v form and the full report, names that DataLoader's arguments from what the
    job set (more than its 1 worker), never torchscale's config keys."""
    assert slow_run.returncode == 0, slow_run.said()
    facts = stored_result(slow_run).job
    assert facts is not None and facts.framework == "pytorch", facts
    assert (facts.num_workers, facts.persistent_workers, facts.prefetch_factor) == (1, False, 2)
    argv = ["report", "-s", str(slow_run.root), "-f", "md", "--full", "-o", str(tmp_path)]
    shown = CliRunner().invoke(app, argv)
    assert shown.exit_code == 0, shown.output
    (md,) = sorted(tmp_path.rglob("*.md"))
    fixes = [line for line in md.read_text().splitlines() if "recommendation:" in line]
    loader = next(line for line in fixes if "waits on its DataLoader" in line)
    said = "set DataLoader(num_workers=N, persistent_workers=True, prefetch_factor=4), N more "
    assert said + "than its 1, about the cores per rank;" in loader
    assert "pin_memory" not in loader  # CPU ranks: nothing is copied to a device
    assert not [line for line in fixes if "measurement." in line or "--set " in line], fixes
