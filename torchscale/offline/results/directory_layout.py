"""Where every file of an experiment's results directory lies: the one place that spells the
layout (reading and writing are `store.ResultStore`'s, which is this layout on the host).

The tree is in docs/results.md ("The directory"); what it does not show: comm/ also holds
nccl-tests imports, each comm launch's own files are under logs/comm/<run>/, and logs/<cell_id>/
holds a launch's result.json and steps.jsonl until the launch is over. profile/<cell_id>/ is a
profiled run (`ProfileRun`: its result, traces, analysis.json); k8s/<name>.yaml the Kubernetes
job manifests, k8s/specs/<cell_id>.json their specs; slurm/jobs.json the sweep's Slurm jobs,
slurm/<allocation>/ each one's files; acceptance/<host>.<level>.json the latest `torchscale
validate` report (node acceptance) per node and level, from which `report` draws its
acceptance section.

Every command writes OUTPUT_DIR/<experiment>/ in this one layout. A `torchscale profile` or
`torchscale comm` run given no `--name` goes to the experiment STANDALONE_EXPERIMENT:
results/standalone/profile/<cell_id>/, results/standalone/comm/<run>.json. (The default used
to be the kind's own name, which doubled it: results/profile/profile/<cell_id>/ and
results/comm/comm/<run>.json; such a directory is an experiment like any other, still read.)

Generic over the path type: the host's `Path`, or `PurePosixPath` for the same directory as a
Kubernetes pod mounts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Generic, TypeVar

P = TypeVar("P", bound=PurePath)
ANALYSIS_FILE = "analysis.json"  # a trace analysis, beside the traces it was made from
# the experiment of `profile` and `comm` runs given no --name: not a kind's own name, which
# would double it (results/profile/profile/)
STANDALONE_EXPERIMENT = "standalone"


@dataclass(frozen=True)
class ProfileRun(Generic[P]):
    """One profiled run's directory (profile/<cell_id>/, or any directory of traces)."""

    directory: P

    @property
    def result_path(self) -> P:
        return self.directory / "result.json"

    @property
    def steps_path(self) -> P:
        return self.directory / "steps.jsonl"

    @property
    def spec_path(self) -> P:
        return self.directory / "spec.json"

    @property
    def log_dir(self) -> P:
        return self.directory / "logs"

    @property
    def analysis_path(self) -> P:
        return self.directory / ANALYSIS_FILE


class ResultLayout(Generic[P]):
    """The paths of one experiment's results directory `root` (see the module doc).
    `compile_cache`: a directory of results inside an experiment (the max-batch probes')
    compiles into its experiment's cache, given here."""

    def __init__(self, root: P, compile_cache: P | None = None) -> None:
        self.root = root
        self._compile_cache = compile_cache

    @property
    def config_path(self) -> P:
        return self.root / "config.yaml"

    @property
    def environment_path(self) -> P:
        return self.root / "env.json"

    @property
    def summary_path(self) -> P:
        return self.root / "summary.csv"

    @property
    def sweep_state_path(self) -> P:
        return self.root / "sweep.json"

    @property
    def cells_dir(self) -> P:
        return self.root / "cells"

    def cell_path(self, cell_id: str) -> P:
        return self.cells_dir / f"{cell_id}.json"

    def steps_path(self, cell_id: str) -> P:
        return self.root / "steps" / f"{cell_id}.jsonl"

    def log_dir(self, cell_id: str) -> P:
        return self.root / "logs" / cell_id

    def attempt_result_path(self, cell_id: str) -> P:
        """Where rank 0 writes a launch's result: moved into cells/ only once the launch is
        over, so an earlier result of the cell stays until a new one replaces it."""
        return self.log_dir(cell_id) / "result.json"

    def attempt_steps_path(self, cell_id: str) -> P:
        return self.log_dir(cell_id) / "steps.jsonl"

    @property
    def specs_dir(self) -> P:
        return self.root / "specs"

    def spec_path(self, cell_id: str) -> P:
        return self.specs_dir / f"{cell_id}.json"

    @property
    def comm_dir(self) -> P:
        return self.root / "comm"

    def comm_result_path(self, run_id: str) -> P:
        return self.comm_dir / f"{run_id}.json"

    def comm_log_dir(self, run_id: str) -> P:
        return self.root / "logs" / "comm" / run_id

    @property
    def max_batch_dir(self) -> P:
        return self.root / "max_batch"

    def max_batch_path(self, group: str) -> P:
        return self.max_batch_dir / f"{group}.json"

    def max_batch_probes_dir(self, group: str) -> P:
        return self.max_batch_dir / "probes" / group

    @property
    def profiles_dir(self) -> P:
        return self.root / "profile"

    def profile_run(self, cell_id: str) -> ProfileRun[P]:
        return ProfileRun(self.profiles_dir / cell_id)

    @property
    def k8s_dir(self) -> P:
        return self.root / "k8s"

    def k8s_manifest_path(self, name: str) -> P:
        return self.k8s_dir / f"{name}.yaml"

    def k8s_spec_path(self, cell_id: str) -> P:
        return self.k8s_dir / "specs" / f"{cell_id}.json"

    @property
    def slurm_dir(self) -> P:
        return self.root / "slurm"

    @property
    def slurm_jobs_path(self) -> P:
        return self.slurm_dir / "jobs.json"

    def slurm_allocation_dir(self, allocation: str) -> P:
        return self.slurm_dir / allocation

    @property
    def acceptance_dir(self) -> P:
        return self.root / "acceptance"

    def acceptance_path(self, host: str, level: str) -> P:
        return self.acceptance_dir / f"{host}.{level}.json"

    @property
    def compile_cache_dir(self) -> P:
        """Where every compiled launch of the experiment (cells, max-batch probes, profiles,
        resumes) keeps inductor's and Triton's caches
        (torchscale/orchestration/launch/compile_cache.py)."""
        if self._compile_cache is not None:
            return self._compile_cache
        return self.root / "compile_cache"

    @property
    def peak_search_dirs(self) -> list[P]:
        """Where a cell's ranks look for their node's measured peak: this experiment's
        acceptance/, then that of `validate`'s default experiment beside it."""
        return [self.acceptance_dir, self.root.parent / STANDALONE_EXPERIMENT / "acceptance"]
