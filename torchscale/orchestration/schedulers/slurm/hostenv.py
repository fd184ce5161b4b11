"""Each node's environment, recorded once per allocation (the first srun step).

    srun --ntasks-per-node=1 python -m torchscale.orchestration.schedulers.slurm.hostenv DIR

writes DIR/node<k>.json: the host's environment as every cell result records it for rank 0,
plus the Slurm variables that place this node in the job and count its CPUs. The step asks
the CPUs a cell's step asks, so `usable_cores` (its cpuset) is what each cell has there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from torchscale.contracts.atomic import write_text_atomic

SLURM_FIELDS = (
    "SLURM_JOB_ID",
    "SLURM_JOB_NODELIST",
    "SLURM_NODEID",
    "SLURMD_NODENAME",
    "SLURM_CPUS_ON_NODE",  # CPUs of this step here, as Slurm counts them
    "SLURM_JOB_CPUS_PER_NODE",
)


def main() -> None:
    # the record names torch, CUDA and the GPUs, so taking it loads torch: on the node, when
    # this runs, never on importing the module
    from torchscale.rank.worker.run_environment import capture_environment

    directory = Path(sys.argv[1])
    node = os.environ.get("SLURM_NODEID", "0")
    record = capture_environment()
    record["slurm"] = {name: os.environ.get(name) for name in SLURM_FIELDS}
    write_text_atomic(directory / f"node{node}.json", json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
