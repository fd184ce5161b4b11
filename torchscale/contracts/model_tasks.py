"""Which training task each built-in model runs, and so which data sources can feed it.

Read from the models' specs (torchscale/contracts/model_specs/), free of torch, so the plan can
refuse an impossible (model, source) pair before anything is launched. A record read from disk is
decoded per task (torchscale/rank/data/records.py), so the batches have exactly the shapes and
dtypes of the model's synthetic batches.
"""

from __future__ import annotations

from torchscale.contracts.catalog import is_plugin_model
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.model_specs.spec import Task

# built-in model -> its task (the batch maker in torchscale/rank/models/training_tasks.py it uses)
MODEL_TASKS: dict[str, Task] = {name: spec.task for name, spec in BUILTIN.items()}
# the models that take RGB images (CIFAR-100 can feed them); tiny-mlp classifies features
IMAGE_MODELS = frozenset(name for name, spec in BUILTIN.items() if spec.takes_images)


def task_of(model: str) -> Task | None:
    """The task of a built-in model; None for a plug-in (or an unknown name)."""
    return MODEL_TASKS.get(model)


def unsupported(source: str, model: str) -> Finding | None:
    """Why `source` cannot feed `model` (a cell skip reason, worded in
    contracts/wording/plan.py), or None when it can."""
    if source == "synthetic":
        return None
    if is_plugin_model(model) or task_of(model) is None:
        return Finding(code="plan.data_synthetic_only", figures={"source": source})
    if source == "cifar100" and model not in IMAGE_MODELS:
        figures = {"source": source, "models": sorted(IMAGE_MODELS)}
        return Finding(code="plan.data_images_only", figures=figures)
    return None
