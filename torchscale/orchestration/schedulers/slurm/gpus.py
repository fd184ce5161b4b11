"""The GPUs per node a Slurm sweep's cells are judged against: the partition's, as its
controller counts them (Gres), or, where it cannot be asked (a laptop, a login node during an
outage) or counts no GPU Gres on the partition (a site that leaves GPUs out of Slurm), the
config's, said in one line. Never the submitting host's: a login node without
GPUs would otherwise skip every CUDA cell, and a dry run there would write no script.

Pure: the question to Slurm comes in as a function (`client.ask_partition` in a run), asked
once; its answer (or the error that stood for one) goes on with the plan to the launcher,
which checks the partition's node limits against it rather than asking again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torchscale.contracts.errors import UsageError
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.nodes import cell_shapes
from torchscale.orchestration.schedulers.slurm.client import PartitionAnswer

AskPartition = Callable[[str | None], PartitionAnswer]
NO_CONTROLLER = "no Slurm controller reachable"


@dataclass(frozen=True)
class JudgedGpus:
    """What the plan is told about the nodes' GPUs (`plan.Machine`)."""

    count: int
    source: str | None  # named in a skip reason that cites the count
    note: str | None  # how the count was known, one line among the plan's notes
    answer: PartitionAnswer | None = None  # what Slurm said, handed on; None: not asked


def judged_gpus(config: BenchConfig, ask: AskPartition) -> JudgedGpus:
    """The GPUs per node of the nodes `config`'s cells run on. CPU cells need no GPU count, so
    Slurm is not asked for them; a count the config states that exceeds the partition's is
    refused (Slurm would refuse every job). A partition whose nodes have no GPU Gres may still
    have GPUs (a site that does not count them in Slurm): the config's count stands there."""
    slurm = config.launcher.slurm
    stated = slurm.gpus_per_node
    if config.device == "cpu":
        return JudgedGpus(stated or 0, None, None)
    named = f"partition {slurm.partition!r}" if slurm.partition else "the default partition"
    answer = ask(slurm.partition)
    if answer.error is not None:
        # an answer, not an outage: the run's node check stops on it (submission.check_nodes)
        text = str(answer.error).lower()
        unknown = "partition" in text and "not found" in text
        why = f"Slurm has no {named}" if unknown else NO_CONTROLLER
        return _from_config(config, why, answer)
    gpus = answer.gpus
    if gpus is None:
        return _from_config(config, f"Slurm listed no node of {named}", answer)
    named = f"partition {gpus.partition!r}"
    if gpus.most == 0:
        return _from_config(config, f"Slurm counts no GPU Gres on {named}", answer)
    if stated is not None and stated > gpus.most:
        raise UsageError(
            f"launcher.slurm.gpus_per_node: {stated} asked, {named} has at most {gpus.most} "
            "GPU(s) per node (Slurm's Gres): Slurm would refuse every job"
        )
    count = gpus.most if stated is None else stated
    has = f"{gpus.fewest} to {gpus.most}" if gpus.fewest != gpus.most else str(gpus.most)
    note = f"{named} has {has} GPU(s) per node (Slurm's Gres): cells judged against {count}"
    return JudgedGpus(count, f"{named}, Slurm's Gres", note, answer)


def counts_no_gpus(answer: PartitionAnswer | None) -> bool:
    """Slurm answered that no node of the partition has a gpu Gres: a job that asks for GPUs
    there (--gpus-per-node) is refused by sbatch, so none is asked (the nodes' GPUs, if any,
    are all the job's to use where Slurm does not count them)."""
    return answer is not None and answer.gpus is not None and answer.gpus.most == 0


def _from_config(config: BenchConfig, why: str, answer: PartitionAnswer) -> JudgedGpus:
    """The config's GPUs per node: launcher.slurm.gpus_per_node, else (device cuda) the most
    ranks a node of the sweep runs, as every rank has a GPU of its own. `device: auto` stays
    on CPU without a stated count: the config's ranks say nothing of the nodes' GPUs."""
    stated = config.launcher.slurm.gpus_per_node
    if stated is not None:
        count, key = stated, "launcher.slurm.gpus_per_node"
    elif config.device == "cuda":
        count, key = max(shape.nproc_per_node for shape in cell_shapes(config)), "gpu_counts"
    else:
        note = (
            f"{why}: device auto runs the cells on CPU (set device: cuda or "
            "launcher.slurm.gpus_per_node for GPU nodes)"
        )
        return JudgedGpus(0, None, note, answer)
    note = f"{why}: cells judged against the config's {count} GPUs per node ({key})"
    return JudgedGpus(count, f"per the config: {why}", note, answer)
