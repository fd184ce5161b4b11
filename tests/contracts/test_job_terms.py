"""A user's job's fix in its own terms (contracts/wording/diagnosis_problems.py, through the
problem's run context): each framework's settings named, the ones the job already set as
advised left out, pinned memory only on a GPU; a built-in cell's fix unchanged."""

from __future__ import annotations

import inspect
import re

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import JobFacts
from torchscale.contracts.wording import diagnosis_problems

STRAGGLER = Finding(code="problem.straggler", figures={"rank": 1, "kind": "input", "device": "cpu"})
EXPOSED = Finding(code="problem.exposed_comm", figures={"backend": "gloo", "gloo": True})


def job(framework: str, **loader: object) -> diagnosis_problems.Run:
    facts = JobFacts(framework=framework, **loader)  # type: ignore[arg-type]
    return diagnosis_problems.Run(single_node=True, job=facts)


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
    said = diagnosis_problems.recommendation(STRAGGLER, run)
    assert said.startswith("rank 1 waits on its DataLoader: ") and loader in said, said
    assert "N more than its 2, about the cores per rank" in said
    assert comm in diagnosis_problems.recommendation(EXPOSED, run)


def test_settings_already_as_advised_are_left_out_and_pinning_is_for_gpus() -> None:
    set_well = JobFacts(
        framework="pytorch", num_workers=4, persistent_workers=True, prefetch_factor=8
    )
    said = diagnosis_problems.recommendation(STRAGGLER, diagnosis_problems.Run(job=set_well))
    assert "DataLoader(num_workers=N), N more than its 4" in said, said
    on_gpu = diagnosis_problems.recommendation(
        STRAGGLER, diagnosis_problems.Run(job=set_well, gpu=True)
    )
    assert "DataLoader(num_workers=N, pin_memory=True)" in on_gpu, on_gpu


def test_advice_that_changes_what_is_trained_says_what_and_when() -> None:
    """Gradient accumulation multiplies the samples an optimizer step sees: said wherever it is
    advised; static_graph=True with the condition it needs; equal batches in what each
    framework leaves to the user (Lightning and accelerate shard the loader themselves, so no
    DistributedSampler of the user's is advised to them)."""
    for framework in ("pytorch", "hf_trainer", "lightning", "accelerate"):
        sync = diagnosis_problems.gradient_sync(JobFacts(framework=framework))  # type: ignore[arg-type]
        assert "each optimizer step trains on N times the samples" in sync, framework
        if "static_graph=True" in sync:
            assert "static_graph=True only where every step runs the same graph" in sync
    gloo = diagnosis_problems.recommendation(EXPOSED, diagnosis_problems.Run())
    assert "N times the samples" in gloo and "static_graph" not in gloo
    nccl = Finding(code="problem.exposed_comm", figures={"backend": "nccl"})
    said = diagnosis_problems.recommendation(nccl, diagnosis_problems.Run())
    assert "N times the samples" in said and "only where every step runs the same" in said
    turns = Finding(code="problem.imbalance.turns", figures={})
    for framework in ("lightning", "accelerate"):
        said = diagnosis_problems.recommendation(turns, job(framework))
        assert "DistributedSampler with drop_last" not in said, said
    assert "Lightning adds the DistributedSampler itself" in diagnosis_problems.recommendation(
        turns, job("lightning")
    )
    assert "accelerator.prepare(dataloader) shards it" in diagnosis_problems.recommendation(
        turns, job("accelerate")
    )


def test_a_built_in_cells_fix_is_in_torchscales_terms() -> None:
    said = diagnosis_problems.recommendation(STRAGGLER, diagnosis_problems.Run(single_node=True))
    assert "raise num_workers, set pin_memory=True" in said
    turns = Finding(code="problem.imbalance.turns", figures={})
    assert "DistributedSampler" in diagnosis_problems.recommendation(
        turns, diagnosis_problems.Run()
    )
    trainer = diagnosis_problems.recommendation(turns, job("hf_trainer"))
    assert (
        'TrainingArguments(train_sampling_strategy="group_by_length", dataloader_drop_last=True)'
        in trainer
    )


# Every class the advice names in a job's own terms, and whether building one is cheap and
# side-effect free here (else its keywords are bound against its signature only).
ADVISED = {
    "TrainingArguments": ("transformers", True),
    "Trainer": ("lightning.pytorch", False),
    "DDPStrategy": ("lightning.pytorch.strategies", True),
    "Accelerator": ("accelerate", False),
    "DistributedDataParallelKwargs": ("accelerate.utils", True),
    "DataLoaderConfiguration": ("accelerate.utils", True),
    "DataLoader": ("torch.utils.data", True),
    "DistributedDataParallel": ("torch.nn.parallel", False),
}


def _advice_texts() -> list[str]:
    """Every setting job_terms can write, for every framework and every loader state."""
    texts = []
    for framework in ("pytorch", "hf_trainer", "lightning", "accelerate"):
        for facts in ({}, {"num_workers": 2, "persistent_workers": True, "prefetch_factor": 8}):
            job = JobFacts(framework=framework, **facts)  # type: ignore[arg-type]
            texts += [diagnosis_problems.loader(job, gpu) for gpu in (True, False)]
            texts += [
                diagnosis_problems.gradient_sync(job),
                diagnosis_problems.equal_work(job),
            ]
    return texts


def _calls(text: str) -> list[str]:
    """The `Class(...)` expressions of `text` whose class the advice names, outermost only."""
    found, at = [], 0
    pattern = re.compile(r"\b(" + "|".join(ADVISED) + r")\(")
    while (match := pattern.search(text, at)) is not None:
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        found.append(text[match.start() : end + 1])
        at = end + 1
    return found


@pytest.mark.slow  # imports transformers, lightning and accelerate: seconds
def test_every_setting_the_advice_names_exists_at_the_jobs_extras_versions() -> None:
    """Each `Class(keyword=...)` the advice writes binds to that class at the versions the
    `jobs` extra pins, and is built where building is cheap: a renamed or removed argument
    (TrainingArguments' group_by_length became train_sampling_strategy) fails here."""
    namespace: dict[str, object] = {"N": 2, "model": object()}
    for name, (module, build) in ADVISED.items():
        cls = getattr(pytest.importorskip(module, reason="pip install -e '.[jobs]'"), name)

        def checked(*args: object, _cls: type = cls, _build: bool = build, **kwargs: object):
            if _cls.__name__ == "DataLoader":
                args = ([0, 1, 2, 3], *args)  # the advice leaves the dataset out
            bound = inspect.signature(_cls).bind_partial(*args, **kwargs)
            return _cls(*bound.args, **bound.kwargs) if _build else bound

        namespace[name] = checked
    texts = _advice_texts()
    named = {name for text in texts for name in re.findall(r"\b(\w+)\(", text)}
    assert set(ADVISED) <= named, "a class listed here is no longer advised: drop it"
    calls = [call for text in texts for call in _calls(text)]
    for call in calls:
        expression = call.replace("...", "25")
        eval(compile(expression, "<advice>", "eval"), namespace)  # our own words, not input
