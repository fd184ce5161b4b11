"""`torchscale profile -- torchrun --nproc-per-node 2 SCRIPT` on what users run: a Hugging Face
`Trainer` job and a PyTorch Lightning job (examples/own_job/, written as their authors would,
importing nothing of torchscale), with real ranks on CPU (gloo). The `accelerate` loop under
`accelerate launch` is a scenario of benchmarks/own_job_rates.py (a launch fewer here).

Each run is measured and stopped at the agreed step W + N on every rank with exit 0 and no
process left: its steps counted once per optimizer step (the Trainer's wrapped optimizer,
Lightning's `optimizer.step(closure)` with gradient accumulation), its samples and tokens from
the loaders' dict and tuple batches summed over the micro-batches, its throughput in samples
and tokens per second. The Trainer job, given a slow loader on rank 1, has that rank named,
input, on the terminal, in result.json and in `report -f md`: the Trainer's all-gather of the
token count before every forward is where rank 0 waits for it.

The frameworks are the `jobs` extra (`pip install -e '.[jobs]'`, as CI installs them): without
one, its tests skip, saying so. Nothing is downloaded: the models are built from configs in
code, the data made in memory, and the Hub is off (HF_HUB_OFFLINE=1). Run times are printed by
the runs, never asserted (a loaded machine's rates are not a per-run fact). One launch a
framework, shared by its tests (a launch is most of a test's time).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.own_job_runs import (
    EXAMPLES,
    RANKS,
    TORCHRUN,
    OwnRun,
    assert_straggler_on_every_surface,
    profile_job,
    rank_files,
    stored_result,
    text_files,
)
from torchscale.interfaces.cli.app import app

pytestmark = pytest.mark.slow

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
SLOW_RANK, SLOW_MS = 1, 30


@dataclass(frozen=True)
class Job:
    script: str
    package: str  # what the script imports: the test skips without it
    warmup: int
    steps: int
    batch: int  # per rank and micro-batch
    grad_accum: int
    seq_len: int  # tokens per sample
    args: tuple[str, ...]  # besides --grad-accum and --max-steps

    @property
    def slow(self) -> bool:
        return "--slow-rank" in self.args

    @property
    def samples(self) -> int:
        return self.batch * self.grad_accum


JOBS = {
    # the slow loader: 40 measured steps, the size tests/e2e/test_own_job.py names it with
    "hf_trainer": Job(
        "hf_trainer_train.py", "transformers", 3, 40, 8, 1, 32,
        ("--slow-rank", str(SLOW_RANK), "--slow-ms", str(SLOW_MS), "--output-dir", "hf_out"),
    ),
    # gradient accumulation: the first micro-batch's closure runs outside optimizer.step
    "lightning": Job(
        "lightning_train.py", "lightning", 2, 10, 16, 2, 32, ("--root-dir", "lightning_out")
    ),
}  # fmt: skip


def _profile(name: str, tmp_path_factory: pytest.TempPathFactory) -> OwnRun:
    job = JOBS[name]
    why = f"{job.package} is not installed (pip install -e '.[jobs]')"
    pytest.importorskip(job.package, reason=why)
    args = ("--max-steps", str(job.warmup + job.steps + 20), "--grad-accum", str(job.grad_accum))
    return profile_job(
        tmp_path_factory.mktemp(name),
        EXAMPLES / job.script,
        job.warmup,
        job.steps,
        *args,
        *job.args,
        env=OFFLINE,
        launcher=(TORCHRUN, "--nproc-per-node", str(RANKS)),
        profile_steps=0,  # the traced window is tests/e2e/test_own_job.py's
    )


@pytest.fixture(scope="module")
def hf_trainer_run(tmp_path_factory: pytest.TempPathFactory) -> OwnRun:
    return _profile("hf_trainer", tmp_path_factory)


@pytest.fixture(scope="module")
def lightning_run(tmp_path_factory: pytest.TempPathFactory) -> OwnRun:
    return _profile("lightning", tmp_path_factory)


@pytest.fixture(params=list(JOBS))
def run(request: pytest.FixtureRequest) -> tuple[Job, OwnRun]:
    done: OwnRun = request.getfixturevalue(f"{request.param}_run")
    return JOBS[request.param], done


def test_every_rank_is_measured_and_stopped_at_the_agreed_step(run: tuple[Job, OwnRun]) -> None:
    """Exit 0, every rank's file says the probe ended it after W + N optimizer steps (each
    counted once), and no process of the job outlives the run; the job's own end never came."""
    from torchscale.rank.own_job import read_rank_files

    _, done = run
    assert done.returncode == 0, done.said()
    assert done.leftovers == [], done.leftovers
    ranks, findings = read_rank_files(rank_files(done))
    assert [r.rank for r in ranks] == list(range(RANKS)), findings
    for rank in ranks:
        assert rank.steps == done.steps, (rank.rank, rank.steps)
        assert getattr(rank, "stopped", None) is True, rank.rank
        assert getattr(rank, "optimizer_steps", None) == done.warmup + done.steps
    assert not [p for p, text in text_files(done.root) if "done: " in text]


def test_samples_and_tokens_are_the_loaders_batches_per_optimizer_step(
    run: tuple[Job, OwnRun],
) -> None:
    """Per rank and step: the micro-batches' samples summed (gradient accumulation) and their
    tokens (the Trainer's dict: its attention mask; Lightning's tuple: the integer token
    tensor); the result's throughput has both."""
    from torchscale.rank.own_job import read_rank_files

    job, done = run
    assert done.returncode == 0, done.said()
    ranks, _ = read_rank_files(rank_files(done))
    for rank in ranks:
        assert getattr(rank, "samples_per_step", None) == [job.samples] * done.steps, rank.rank
        tokens = getattr(rank, "tokens_per_step", None)
        assert tokens == [job.samples * job.seq_len] * done.steps, rank.rank
    result = stored_result(done)
    assert result.status == "ok" and result.measured_steps * result.repeats == done.steps
    assert result.cell.batch_size == job.samples and result.cell.world_size == RANKS
    assert result.throughput is not None and result.throughput.samples_per_s > 0
    tokens_per_s = result.throughput.tokens_per_s
    assert tokens_per_s == pytest.approx(result.throughput.samples_per_s * job.seq_len)


@pytest.mark.parametrize("name", [name for name, job in JOBS.items() if job.slow])
def test_a_slow_loader_is_named_on_every_surface(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    done: OwnRun = request.getfixturevalue(f"{name}_run")
    assert_straggler_on_every_surface(done, SLOW_RANK, "input", tmp_path / "r")


def test_the_jobs_framework_and_loader_are_read_so_advice_names_its_own_settings(
    run: tuple[Job, OwnRun], tmp_path: Path
) -> None:
    """The probe reads who steps the optimizer (the Trainer steps through accelerate's
    wrapper: still the Trainer) and the loader's settings (0 workers in both scripts); the
    slow loader's fix names TrainingArguments' own argument, not torchscale's keys."""
    job, done = run
    assert done.returncode == 0, done.said()
    facts = stored_result(done).job
    name = job.script.removesuffix("_train.py")
    assert facts is not None and facts.framework == name, facts
    assert (facts.num_workers, facts.persistent_workers) == (0, False), facts
    if not job.slow:
        return
    argv = ["report", "-s", str(done.root), "-f", "md", "--full", "-o", str(tmp_path)]
    shown = CliRunner().invoke(app, argv)
    assert shown.exit_code == 0, shown.output
    (md,) = sorted(tmp_path.rglob("*.md"))
    fix = next(line for line in md.read_text().splitlines() if "waits on its DataLoader" in line)
    said = "set TrainingArguments(dataloader_num_workers=N, dataloader_persistent_workers=True"
    assert said in fix and "N more than its 0, about the cores per rank" in fix, fix
    assert "num_workers > 0" not in fix and "measurement." not in fix, fix
