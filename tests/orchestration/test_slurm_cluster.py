"""The real two-node Slurm test cluster (tests/slurm_cluster.py, .ci/slurm_cluster.sh) works:
both nodes idle, a batch job completes, a two-node srun step runs a task on each node."""

from __future__ import annotations

import sys
import time

import pytest

from tests.slurm_cluster import (  # noqa: F401  (slurm_cluster: the `slurm` fixture)
    SlurmCluster,
    job_state,
    slurm_cluster,
    wait_for_jobs_gone,
)

pytestmark = [pytest.mark.slurm, pytest.mark.slow]  # real Slurm jobs


def test_two_idle_nodes(slurm: SlurmCluster) -> None:
    # a shared cluster may still be ending an earlier test's job: give it a few seconds
    deadline = time.monotonic() + 15
    while True:
        out = slurm.run(["sinfo", "-h", "-N", "-o", "%N %T %c %P"], check=True)
        nodes = sorted(line.split() for line in out.stdout.splitlines() if line.strip())
        if all(node[1] == "idle" for node in nodes) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert nodes == [["n1", "idle", "2", "debug*"], ["n2", "idle", "2", "debug*"]], out.stdout


def test_batch_job_completes(slurm: SlurmCluster, tmp_path) -> None:
    output = tmp_path / "job-%j.out"
    submitted = slurm.run(
        [
            "sbatch",
            "--parsable",
            "--job-name=torchscale-test",
            f"--output={output}",
            "--wrap",
            "hostname; echo node=$SLURMD_NODENAME",
        ],
        check=True,
    )
    job_id = submitted.stdout.strip().split(";")[0]
    assert job_id.isdigit(), submitted.stdout
    wait_for_jobs_gone(slurm, [job_id], timeout=20)
    assert job_state(slurm, job_id) == "COMPLETED"
    text = (tmp_path / f"job-{job_id}.out").read_text()
    assert "node=n" in text, text


def test_two_node_srun(slurm: SlurmCluster) -> None:
    code = "import os; print('task', os.environ['SLURM_NODEID'], os.environ['SLURMD_NODENAME'])"
    out = slurm.run(
        ["srun", "-N2", "--ntasks-per-node=1", "--time=1", sys.executable, "-c", code],
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    tasks = sorted(line.split()[1:] for line in out.stdout.splitlines() if line.startswith("task"))
    assert tasks == [["0", "n1"], ["1", "n2"]], out.stdout
