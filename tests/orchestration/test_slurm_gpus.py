"""A Slurm sweep's cells are judged against the GPUs of the partition's nodes (Slurm's Gres), or,
where no controller answers or Slurm counts no GPU Gres there, the config's, said in one line;
never the submitting host's. Slurm is asked once per command. A dry run lists every skipped cell
with its reason and, per job, every srun step the driver will run (the nodes' environment, the
preflight, each cell's srun/torchrun), built by the driver's own functions
(tests/orchestration/test_dry_run_truth.py has the warnings of a dry run off the cluster)."""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.slurm_cluster import SlurmCluster, slurm_cluster  # noqa: F401 (the `slurm` fixture)
from torchscale.contracts.errors import SlurmError, UsageError
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.launch import process
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.schedulers.slurm import client, driver, preflight
from torchscale.orchestration.schedulers.slurm.allocation import (
    ALLOCATION_FILE,
    Allocation,
    asks_gpus,
    build_allocation,
)
from torchscale.orchestration.schedulers.slurm.client import (
    PartitionAnswer,
    PartitionGpus,
    PartitionLimits,
    ask_partition,
    gres_gpus,
    partition_gpus_of,
)
from torchscale.orchestration.schedulers.slurm.gpus import judged_gpus
from torchscale.orchestration.schedulers.slurm.review import (
    COMM,
    HEAD_ADDRESS,
    HOSTS,
    JOB_ID,
    PORT,
    STARTED,
    VALIDATE,
)

# `scontrol show node -o` as Slurm prints it, one node a line (fields as in 21.08-23.02 output:
# Gres with its socket list, a node in two partitions, a CPU node with Gres=(null), a node with
# two GPU types and a non-GPU Gres, an OS field with spaces)
NODES = "\n".join(
    [
        "NodeName=g001 Arch=x86_64 CoresPerSocket=48 CPUAlloc=0 CPUEfctv=192 CPUTot=192 "
        "CPULoad=0.42 AvailableFeatures=h100 ActiveFeatures=h100 Gres=gpu:h100:8(S:0-1) "
        "NodeAddr=10.1.0.1 NodeHostName=g001 Version=23.02.7 OS=Linux 5.15.0-91-generic "
        "#101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 RealMemory=2000000 AllocMem=0 "
        "FreeMem=1900000 Sockets=2 Boards=1 State=IDLE ThreadsPerCore=2 TmpDisk=0 Weight=1 "
        "Owner=N/A MCS_label=N/A Partitions=gpu,debug BootTime=2024-05-01T08:00:00 "
        "SlurmdStartTime=2024-05-01T08:01:00 LastBusyTime=2024-05-02T10:00:00 "
        "CfgTRES=cpu=192,mem=2000000M,billing=192,gres/gpu=8,gres/gpu:h100=8 AllocTRES= "
        "CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 "
        "ExtSensorsTemp=n/s",
        "NodeName=g002 Arch=x86_64 CoresPerSocket=32 CPUAlloc=16 CPUTot=64 "
        "Gres=gpu:a100:2(S:0),gpu:v100:2(S:1),lscratch:3200 NodeAddr=10.1.0.2 "
        "State=MIXED Partitions=gpu Reason=reserved for maintenance [root@2024-05-01T08:00:00]",
        "NodeName=c001 Arch=x86_64 CoresPerSocket=32 CPUAlloc=0 CPUTot=64 Gres=(null) "
        "NodeAddr=10.2.0.1 State=IDLE Partitions=cpu,debug",
        "NodeName=x001 CPUTot=8 Gres=gpu:4(S:0,2) NodeAddr=10.3.0.1 State=DOWN+DRAIN",
    ]
)


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [
        ("gpu:h100:8(S:0-1)", 8),
        ("gpu:a100:2(S:0),gpu:v100:2(S:1),lscratch:3200", 4),
        ("gpu:4(S:0,2)", 4),  # a socket list with a comma of its own
        ("gpu:tesla:2", 2),
        ("gpu", 1),
        ("shard:64,lscratch:3200", 0),
        ("(null)", 0),
        ("", 0),
    ],
)
def test_gres_counts_only_gpus(gres: str, gpus: int) -> None:
    assert gres_gpus(gres) == gpus


def test_a_partitions_gpus_per_node_are_read_from_scontrol() -> None:
    assert partition_gpus_of(NODES, "gpu") == PartitionGpus("gpu", most=8, fewest=4, nodes=2)
    assert partition_gpus_of(NODES, "debug") == PartitionGpus("debug", most=8, fewest=0, nodes=2)
    assert partition_gpus_of(NODES, "cpu") == PartitionGpus("cpu", most=0, fewest=0, nodes=1)
    assert partition_gpus_of(NODES, "none") is None  # x001 is in no partition


def cuda_config(**slurm: Any) -> BenchConfig:
    return BenchConfig.model_validate(
        {
            "experiment_name": "d8",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [8],
            "device": "cuda",
            "launcher": {"kind": "slurm", "nodes": [2], "slurm": slurm},
        }
    )


def unreachable(partition: str | None) -> PartitionAnswer:
    error = SlurmError("scontrol failed: slurm_load_partitions error: Unable to contact slurm")
    return PartitionAnswer(error=error)


def answering(gpus: PartitionGpus) -> Callable[[str | None], PartitionAnswer]:
    """A controller that describes `gpus`'s partition (16 nodes, no per-job cap)."""
    limits = PartitionLimits(gpus.partition, total_nodes=16, max_nodes=None)
    return lambda partition: PartitionAnswer(limits, gpus)


def test_without_a_controller_cells_are_judged_against_the_config() -> None:
    judged = judged_gpus(cuda_config(), unreachable)
    assert judged.count == 8
    assert judged.note == (
        "no Slurm controller reachable: cells judged against the config's 8 GPUs per node "
        "(gpu_counts)"
    )
    stated = judged_gpus(cuda_config(gpus_per_node=4), unreachable)
    assert stated.count == 4 and "(launcher.slurm.gpus_per_node)" in (stated.note or "")
    auto = cuda_config().model_copy(update={"device": "auto"})
    assert judged_gpus(auto, unreachable).count == 0  # auto: CPU, as the note says

    def unknown(partition: str | None) -> PartitionAnswer:
        return PartitionAnswer(error=SlurmError("scontrol failed: Partition gpux not found"))

    named = judged_gpus(cuda_config(partition="gpux"), unknown).note or ""
    assert named.startswith("Slurm has no partition 'gpux': cells judged against the config's")


def test_the_partitions_gres_is_what_cells_are_judged_against() -> None:
    four = PartitionGpus("gpu", most=4, fewest=4, nodes=16)
    judged = judged_gpus(cuda_config(partition="gpu"), answering(four))
    assert judged.count == 4
    assert judged.note == (
        "partition 'gpu' has 4 GPU(s) per node (Slurm's Gres): cells judged against 4"
    )
    machine = Machine(gpu_count=judged.count, cpu_cores=64, gpus_source=judged.source)
    (cell,) = build_plan(cuda_config(partition="gpu"), machine).cells
    assert cell.skip_reason == (
        "needs 8 GPUs on each of 2 nodes; a node has 4 (partition 'gpu', Slurm's Gres)"
    )
    with pytest.raises(UsageError, match="gpus_per_node: 8 asked, partition 'gpu' has at most 4"):
        judged_gpus(cuda_config(partition="gpu", gpus_per_node=8), answering(four))


def test_cpu_cells_do_not_ask_slurm() -> None:
    def ask(partition: str | None) -> PartitionAnswer:
        raise AssertionError("CPU cells need no GPU count")

    cpu = cuda_config().model_copy(update={"device": "cpu"})
    assert judged_gpus(cpu, ask).count == 0


def test_a_partition_without_gpu_gres_is_judged_against_the_config() -> None:
    """Sites that leave GPUs out of Slurm's Gres: the partition's nodes show `Gres=(null)`,
    the config's count stands (said in one line), and a stated count is not refused."""
    no_gres = answering(PartitionGpus("gpu", most=0, fewest=0, nodes=16))
    judged = judged_gpus(cuda_config(partition="gpu"), no_gres)
    assert judged.count == 8
    assert judged.note == (
        "Slurm counts no GPU Gres on partition 'gpu': cells judged against the config's 8 GPUs "
        "per node (gpu_counts)"
    )
    stated = judged_gpus(cuda_config(partition="gpu", gpus_per_node=8), no_gres)
    assert stated.count == 8 and "(launcher.slurm.gpus_per_node)" in (stated.note or "")
    (cell,) = build_plan(cuda_config(partition="gpu"), Machine(judged.count, 64)).cells
    assert cell.skip_reason is None


GPU_SBATCH = [
    "--gres=gpu:8",
    "--gres gpu:8",
    "--gres=shard:2,gpu:8",
    "--gres=gpu:h100:8(S:0-1)",
    "--tres-per-node=gres/gpu:8",
    "--tres-per-task=cpu=4,gres/gpu=1",
    "--gpus=16",
    "--gpus-per-node=h100:8",
    "--gpus-per-task 1",
    "-G 16",
    "-G16",
]
OTHER_SBATCH = [
    "--gres=shard:2",
    "--gres=lscratch:100,shard:4",
    "--gres=none",
    "--tres-per-task=cpu=4",
    "--constraint=gpu",
    "--mem=0",
]


@pytest.mark.parametrize(
    ("option", "asked"), [(o, True) for o in GPU_SBATCH] + [(o, False) for o in OTHER_SBATCH]
)
def test_gpus_asked_in_extra_sbatch_are_not_asked_again(
    option: str, asked: bool, tmp_path: Path
) -> None:
    assert asks_gpus(option) is asked
    config = cuda_config(extra_sbatch=[option])
    plan = build_plan(config, Machine(gpu_count=8, cpu_cores=8))
    allocation = build_allocation(
        "s01-n2", 2, plan.runnable, ResultStore(tmp_path), config.launcher.slurm, None, config.comm
    )
    assert allocation.gpus_per_node == (None if asked else 8)


def write_config(tmp_path: Path, **slurm: Any) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cuda_config(**slurm).model_dump(mode="json")), encoding="utf-8")
    return path


def fake_scontrol(directory: Path, partition: str, nodes: str) -> Path:
    """Slurm's client commands on PATH: scontrol answers as a controller does (one partition,
    its nodes), each call logged in calls.log; the others fail as without a controller. The
    directory to put on PATH."""
    directory.mkdir()
    (directory / "partition.txt").write_text(partition + "\n", encoding="utf-8")
    (directory / "nodes.txt").write_text(nodes + "\n", encoding="utf-8")
    scripts = {
        "scontrol": (
            f'echo "scontrol $*" >> "{directory / "calls.log"}"\n'
            'case "$*" in\n'
            f'  "show partition -o"*) while IFS= read -r l; do echo "$l"; done '
            f'< "{directory / "partition.txt"}" ;;\n'
            f'  "show node -o") while IFS= read -r l; do echo "$l"; done '
            f'< "{directory / "nodes.txt"}" ;;\n'
            '  *) echo "scontrol: error: unexpected" >&2; exit 1 ;;\n'
            "esac\n"
        ),
        **{name: "echo 'no controller' >&2; exit 1\n" for name in ("sbatch", "squeue", "scancel")},
    }
    for name, body in scripts.items():
        (directory / name).write_text("#!/bin/sh\n" + body, encoding="utf-8")
        (directory / name).chmod(0o755)
    return directory


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(app, ["benchmark", *map(str, args)])


def flat(output: str) -> str:
    return " ".join(output.split())


def slurm_answering(
    directory: Path, monkeypatch: pytest.MonkeyPatch, partition: str | None, nodes: str = ""
) -> list[str]:
    """Slurm's client commands on PATH (in `directory`, for shutil.which; never run) and
    answered in-process as fake_scontrol's scripts answer: the one call that runs one
    (client.run_child) returns scontrol's `partition` and its `nodes`, or, with no partition,
    scontrol's words with its controller down; the other commands fail as without a
    controller. The calls made, as calls.log has them."""
    directory.mkdir()
    for name in ("sbatch", "squeue", "scontrol", "scancel"):
        (directory / name).write_text("", encoding="utf-8")
        (directory / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(directory))
    calls: list[str] = []

    def run_child(
        argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        said = " ".join(argv)
        calls.append(said)
        if argv[0] != "scontrol":
            return subprocess.CompletedProcess(list(argv), 1, "", "no controller\n")
        if partition is None:
            down = "slurm_load_partitions error: Unable to contact slurm controller\n"
            return subprocess.CompletedProcess(list(argv), 1, "", down)
        answers = {"scontrol show partition -o": partition, "scontrol show node -o": nodes}
        if said not in answers:
            return subprocess.CompletedProcess(list(argv), 1, "", "scontrol: error: unexpected\n")
        return subprocess.CompletedProcess(list(argv), 0, answers[said] + "\n", "")

    monkeypatch.setattr(client, "run_child", run_child)
    return calls


def slurm_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slurm's client commands not found, in-process: the one call that would run one
    (client.run_child) fails as subprocess does where PATH has no such program."""

    def run_child(
        argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])

    monkeypatch.setattr(client, "run_child", run_child)


@pytest.mark.slow  # starts a child process
def test_a_cuda_dry_run_without_a_controller_writes_the_scripts_and_shows_each_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a login node without GPUs and no controller to ask, the cell is judged against the
    config's GPUs (said in a note), never this host's none: the script is written, the job asks
    one GPU per rank, and each step's srun/torchrun argv is printed as a shell line."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm"))
    out = tmp_path / "results"
    result = invoke("-c", write_config(tmp_path), "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        "note: no Slurm controller reachable: cells judged against the config's 8 GPUs per "
        "node (gpu_counts)"
    ) in flat(result.output)
    assert "skipped" not in result.output and "see the plan" not in result.output
    (script,) = sorted((out / "d8" / "slurm").glob("*/job.sbatch"))
    assert "#SBATCH --gpus-per-node=8" in script.read_text(encoding="utf-8").splitlines()
    argv_lines = [line for line in lines if line.strip().startswith("argv: srun ")]
    assert len(argv_lines) == 2, result.output  # one job: its nodes' environment, one cell
    assert "slurm.hostenv" in argv_lines[0]
    argv_lines = argv_lines[1:]
    # the printed line is a shell command line: split, it is the step's argv
    argv = shlex.split(argv_lines[0].strip().removeprefix("argv: "))
    assert argv[:2] == ["srun", "--kill-on-bad-exit=1"] and "--gpus-per-node=8" in argv
    torchrun = argv[argv.index("--") + 1 :]
    assert torchrun[1:3] == ["-m", "torch.distributed.run"]
    for flag in ("--nnodes=2", "--nproc-per-node=8", f"--rdzv-endpoint={HEAD_ADDRESS}:{PORT}"):
        assert flag in torchrun
    assert "dry run: nothing submitted" in result.output


def test_a_cuda_dry_run_with_slurm_not_found_judges_the_configs_gpus_and_shows_each_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above, Slurm's client not found in-process: the note, the script and each
    step's argv are this process's own work."""
    slurm_not_found(monkeypatch)
    test_a_cuda_dry_run_without_a_controller_writes_the_scripts_and_shows_each_step(
        tmp_path, monkeypatch
    )


@pytest.mark.slow  # starts a child command
def test_a_dry_run_names_why_each_cell_is_skipped_by_the_partitions_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = "PartitionName=gpu Default=YES TotalNodes=2 MaxNodes=UNLIMITED State=UP"
    nodes = "\n".join(
        f"NodeName=g00{i} Gres=gpu:a100:4(S:0-1) NodeAddr=10.1.0.{i} State=IDLE Partitions=gpu"
        for i in (1, 2)
    )
    monkeypatch.setenv("PATH", str(fake_scontrol(tmp_path / "bin", partition, nodes)))
    _check_the_gres_skips_the_cell(tmp_path)


def test_a_dry_run_names_why_each_cell_is_skipped_by_the_gres_scontrol_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = slurm_answering(tmp_path / "bin", monkeypatch, GPU_PARTITION, GRES_NODES)
    _check_the_gres_skips_the_cell(tmp_path)
    assert calls == ["scontrol show partition -o", "scontrol show node -o"]


GRES_NODES = "\n".join(
    f"NodeName=g00{i} Gres=gpu:a100:4(S:0-1) NodeAddr=10.1.0.{i} State=IDLE Partitions=gpu"
    for i in (1, 2)
)
NULL_GRES_NODES = GRES_NODES.replace("gpu:a100:4(S:0-1)", "(null)")
GPU_PARTITION = "PartitionName=gpu Default=YES TotalNodes=2 MaxNodes=UNLIMITED State=UP"


def _check_the_gres_skips_the_cell(tmp_path: Path) -> None:
    """A partition of 4-GPU nodes: the 8-GPU cell is skipped, named with why, nothing to submit."""
    out = tmp_path / "results"
    result = invoke("-c", write_config(tmp_path), "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert (
        "note: partition 'gpu' has 4 GPU(s) per node (Slurm's Gres): cells judged against 4" in text
    )
    assert "1 cell(s) skipped:" in text
    assert "needs 8 GPUs on each of 2 nodes; a node has 4 (partition 'gpu', Slurm's Gres)" in text
    assert "see the plan" not in text
    assert "nothing to submit: every cell is ok or skipped" in text
    assert not list((out / "d8" / "slurm").glob("*/job.sbatch"))


def _check_a_job_asks_no_gpu(tmp_path: Path) -> None:
    """sbatch refuses a --gpus-per-node on a partition whose nodes have no gpu Gres: the job
    asks none (its CPUs still sized by the config's GPUs), and the cells are not skipped."""
    out = tmp_path / "results"
    result = invoke("-c", write_config(tmp_path), "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert (
        "note: Slurm counts no GPU Gres on partition 'gpu': cells judged against the config's "
        "8 GPUs per node (gpu_counts)"
    ) in flat(result.output)
    assert "skipped" not in result.output
    (script,) = sorted((out / "d8" / "slurm").glob("*/job.sbatch"))
    lines = script.read_text(encoding="utf-8").splitlines()
    assert not [line for line in lines if "gpus" in line or "gres" in line]
    assert "#SBATCH --cpus-per-task=64" in lines  # 8 per GPU of the node
    argv_lines = [line for line in result.output.splitlines() if "argv: srun" in line]
    assert argv_lines and not [line for line in argv_lines if "--gpus-per-node" in line]


@pytest.mark.slow  # starts a child command
def test_a_partition_without_gpu_gres_gets_a_job_that_asks_no_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sbatch refuses a --gpus-per-node on a partition whose nodes have no gpu Gres: the job
    asks none (its CPUs still sized by the config's GPUs), and the cells are not skipped."""
    monkeypatch.setenv("PATH", str(fake_scontrol(tmp_path / "bin", GPU_PARTITION, NULL_GRES_NODES)))
    _check_a_job_asks_no_gpu(tmp_path)


def test_a_partition_scontrol_counts_no_gpu_gres_on_gets_a_job_that_asks_no_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_answering(tmp_path / "bin", monkeypatch, GPU_PARTITION, NULL_GRES_NODES)
    _check_a_job_asks_no_gpu(tmp_path)


def _check_asked_once(tmp_path: Path, reachable: bool, calls: Callable[[], list[str]]) -> None:
    """Checks a CUDA dry run asks scontrol each question once, or says the controller is down."""
    config = write_config(tmp_path, gpus_per_node=4)
    result = invoke("-c", config, "-o", tmp_path / "results", "--dry-run")
    assert result.exit_code == 0, result.output
    calls_made = calls()
    if reachable:
        assert calls_made == ["scontrol show partition -o", "scontrol show node -o"]
    else:
        assert calls_made == ["scontrol show partition -o"]
        assert "Slurm's controller could not be asked from here (scontrol failed: " in flat(
            result.output
        )


@pytest.mark.parametrize("reachable", [True, False])
@pytest.mark.slow  # starts a child command
def test_slurm_is_asked_once_for_a_cuda_dry_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reachable: bool
) -> None:
    """The plan's question (the partition's GPUs) and the dry run's (its node limits) share
    one answer: with the controller down, each question would wait out its timeout."""
    client = fake_scontrol(tmp_path / "bin", GPU_PARTITION, GRES_NODES)
    if not reachable:
        (client / "scontrol").write_text(
            "#!/bin/sh\n"
            f'echo "scontrol $*" >> "{client / "calls.log"}"\n'
            "echo 'slurm_load_partitions error: Unable to contact slurm controller' >&2\n"
            "exit 1\n",
            encoding="utf-8",
        )
    monkeypatch.setenv("PATH", str(client))
    _check_asked_once(
        tmp_path, reachable, lambda: (client / "calls.log").read_text(encoding="utf-8").splitlines()
    )


@pytest.mark.parametrize("reachable", [True, False])
def test_a_cuda_dry_run_asks_slurm_each_question_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reachable: bool
) -> None:
    partition = GPU_PARTITION if reachable else None
    calls = slurm_answering(tmp_path / "bin", monkeypatch, partition, GRES_NODES)
    _check_asked_once(tmp_path, reachable, lambda: calls)


STAMP = re.compile(r"\d{8}T\d{6}Z")  # the comm run id's start time (comm/sweep_launch.py)


def shown_steps(output: str) -> list[tuple[str, list[str], dict[str, str]]]:
    """(label, argv, env shown) of each step a dry run printed."""
    steps: list[tuple[str, list[str], dict[str, str]]] = []
    for line in output.splitlines():
        if line.startswith("    argv: "):
            steps[-1][1].extend(shlex.split(line.removeprefix("    argv: ")))
        elif line.startswith("    env:  "):
            pairs = shlex.split(line.removeprefix("    env:  "))
            steps[-1][2].update(pair.split("=", 1) for pair in pairs)  # type: ignore[misc]
        elif line.startswith("  ") and not line.startswith("   "):
            steps.append((line.strip(), [], {}))
    return [step for step in steps if step[1]]


@pytest.mark.slow  # starts a child command
def test_the_dry_run_shows_every_step_the_driver_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver runs the allocation the dry run wrote, its launches recorded where they
    would start a process: each argv is the one the dry run printed (placeholders filled in
    with the job's values), in the same order, preflight steps included, and every value the
    dry run shows of a step's environment is the one the step gets."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm"))
    out = tmp_path / "results"
    config = write_config(
        tmp_path, preflight={"validate_nodes": True, "validate_level": "perf", "comm": True}
    )
    data = json.loads(config.read_text(encoding="utf-8"))
    data["batch_sizes"] = [8, 16]  # two cells: the steps' own indexes and rendezvous ids
    config.write_text(json.dumps(data), encoding="utf-8")
    result = invoke("-c", config, "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    shown = shown_steps(result.output)
    labels = [label for label, _, _ in shown]
    assert labels[:3] == [HOSTS, VALIDATE, COMM] and len(labels) == 5, result.output

    recorded: list[tuple[list[str], dict[str, str]]] = []

    def run_logged(
        argv: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float, **_: Any
    ) -> ProcessOutcome:
        recorded.append((list(argv), dict(env)))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("", encoding="utf-8")
        return ProcessOutcome(returncode=1, timed_out=False, wall_s=0.0, log_path=log_path)

    for module in (driver, preflight, process):
        monkeypatch.setattr(module, "run_logged", run_logged)
    for module in (driver, preflight):
        monkeypatch.setattr(module, "free_port", lambda: 29500)
    (path,) = sorted((out / "d8" / "slurm").glob(f"*/{ALLOCATION_FILE}"))
    allocation = Allocation.model_validate_json(path.read_text(encoding="utf-8"))
    job_env = {**os.environ, "SLURM_JOB_ID": "4242"}
    assert driver.run_allocation(allocation, job_env, None) == 0

    def filled(arg: str) -> str:
        return arg.replace(JOB_ID, "4242").replace(HEAD_ADDRESS, "127.0.0.1").replace(PORT, "29500")

    ran = [[STAMP.sub(STARTED, arg) for arg in argv] for argv, _ in recorded]
    assert ran == [[filled(arg) for arg in argv] for _, argv, _ in shown]
    for (_, env), (label, _, shown_env) in zip(recorded, shown, strict=True):
        for key, value in shown_env.items():
            if not value.startswith("<"):  # a placeholder: the job's nodes decide it
                assert STAMP.sub(STARTED, env.get(key, "")) == filled(value), (label, key)


def test_the_dry_run_with_slurm_not_found_shows_every_step_the_driver_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above, Slurm's client not found in-process (the driver's launches are
    recorded there already)."""
    slurm_not_found(monkeypatch)
    test_the_dry_run_shows_every_step_the_driver_runs(tmp_path, monkeypatch)


@pytest.mark.slurm
@pytest.mark.slow  # starts a child process
def test_a_real_controller_says_its_partition_has_no_gpu(slurm: SlurmCluster) -> None:
    """The real scontrol's output parses: the test cluster's nodes have no Gres."""
    assert ask_partition(None, slurm.env).gpus == PartitionGpus("debug", most=0, fewest=0, nodes=2)
