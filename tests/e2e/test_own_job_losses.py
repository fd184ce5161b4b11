"""The probe never changes what a user's job computes (issue 73, point 4): the same DDP script
(examples/own_job/ddp_train.py, 2 gloo ranks under torchrun) with dropout, gradient
accumulation and a DataLoader worker logs the same losses bit for bit bare and under the probe
as `torchscale profile --let-it-finish` sets it (every step after the warm-up measured). Dropout
masks, the sampler's shuffle and the worker's seed all come from the job's random streams, so a
draw the probe took from them would change the losses: the third run shows the comparison sees
exactly that, a sitecustomize chained after the carrier that draws one number at step 3.

The runs' losses come from the script's own metrics log (`--metrics`, rank 0's loss per
optimizer step, as JSON floats: exact). The script runs from the test's folder: its path marks
the job's processes, so any left behind are found and killed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT, kill_mentioning, processes_mentioning
from torchscale.orchestration.own_job.command import OwnJobRequest, job_overrides
from torchscale.rank.own_job import read_rank_files

pytestmark = pytest.mark.slow  # real torchrun jobs

SCRIPT = REPO_ROOT / "examples" / "own_job" / "ddp_train.py"
RANKS, WARMUP, BATCH, ACCUM, STEPS = 2, 2, 8, 2, 8
DRAW_AT = 3  # the optimizer step after which the sabotage draws one random number
# a site's own sitecustomize, chained after the carrier, that takes one draw from torch's
# global stream in each rank: what the probe must never do
DRAWING_SITE = textwrap.dedent(
    f"""\
    import os

    if "RANK" in os.environ:  # a rank, not torchrun's agent
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        calls = []

        def draw(optimizer, args, kwargs):
            calls.append(1)
            if len(calls) == {DRAW_AT}:
                torch.rand(1)

        register_optimizer_step_post_hook(draw)
    """
)
TIMEOUT_S = 240


def run_job(folder: Path, name: str, probe: bool, extra_path: Path | None = None) -> list[float]:
    """Rank 0's losses, one per optimizer step, of one torchrun of the script from `folder`;
    `probe`: with what `torchscale profile --let-it-finish --warmup-steps WARMUP` adds to the
    environment; `extra_path`: a folder after it on PYTHONPATH."""
    script = folder / SCRIPT.name
    metrics = folder / f"{name}.jsonl"
    argv = [
        sys.executable,
        *("-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={RANKS}"),
        "--max-restarts=0",
        str(script),
        *("--epochs", "1", "--batch-size", str(BATCH), "--grad-accum", str(ACCUM)),
        *("--dataset-size", str(RANKS * BATCH * ACCUM * STEPS), "--hidden", "32"),
        *("--dropout", "0.2", "--num-workers", "1", "--metrics", str(metrics)),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSCALE_OWN_JOB")}
    env["OMP_NUM_THREADS"] = "1"
    env.pop("PYTHONPATH", None)  # the job's own path: nothing of torchscale's
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    if probe:
        request = OwnJobRequest(tuple(argv), WARMUP, 0, let_it_finish=True, timeout_s=0)
        env |= job_overrides(request, folder / name, env, folder / f"{name}-error.json")
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    finally:
        kill_mentioning(str(script))
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line)["loss"] for line in metrics.read_text().splitlines()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    job = tmp_path_factory.mktemp("own_job_losses")
    shutil.copy(SCRIPT, job / SCRIPT.name)
    site = job / "drawing_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(DRAWING_SITE)
    return job


@pytest.fixture(scope="module")
def bare(folder: Path) -> list[float]:
    return run_job(folder, "bare", probe=False)


def test_the_probed_job_logs_the_same_losses_bit_for_bit(folder: Path, bare: list[float]) -> None:
    probed = run_job(folder, "probed", probe=True)
    assert len(bare) == STEPS and len(set(bare)) > 1  # a loss per step, and they move
    assert probed == bare
    ranks, findings = read_rank_files(folder / "probed")
    assert findings == []
    assert [(r.rank, r.steps) for r in ranks] == [(0, STEPS - WARMUP), (1, STEPS - WARMUP)]
    assert not processes_mentioning(str(folder / SCRIPT.name))


def test_one_draw_from_the_jobs_random_stream_changes_the_losses(
    folder: Path, bare: list[float]
) -> None:
    """The comparison above can fail: one number drawn after step DRAW_AT (by a site's own
    sitecustomize, the probe active too) changes every loss after it and none before."""
    drawn = run_job(folder, "drawn", probe=True, extra_path=folder / "drawing_site")
    assert drawn[:DRAW_AT] == bare[:DRAW_AT]
    assert all(a != b for a, b in zip(drawn[DRAW_AT:], bare[DRAW_AT:], strict=True))
    ranks, _ = read_rank_files(folder / "drawn")
    assert [r.steps for r in ranks] == [STEPS - WARMUP] * RANKS  # the probe was there as well
