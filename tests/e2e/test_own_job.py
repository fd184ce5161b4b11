"""`torchscale profile -- torchrun ... train.py` on a user's own, unmodified DDP script
(examples/own_job/ddp_train.py: written as its author would, it imports nothing of
torchscale), with real torchrun ranks on CPU (gloo).

One run, shared by every test here (a launch is most of a test's time): the script's own bug, a
Dataset that decodes slowly on rank 1 (`--slow-rank 1 --slow-ms 30`), with gradient
accumulation (2 micro-batches a step) and a DataLoader worker. The slow loader is named with
its rank and kind (input) on the terminal, in result.json and in `report -f md`; every rank
ends at the agreed step W + N with exit 0 and leaves no process behind (its loader worker
included); the samples per step are the micro-batches' sum; the job's own output is kept in the
result folder, never in torchscale's. How often a balanced run names nobody is a rate for a
benchmark, not a per-run assert (issue 62: this machine cannot hold it to 95 %).

The runs and what they are read by: tests/own_job_runs.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.own_job_runs import (
    EXAMPLES,
    RANKS,
    OwnRun,
    assert_straggler_on_every_surface,
    profile_job,
    rank_files,
    text_files,
)

pytestmark = pytest.mark.slow

SCRIPT = EXAMPLES / "ddp_train.py"
SLOW_RANK, SLOW_MS = 1, 30
# 40 measured steps of batches 30 ms slower: the size tests/e2e/test_straggler_kinds.py found
# holds on a loaded machine (here 2 such batches a step)
WARMUP, STEPS = 4, 40
# 2 batches of 16 per optimizer step, one loader worker: 4096 samples over 2 ranks make 64
# steps an epoch, so the stop at W + N comes long before the script's own end (2 epochs)
GRAD_ACCUM, BATCH, DATASET = 2, 16, 4096
JOB_LINE = "step 10 loss"  # what rank 0 of the job prints at its 10th optimizer step


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory: pytest.TempPathFactory) -> OwnRun:
    args = ("--slow-rank", str(SLOW_RANK), "--slow-ms", str(SLOW_MS))
    args += ("--grad-accum", str(GRAD_ACCUM), "--batch-size", str(BATCH), "--num-workers", "1")
    args += ("--dataset-size", str(DATASET))
    return profile_job(tmp_path_factory.mktemp("own_job"), SCRIPT, WARMUP, STEPS, *args)


def test_the_slow_loader_is_named_with_rank_and_kind_on_every_surface(
    slow_run: OwnRun, tmp_path: Path
) -> None:
    assert_straggler_on_every_surface(slow_run, SLOW_RANK, "input", tmp_path / "r")


def test_every_rank_stops_at_the_agreed_step_and_none_is_left(slow_run: OwnRun) -> None:
    """Exit 0, each rank's measurement says the probe ended it after W + N optimizer steps, and
    no process of the job (agent, ranks, the loader worker) outlives the run."""
    from torchscale.rank.own_job import read_rank_files

    assert slow_run.returncode == 0, slow_run.said()
    assert slow_run.leftovers == [], slow_run.leftovers
    ranks, findings = read_rank_files(rank_files(slow_run))
    assert [r.rank for r in ranks] == list(range(RANKS)), findings
    for rank in ranks:
        assert rank.steps == slow_run.steps, (rank.rank, rank.steps)
        # what only a user's job records (OwnJobMeasurement): the probe's stop at W + N
        assert getattr(rank, "stopped", None) is True, rank.rank
        assert getattr(rank, "optimizer_steps", None) == slow_run.warmup + slow_run.steps
    # the script's own end ("done: 128 steps on 2 processes") never came: the probe ended it
    job_text = "".join(text for _, text in text_files(slow_run.root))
    assert "steps on 2 processes" not in job_text


def test_samples_per_step_sum_the_accumulated_batches(slow_run: OwnRun) -> None:
    """Two batches of 16 per optimizer step: 32 samples per rank and step."""
    from torchscale.rank.own_job import read_rank_files

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
