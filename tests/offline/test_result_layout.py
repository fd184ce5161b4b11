"""torchscale.offline.results.directory_layout: the results directory spelled once, exactly as it
lies on disk (old results must keep loading), on the host and as a pod mounts it."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from torchscale.offline.results.directory_layout import ProfileRun, ResultLayout
from torchscale.offline.results.store import ResultStore


def test_every_place_of_an_experiment_directory() -> None:
    layout = ResultLayout(Path("/out/exp"))
    places = {
        layout.config_path: "config.yaml",
        layout.environment_path: "env.json",
        layout.summary_path: "summary.csv",
        layout.cell_path("c1"): "cells/c1.json",
        layout.steps_path("c1"): "steps/c1.jsonl",
        layout.log_dir("c1"): "logs/c1",
        layout.attempt_result_path("c1"): "logs/c1/result.json",
        layout.attempt_steps_path("c1"): "logs/c1/steps.jsonl",
        layout.spec_path("c1"): "specs/c1.json",
        layout.comm_result_path("r1"): "comm/r1.json",
        layout.comm_log_dir("r1"): "logs/comm/r1",
        layout.max_batch_path("g1"): "max_batch/g1.json",
        layout.max_batch_probes_dir("g1"): "max_batch/probes/g1",
        layout.profile_run("c1").directory: "profile/c1",
        layout.k8s_manifest_path("job"): "k8s/job.yaml",
        layout.k8s_spec_path("c1"): "k8s/specs/c1.json",
        layout.slurm_jobs_path: "slurm/jobs.json",
        layout.slurm_allocation_dir("s1-n2"): "slurm/s1-n2",
    }
    for path, where in places.items():
        assert path == Path("/out/exp") / where


def test_a_profiled_run() -> None:
    run = ProfileRun(Path("/t"))
    assert [run.result_path, run.steps_path, run.spec_path, run.log_dir, run.analysis_path] == [
        Path("/t/result.json"),
        Path("/t/steps.jsonl"),
        Path("/t/spec.json"),
        Path("/t/logs"),
        Path("/t/analysis.json"),
    ]


def test_the_same_layout_as_a_pod_sees_it() -> None:
    in_pod = ResultLayout(PurePosixPath("/results/exp"))
    assert in_pod.cell_path("c1") == PurePosixPath("/results/exp/cells/c1.json")
    assert isinstance(in_pod.k8s_spec_path("c1"), PurePosixPath)


def test_the_store_is_the_layout_on_the_host(tmp_path: Path) -> None:
    store = ResultStore.for_experiment(tmp_path, "exp")
    store.write_config("a: 1\n")
    store.write_environment({"host": "h"})
    assert store.config_path.read_text(encoding="utf-8") == "a: 1\n"
    assert store.environment_path == tmp_path / "exp" / "env.json"
    assert store.environment_path.exists()
