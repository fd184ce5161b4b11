"""The plan of a sweep folder that kept no sweep.json (written before sweeps kept one): its
config.yaml expanded again by today's planner, on a machine like the one its env.json
describes, so a stopped sweep's report names the cells it never started. The report matches
it to the folder by label and drops it where it does not describe the folder."""

from __future__ import annotations

import logging

from torchscale.contracts.errors import TorchScaleError
from torchscale.contracts.schema.sweep_state import PlannedCell
from torchscale.offline.results.experiment import Experiment

log = logging.getLogger(__name__)


def config_plan(experiment: Experiment) -> list[PlannedCell] | None:
    """The planned cells of `experiment`'s config (None: no config, or one today's planner
    refuses)."""
    if experiment.sweep is not None or not experiment.config:
        return None
    if experiment.config.get("batch_sizes") == "auto":  # sized by the GPU's memory: not known
        return None
    # planning is the host's: imported only for a folder that needs it
    from torchscale.orchestration.config.loader import validate_data
    from torchscale.orchestration.plan.build import build_plan
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.sweep import planned_cells

    env = experiment.environment
    gpus = env.get("gpus")
    cores = env.get("usable_cores") or env.get("cpu_count") or 1
    count = len(gpus) if isinstance(gpus, list) else 0
    machine = Machine(gpu_count=count, cpu_cores=int(cores), gpus_source="env.json")
    try:
        config = validate_data(dict(experiment.config), str(experiment.root / "config.yaml"))
        return planned_cells(build_plan(config, machine))
    except (TorchScaleError, ValueError, TypeError) as exc:
        log.info("report: %s: its config.yaml does not plan today: %s", experiment.root, exc)
        return None
