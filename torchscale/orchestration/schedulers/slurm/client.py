"""Slurm's own commands (sbatch, squeue, scontrol, scancel) as argv, run and read.

Only what works on every Slurm: `sacct` needs accounting storage, which many clusters (and test
clusters) lack, so a job's state comes from `squeue` while it is queued or running and from
`scontrol show job` after it ended (kept for MinJobAge, 300 s by default).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from torchscale.contracts.errors import SlurmError, UsageError
from torchscale.contracts.host import run_child

COMMAND_TIMEOUT_S = 60.0
# squeue's states of a job that has not ended
ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
        "SPECIAL_EXIT",
    }
)
_FIELD = re.compile(r"(\w+)=(\S*)")
# a Gres entry's socket or index list, "(S:0-1)", "(IDX:0,2)": may hold commas of its own
_GRES_DETAIL = re.compile(r"\([^)]*\)")


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED, ... or UNKNOWN
    reason: str = ""  # why pending, the node list when running, why it ended; "" for none
    exit_code: str = ""  # scontrol's ExitCode (code:signal) once ended

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES


def missing_client_commands() -> list[str]:
    """Slurm's client commands torchscale uses that are not on PATH (off a cluster: all)."""
    return [n for n in ("sbatch", "squeue", "scontrol", "scancel") if not shutil.which(n)]


def require_sbatch() -> None:
    """A clear error before anything is written when Slurm's client is missing."""
    missing = missing_client_commands()
    if missing:
        raise UsageError(
            f"launcher.kind 'slurm' needs Slurm's client commands on PATH; missing: "
            f"{', '.join(missing)} (run torchscale on a login node of the cluster)"
        )


def run_slurm(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """stdout of a Slurm command; its own message as one SlurmError line when it fails."""
    try:
        done = run_child(argv, COMMAND_TIMEOUT_S, env)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]}: not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{argv[0]} did not answer in {COMMAND_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        message = " ".join((done.stderr or done.stdout).split()) or f"exit {done.returncode}"
        raise SlurmError(f"{argv[0]} failed: {message}")
    return done.stdout


def _no_none(reason: str) -> str:
    """Slurm writes "None" where there is no reason."""
    return "" if reason == "None" else reason


def submit(script: str, env: Mapping[str, str] | None = None) -> str:
    """`sbatch --parsable SCRIPT` -> the job id (a cluster name after ';' is dropped)."""
    out = run_slurm(["sbatch", "--parsable", script], env).strip()
    job_id = out.split(";")[0].strip()
    if not job_id.isdigit():
        raise SlurmError(f"sbatch answered {out!r}, not a job id")
    return job_id


def parse_fields(text: str) -> dict[str, str]:
    """`Key=Value Key=Value` (scontrol -o) as a dict; values with spaces are cut at the
    space, which no field read here has."""
    return {m.group(1): m.group(2) for m in _FIELD.finditer(text)}


def job_states(job_ids: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, JobState]:
    """State of each job: squeue for queued and running ones, scontrol for ended ones;
    UNKNOWN when Slurm no longer knows the job (ended longer ago than MinJobAge)."""
    if not job_ids:
        return {}
    try:
        out = run_slurm(
            ["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i|%T|%R", "--states=all"], env
        )
    except SlurmError as exc:
        # one id that Slurm has forgotten (older than MinJobAge) fails the whole call
        if "Invalid job id" not in str(exc):
            raise
        out = ""
    states: dict[str, JobState] = {}
    for line in out.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) == 3 and parts[0] in job_ids:
            reason = parts[2].strip()
            if reason.startswith("(") and reason.endswith(")"):  # a pending job's reason
                reason = reason[1:-1]
            states[parts[0]] = JobState(parts[0], parts[1], _no_none(reason))
    for job_id in job_ids:
        if job_id not in states or not states[job_id].active:
            states[job_id] = show_job(job_id, env)
    return states


def show_job(job_id: str, env: Mapping[str, str] | None = None) -> JobState:
    """`scontrol show job -o ID`: final state, reason and exit code of an ended job."""
    try:
        fields = parse_fields(run_slurm(["scontrol", "show", "job", "-o", job_id], env))
    except SlurmError as exc:
        if "Invalid job id" in str(exc):
            return JobState(job_id, "UNKNOWN", "no longer known to Slurm")
        raise
    return JobState(
        job_id,
        fields.get("JobState", "UNKNOWN"),
        _no_none(fields.get("Reason", "")),
        fields.get("ExitCode", ""),
    )


def cancel(job_ids: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    if job_ids:
        run_slurm(["scancel", *job_ids], env)


def hostnames(nodelist: str, env: Mapping[str, str] | None = None) -> list[str]:
    """`n[1-2]` -> ['n1', 'n2'] as Slurm expands it."""
    return run_slurm(["scontrol", "show", "hostnames", nodelist], env).split()


def node_address(node: str, env: Mapping[str, str] | None = None) -> str:
    """The node's address as Slurm knows it (NodeAddr): a node name may not resolve, or
    resolve to loopback, on the other nodes."""
    fields = parse_fields(run_slurm(["scontrol", "show", "node", "-o", node], env))
    return fields.get("NodeAddr") or node


@dataclass(frozen=True)
class PartitionLimits:
    name: str
    total_nodes: int | None
    max_nodes: int | None  # per job; None: UNLIMITED


def partition_limits(
    partition: str | None, env: Mapping[str, str] | None = None
) -> PartitionLimits | None:
    """Node limits of `partition` (or the default one); None when Slurm does not say."""
    out = run_slurm(
        ["scontrol", "show", "partition", "-o", *([partition] if partition else [])], env
    )
    for line in out.splitlines():
        fields = parse_fields(line)
        name = fields.get("PartitionName", "")
        if (name != partition) if partition is not None else (fields.get("Default") != "YES"):
            continue
        total = fields.get("TotalNodes", "")
        most = fields.get("MaxNodes", "")
        return PartitionLimits(
            name, int(total) if total.isdigit() else None, int(most) if most.isdigit() else None
        )
    return None


@dataclass(frozen=True)
class PartitionGpus:
    """The GPUs per node of a partition's nodes, as Slurm's Gres counts them."""

    partition: str
    most: int  # the most GPUs one node has (0: none has a gpu Gres)
    fewest: int
    nodes: int  # nodes of the partition that Slurm listed


def gres_gpus(gres: str) -> int:
    """GPUs in a node's `Gres` field (`scontrol show node`, sinfo's %G), e.g.
    `gpu:h100:8(S:0-1)` -> 8, `gpu:a100:2(S:0),gpu:v100:2(S:1),lscratch:3200` -> 4,
    `(null)` -> 0. An entry is `name[:type][:count]`; without a count it is one."""
    total = 0
    for entry in _GRES_DETAIL.sub("", gres).split(","):
        parts = entry.strip().split(":")
        if parts[0] != "gpu":
            continue
        count = parts[-1] if len(parts) > 1 else ""
        total += int(count) if count.isdigit() else 1
    return total


def partition_gpus_of(nodes_text: str, partition: str) -> PartitionGpus | None:
    """The GPUs per node of `partition`'s nodes in `scontrol show node -o` output (one node a
    line, its partitions in `Partitions=a,b`); None when no listed node is in it."""
    counts = [
        gres_gpus(fields.get("Gres", ""))
        for fields in map(parse_fields, nodes_text.splitlines())
        if "NodeName" in fields and partition in fields.get("Partitions", "").split(",")
    ]
    return PartitionGpus(partition, max(counts), min(counts), len(counts)) if counts else None


@dataclass(frozen=True)
class PartitionAnswer:
    """What Slurm's controller said of a partition, asked once per command while the plan is
    built (the plan hands it on to the launcher): its node limits and its nodes' GPUs (None:
    Slurm named no such partition, or listed none of its nodes), or the error that stood for
    an answer (no controller reachable, a partition Slurm says it lacks)."""

    limits: PartitionLimits | None = None
    gpus: PartitionGpus | None = None
    error: SlurmError | None = None

    def limits_or_raise(self) -> PartitionLimits | None:
        """The limits, as `partition_limits` returns them, or its error raised again."""
        if self.error is not None:
            raise self.error
        return self.limits


def ask_partition(partition: str | None, env: Mapping[str, str] | None = None) -> PartitionAnswer:
    """`partition` (or the default one) as the controller describes it; an error in place of
    the answer when it cannot be asked."""
    try:
        limits = partition_limits(partition, env)
        if limits is None:
            return PartitionAnswer()
        nodes = run_slurm(["scontrol", "show", "node", "-o"], env)
    except SlurmError as exc:
        return PartitionAnswer(error=exc)
    return PartitionAnswer(limits, partition_gpus_of(nodes, limits.name))
