"""The optional first steps of an allocation (`launcher.slurm.preflight`), before its cells:
`torchscale validate` on every node, and the `comm:` sweep across the nodes as one srun step
(docs/multinode.md, "Preflight: validate every node, measure the fabric first"). At
`validate_level: perf` each node's capability is saved in acceptance/ and compared with the
allocation's median (validate/fleet_table.py: the `fleet` line). Neither stops the cells: their
verdicts go into progress.json and the driver's output; a cell on a broken node fails with its
own root cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.cell import Device
from torchscale.contracts.errors import TorchScaleError
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.wording import say
from torchscale.contracts.wording.spell import gbps_derived, whole_s
from torchscale.orchestration.comm.sweep_launch import (
    CommLaunch,
    CommRequest,
    comm_launch,
    new_run_id,
    run_comm_launch,
)
from torchscale.orchestration.launch.process import run_logged
from torchscale.orchestration.schedulers.slurm.progress import Progress, write_progress
from torchscale.orchestration.schedulers.slurm.step import (
    StepPlace,
    free_port,
    rendezvous_flags,
    srun_wrap,
)

if TYPE_CHECKING:
    from torchscale.orchestration.schedulers.slurm.allocation import Allocation

PREFLIGHT_DIR = "preflight"
VALIDATE_TIMEOUT_S = 600.0
PERF_TIMEOUT_S = 1800.0  # --level perf: five dtypes' shape searches, bandwidths, a comm sweep


def validate_argv(
    nodes: int,
    python: str,
    device: Device,
    directory: Path,
    level: str = "basic",
    experiment_root: Path | None = None,
) -> list[str]:
    """One `torchscale validate --json` per node, each node's JSON in its own file (srun's
    %n: the node's index in the allocation); `--level perf` saves each node's report in the
    experiment's acceptance/ too."""
    saved = []
    if level != "basic" and experiment_root is not None:
        saved = [
            f"--level={level}",
            f"--output-dir={experiment_root.parent}",
            f"--name={experiment_root.name}",
        ]
    srun = ["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1"]
    srun += ["--job-name=torchscale-validate", f"--output={directory / 'validate-node%n.json'}"]
    srun += [f"--error={directory / 'validate-node%n.log'}"]
    return [*srun, python, "-m", "torchscale", "validate", "--json", f"--device={device}", *saved]


def node_verdict(path: Path) -> str:
    """One node's validate report in one line: 'ok', 'not ready: <verdict>' or why unread."""
    from torchscale.offline.results.documents import read_validate_report

    read = read_validate_report(path)
    if read.doc is None:
        return f"no report ({read.problem})"
    report = read.doc
    if report.ok:
        return f"ok ({report.hostname})"
    verdict = say(report.verdict_basis).strip()
    return f"not ready ({report.hostname}): {verdict or 'see the report'}"


def fleet_verdict(paths: list[Path]) -> str:
    """The nodes' measured figures against the fleet's median, in one line."""
    from torchscale.offline.results.documents import read_validate_report
    from torchscale.orchestration.validate.fleet_table import fleet_summary

    # a node without a report is left out: its own line already says so
    reports = [r.doc for r in map(read_validate_report, paths) if r.doc is not None]
    return fleet_summary(reports)[1]


def validate_command(allocation: Allocation) -> list[str] | None:
    """The validate step of `allocation` (None: it asks none, or has no cell to take a device
    from), as the driver runs it and `--dry-run` shows it."""
    if not (allocation.preflight_validate and allocation.cells):
        return None
    device, level = allocation.cells[0].spec.cell.device, allocation.preflight_validate_level
    directory, root = allocation.directory / PREFLIGHT_DIR, Path(allocation.experiment_root)
    return validate_argv(allocation.nodes, allocation.python, device, directory, level, root)


def run_validate(
    argv: list[str], nodes: int, directory: Path, env: Mapping[str, str], level: str = "basic"
) -> dict[str, str]:
    """Validate every node (`argv`: `validate_command`'s, writing into `directory`); node
    index -> verdict line (and `fleet` -> the fleet view's, at --level perf)."""
    timeout = VALIDATE_TIMEOUT_S if level == "basic" else PERF_TIMEOUT_S
    outcome = run_logged(argv, env, directory / "validate-srun.log", timeout)
    paths = [directory / f"validate-node{k}.json" for k in range(nodes)]
    verdicts = {f"node{k}": node_verdict(path) for k, path in enumerate(paths)}
    if outcome.timed_out:
        verdicts["srun"] = f"timed out after {whole_s(timeout)}"
    if level != "basic":
        verdicts["fleet"] = fleet_verdict(paths)
    return verdicts


def comm_run_id(request: CommRequest, nodes: int, job_id: str, started: str | None = None) -> str:
    """The comm preflight's run id: `torchscale comm`'s (its start time last), the node count
    and the job id; `started` stands for the start time where the step is shown before it
    runs."""
    run_id = new_run_id(request)
    if started is not None:
        run_id = f"{run_id.rsplit('-', 1)[0]}-{started}"
    return f"{run_id}-n{nodes}-job{job_id}"


def comm_step(
    request: CommRequest,
    nodes: int,
    experiment_root: Path,
    env: Mapping[str, str],
    place: StepPlace,
    port: int | str,
    run_id: str,
) -> CommLaunch:
    """The comm sweep across every node as an srun step of torchrun (its own port and
    rendezvous id), as the driver runs it and `--dry-run` shows it (`port`: a placeholder
    there)."""
    flags = rendezvous_flags(nodes, place, port, "comm")
    launch = comm_launch(
        request, experiment_root, env, run_id, nodes=nodes, python=place.python, rendezvous=flags
    )
    command = srun_wrap(launch.command, nodes, f"torchscale-comm-{run_id}", place)
    return replace(launch, command=command)


def comm_verdict(result: CommResult) -> str:
    """The comm preflight in one line, naming the stored run."""
    stored = f"comm/{result.id}.json"
    if result.status != "ok":
        return f"{result.status}: {result.error or 'see ' + stored} ({stored})"
    wrong = f", {result.wrong_total} wrong element(s)" if result.wrong_total else ""
    busbw = (
        f", avg busbw {gbps_derived(result.avg_busbw_gbps)}"
        if result.avg_busbw_gbps is not None
        else ""
    )
    return f"ok: {len(result.rows)} row(s){busbw}{wrong} ({stored})"


def run_preflight(
    allocation: Allocation, env: Mapping[str, str], place: StepPlace, progress: Progress
) -> None:
    """The steps the allocation asks for, each verdict written to progress.json as it comes."""
    root = Path(allocation.experiment_root)
    validate = validate_command(allocation)
    if validate is not None:
        try:
            directory = allocation.directory / PREFLIGHT_DIR
            level = allocation.preflight_validate_level
            verdicts = run_validate(validate, allocation.nodes, directory, env, level)
        except (OSError, TorchScaleError) as exc:
            verdicts = {"srun": describe_error(exc)}
        for name, verdict in verdicts.items():
            progress.preflight[name if name == "fleet" else f"validate {name}"] = verdict
        write_progress(allocation.directory, progress)
    if allocation.preflight_comm is not None:
        try:
            # across every node, stored in comm/ as `torchscale comm` stores its runs
            request, nodes = allocation.preflight_comm, allocation.nodes
            run_id = comm_run_id(request, nodes, place.job_id)
            launch = comm_step(request, nodes, root, env, place, free_port(), run_id)
            progress.preflight["comm"] = comm_verdict(run_comm_launch(launch, request))
        except (OSError, TorchScaleError) as exc:
            progress.preflight["comm"] = describe_error(exc)
        write_progress(allocation.directory, progress)


def describe_error(exc: BaseException) -> str:
    """A preflight that could not run at all, in one line (it never stops the cells)."""
    if isinstance(exc, TorchScaleError):
        return f"failed: {exc}"
    return f"failed: {type(exc).__name__}: {exc}"
