"""A user's job's fix in its own terms (contracts/wording/job_terms.py through problems.py's
run context): each framework's settings named, the ones the job already set as advised left
out, pinned memory only on a GPU; a built-in cell's fix unchanged."""

from __future__ import annotations

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import JobFacts
from torchscale.contracts.wording import problems

STRAGGLER = Finding(code="problem.straggler", figures={"rank": 1, "kind": "input", "device": "cpu"})
EXPOSED = Finding(code="problem.exposed_comm", figures={"backend": "gloo", "gloo": True})


def job(framework: str, **loader: object) -> problems.Run:
    facts = JobFacts(framework=framework, **loader)  # type: ignore[arg-type]
    return problems.Run(single_node=True, job=facts)


@pytest.mark.parametrize(
    ("framework", "loader", "comm"),
    [
        ("pytorch", "set DataLoader(num_workers=N", "DistributedDataParallel(model, bucket_cap"),
        ("hf_trainer", "set TrainingArguments(dataloader_num_workers=N", "ddp_bucket_cap_mb="),
        ("lightning", ") in train_dataloader()", "DDPStrategy(bucket_cap_mb="),
        ("accelerate", ") before accelerator.prepare()", "DistributedDataParallelKwargs("),
    ],
)
def test_each_framework_gets_its_own_settings(framework: str, loader: str, comm: str) -> None:
    run = job(framework, num_workers=2)
    said = problems.recommendation(STRAGGLER, run)
    assert said.startswith("rank 1 waits on its DataLoader: ") and loader in said, said
    assert "N more than its 2, about the cores per rank" in said
    assert comm in problems.recommendation(EXPOSED, run)


def test_settings_already_as_advised_are_left_out_and_pinning_is_for_gpus() -> None:
    set_well = JobFacts(
        framework="pytorch", num_workers=4, persistent_workers=True, prefetch_factor=8
    )
    said = problems.recommendation(STRAGGLER, problems.Run(job=set_well))
    assert "DataLoader(num_workers=N), N more than its 4" in said, said
    on_gpu = problems.recommendation(STRAGGLER, problems.Run(job=set_well, gpu=True))
    assert "DataLoader(num_workers=N, pin_memory=True)" in on_gpu, on_gpu


def test_a_built_in_cells_fix_is_in_torchscales_terms() -> None:
    said = problems.recommendation(STRAGGLER, problems.Run(single_node=True))
    assert "raise num_workers, set pin_memory=True" in said
    turns = Finding(code="problem.imbalance.turns", figures={})
    assert "DistributedSampler" in problems.recommendation(turns, problems.Run())
    trainer = problems.recommendation(turns, job("hf_trainer"))
    assert "TrainingArguments(group_by_length=True, dataloader_drop_last=True)" in trainer
