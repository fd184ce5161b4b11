"""The GPUs per node a Slurm sweep's cells are judged against: the partition's, as its
controller counts them (Gres), or, where it cannot be asked (a laptop, a login node during an
outage), the config's, said in one line. Never the submitting host's: a login node without
GPUs would otherwise skip every CUDA cell, and a dry run there would write no script.

Pure: the question to Slurm comes in as a function (`client.partition_gpus` in a run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torchscale.contracts.errors import SlurmError, UsageError
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan import cell_shapes
from torchscale.orchestration.schedulers.slurm.client import PartitionGpus

AskPartition = Callable[[str | None], PartitionGpus | None]
NO_CONTROLLER = "no Slurm controller reachable"


@dataclass(frozen=True)
class JudgedGpus:
    """What the plan is told about the nodes' GPUs (`plan.Machine`)."""

    count: int
    source: str | None  # named in a skip reason that cites the count
    note: str | None  # how the count was known, one line among the plan's notes


def judged_gpus(config: BenchConfig, ask: AskPartition) -> JudgedGpus:
    """The GPUs per node of the nodes `config`'s cells run on. CPU cells need no GPU count, so
    Slurm is not asked for them; a count the config states that exceeds the partition's is
    refused (Slurm would refuse every job)."""
    slurm = config.launcher.slurm
    stated = slurm.gpus_per_node
    if config.device == "cpu":
        return JudgedGpus(stated or 0, None, None)
    named = f"partition {slurm.partition!r}" if slurm.partition else "the default partition"
    try:
        answer = ask(slurm.partition)
    except SlurmError as exc:
        # an answer, not an outage: the run's node check stops on it (submission.check_nodes)
        unknown = "partition" in str(exc).lower() and "not found" in str(exc).lower()
        return _from_config(config, f"Slurm has no {named}" if unknown else NO_CONTROLLER)
    if answer is None:
        return _from_config(config, f"Slurm listed no node of {named}")
    named = f"partition {answer.partition!r}"
    if stated is not None and stated > answer.most:
        raise UsageError(
            f"launcher.slurm.gpus_per_node: {stated} asked, {named} has at most {answer.most} "
            "GPU(s) per node (Slurm's Gres): Slurm would refuse every job"
        )
    count = answer.most if stated is None else stated
    spread = f"{answer.fewest} to " if answer.fewest != answer.most else ""
    has = f"{spread}{answer.most}"
    return JudgedGpus(
        count,
        f"{named}, Slurm's Gres",
        f"{named} has {has} GPU(s) per node (Slurm's Gres): cells judged against {count}",
    )


def _from_config(config: BenchConfig, why: str) -> JudgedGpus:
    """The config's GPUs per node: launcher.slurm.gpus_per_node, else (device cuda) the most
    ranks a node of the sweep runs, as every rank has a GPU of its own. `device: auto` stays
    on CPU without a stated count: the config's ranks say nothing of the nodes' GPUs."""
    stated = config.launcher.slurm.gpus_per_node
    if stated is not None:
        count, key = stated, "launcher.slurm.gpus_per_node"
    elif config.device == "cuda":
        count, key = max(shape.nproc_per_node for shape in cell_shapes(config)), "gpu_counts"
    else:
        return JudgedGpus(
            0,
            None,
            f"{why}: device auto runs the cells on CPU (set device: cuda or "
            "launcher.slurm.gpus_per_node for GPU nodes)",
        )
    note = f"{why}: cells judged against the config's {count} GPUs per node ({key})"
    return JudgedGpus(count, f"per the config: {why}", note)
