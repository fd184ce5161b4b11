"""A next step in a user's job's own terms: the settings its framework exposes for the loader,
gradient communication and per-rank work (TrainingArguments for the Hugging Face Trainer,
Lightning's Trainer and DDPStrategy, accelerate's Accelerator, a plain loop's DataLoader and
DistributedDataParallel), from what the probe saw of the job (`JobFacts`). A built-in cell's
advice stays in torchscale's terms (contracts/wording/problems.py)."""

from __future__ import annotations

from torchscale.contracts.schema.cell_result import JobFacts

PREFETCH = 4  # the prefetch factor the loader advice names; one already at least this is kept
# where a framework's job builds the DataLoader the advice is about (the Trainer's: its own)
LOADER_PLACE = {
    "lightning": " in train_dataloader()",
    "accelerate": " before accelerator.prepare()",
}
ONCE_PER_N = "the all-reduce then runs once per N micro-batches"


def _loader_settings(job: JobFacts, gpu: bool, prefix: str) -> str:
    """The loader's settings to change, `name=value` with the framework's `prefix`; the ones
    already set as advised are left out (pinned memory only where a GPU copies)."""
    settings = [f"{prefix}num_workers=N"]
    if not job.persistent_workers:
        settings.append(f"{prefix}persistent_workers=True")
    if job.prefetch_factor is None or job.prefetch_factor < PREFETCH:
        settings.append(f"{prefix}prefetch_factor={PREFETCH}")
    if gpu and not job.pin_memory:
        settings.append(f"{prefix}pin_memory=True")
    return ", ".join(settings)


def loader(job: JobFacts, gpu: bool) -> str:
    """What to set where the job builds its loader, N said against its own workers."""
    if job.framework == "hf_trainer":
        where = f"TrainingArguments({_loader_settings(job, gpu, 'dataloader_')})"
    else:
        place = LOADER_PLACE.get(job.framework or "", "")
        where = f"DataLoader({_loader_settings(job, gpu, '')}){place}"
    workers = job.num_workers
    than = f"more than its {workers}, " if workers is not None else ""
    return f"{where}, N {than}about the cores per rank"


DDP_SETTINGS = "bucket_cap_mb=..., gradient_as_bucket_view=True, static_graph=True"
GRADIENT_SYNC = {
    "hf_trainer": (
        f"TrainingArguments(ddp_bucket_cap_mb=..., gradient_accumulation_steps=N), {ONCE_PER_N}"
    ),
    "lightning": (
        f"Trainer(strategy=DDPStrategy({DDP_SETTINGS}), accumulate_grad_batches=N), {ONCE_PER_N}"
    ),
    "accelerate": (
        "Accelerator(gradient_accumulation_steps=N, kwargs_handlers=["
        f"DistributedDataParallelKwargs({DDP_SETTINGS})]) with accelerator.accumulate(model), "
        f"{ONCE_PER_N}"
    ),
    "pytorch": (
        f"DistributedDataParallel(model, {DDP_SETTINGS}), gradient accumulation under "
        "model.no_sync(), a bf16 compression hook (model.register_comm_hook)"
    ),
}


def gradient_sync(job: JobFacts) -> str:
    """Where the job sets DDP's buckets and gradient accumulation, and what to set there."""
    return GRADIENT_SYNC[job.framework or "pytorch"]


def equal_work(job: JobFacts) -> str | None:
    """The job's own switch for length-grouped, equal batches; None: its own sampler's."""
    if job.framework == "hf_trainer":
        return (
            'TrainingArguments(train_sampling_strategy="group_by_length", '
            "dataloader_drop_last=True)"
        )
    return None
