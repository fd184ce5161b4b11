"""`benchmark --dry-run` tells the truth about the real run: the tools the config needs are
checked before anything runs (and named by the config key that asks for them, not a flag the
user never passed), and a Slurm dry run works off the cluster and where no controller answers,
saying what it could not check.

(The output-directory probe is in tests/orchestration/test_output_dir.py; the cells --resume would
reuse in
tests/e2e/test_sweep.py, on real results.)"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app
from torchscale.orchestration.schedulers.slurm import client

TINY: dict[str, Any] = {
    "experiment_name": "truth",
    "models": ["tiny-mlp"],
    "batch_sizes": [4],
    "gpu_counts": [1],
    "device": "cpu",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
}


def write_config(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({**TINY, **extra}), encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(app, ["benchmark", *map(str, args)])


def flat(output: str) -> str:
    """The output with the console's line wrapping undone."""
    return " ".join(output.split())


@pytest.fixture
def no_nsys(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchscale.orchestration.profiling.nsys

    monkeypatch.setattr(torchscale.orchestration.profiling.nsys, "find_nsys", lambda *a, **k: None)


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_a_config_asking_for_nsys_fails_before_any_cell(
    tmp_path: Path, no_nsys: None, dry_run: bool
) -> None:
    """Before: the whole sweep ran, then the profiles failed on '--tool nsys', a flag the user
    never passed; a dry run said nothing."""
    config = write_config(tmp_path, profiling={"enabled": True, "tool": "nsys"})
    out = tmp_path / "results"
    result = invoke("-c", config, "-o", out, *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: profiling.tool: nsys: Nsight Systems (nsys) was not found on PATH or in "
        "TORCHSCALE_NSYS; install it (docs/profiling.md) or use profiling.tool: torch"
    ]
    assert "Running" not in result.output
    assert not out.exists()


def test_auto_profiling_tool_needs_no_nsys(tmp_path: Path, no_nsys: None) -> None:
    config = write_config(tmp_path, profiling={"enabled": True, "tool": "auto"})
    result = invoke("-c", config, "-o", tmp_path / "results", "--dry-run")
    assert result.exit_code == 0, result.output


SLURM = {
    "launcher": {
        "kind": "slurm",
        "nodes": [1, 2],
        "slurm": {"time_limit": "10", "signal_grace_s": 60},
    }
}


# what Slurm 22.05.8's scontrol prints, then exits 1, on a host with the client installed but no
# slurm.conf and no DNS SRV record pointing at a controller (seen on this project's machine)
NO_CONFIG_SOURCE = (
    "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host",
    "scontrol: error: fetch_config: DNS SRV lookup failed",
    "scontrol: error: _establish_config_source: failed to fetch config",
    "scontrol: fatal: Could not establish a configuration source",
)


def slurm_client_without_controller(directory: Path) -> Path:
    """Slurm's four client commands as shell scripts that answer as the real ones do without a
    controller (Slurm's own lines on stderr, exit 1), each logging its call; the directory to
    put on PATH (only shell builtins are used, so nothing else need be on it)."""
    directory.mkdir()
    for name in ("sbatch", "squeue", "scontrol", "scancel"):
        lines = " ".join(f"'{line.replace('scontrol', name)}'" for line in NO_CONFIG_SOURCE)
        script = directory / name
        script.write_text(
            "#!/bin/sh\n"
            f'echo "{name} $*" >> "{directory / "calls.log"}"\n'
            f"printf '%s\\n' {lines} >&2\n"
            "exit 1\n",
            encoding="utf-8",
        )
        script.chmod(0o755)
    return directory


def answered_without_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slurm's client commands answered in-process as slurm_client_without_controller's
    scripts answer: the one call that runs one (client.run_child) logs it in calls.log beside
    the command PATH finds and returns Slurm's lines, exit 1; a command PATH lacks is not
    found, as subprocess says."""

    def run_child(
        argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        name = argv[0]
        found = shutil.which(name, path=(os.environ if env is None else env).get("PATH"))
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
        with (Path(found).parent / "calls.log").open("a", encoding="utf-8") as log:
            log.write(" ".join(argv) + "\n")
        lines = "".join(f"{line.replace('scontrol', name)}\n" for line in NO_CONFIG_SOURCE)
        return subprocess.CompletedProcess(list(argv), 1, "", lines)

    monkeypatch.setattr(client, "run_child", run_child)


def test_a_slurm_dry_run_off_the_cluster_writes_the_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the dry run failed in `sbatch`'s absence (then in scontrol): a laptop could
    not review the scripts it would submit."""
    config = write_config(tmp_path, **SLURM)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "results"
    result = invoke("-c", config, "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    output = flat(result.output)
    assert "missing: sbatch, squeue, scontrol, scancel" in output
    assert "warning: not checked: that Slurm has the cluster's default partition" in output
    assert "warning: not checked: 2 node(s) per job against the node count" in output
    scripts = sorted((out / "truth" / "slurm").glob("*/job.sbatch"))
    assert len(scripts) == 2  # one allocation per node count
    assert "sbatch script written" in result.output
    assert "dry run: nothing submitted" in result.output


@pytest.mark.slow  # starts a child command
def test_a_slurm_dry_run_without_a_reachable_controller_writes_the_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Slurm's client installed but no controller to answer (scontrol: "Could not
    establish a configuration source"), the dry run still writes the scripts, quotes Slurm,
    and names what was not checked, a line each."""
    config = write_config(tmp_path, **SLURM)
    client = slurm_client_without_controller(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(client))
    out = tmp_path / "results"
    result = invoke("-c", config, "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    warnings = [w.strip() for w in flat(result.output).split("warning:")[1:]]
    assert warnings[0].startswith(
        "Slurm's controller could not be asked from here (scontrol failed: scontrol: error: "
        "resolve_ctls_from_dns_srv"
    )
    assert (
        "scontrol: fatal: Could not establish a configuration source): the sbatch scripts are "
        "written for review" in warnings[0]
    )
    assert warnings[1] == (
        "not checked: that Slurm has the cluster's default partition (launcher.slurm.partition)"
    )
    assert warnings[2].startswith(
        "not checked: 2 node(s) per job against the node count and MaxNodes of the cluster's "
        "default partition (launcher.nodes)"
    )
    scripts = sorted((out / "truth" / "slurm").glob("*/job.sbatch"))
    assert len(scripts) == 2
    assert "dry run: nothing submitted" in result.output
    calls = (client / "calls.log").read_text(encoding="utf-8").splitlines()
    assert calls == ["scontrol show partition -o"]  # asked once; nothing submitted


def test_a_slurm_dry_run_writes_the_scripts_and_quotes_a_controller_that_did_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above, scontrol's answer read in-process: the warnings, the scripts and
    the one question are this process's own work."""
    answered_without_controller(monkeypatch)
    test_a_slurm_dry_run_without_a_reachable_controller_writes_the_scripts(tmp_path, monkeypatch)


@pytest.mark.slow  # starts a child process
def test_a_resumed_dry_run_without_a_controller_says_the_recorded_jobs_were_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.schedulers.slurm.jobs import JobRecord, add_job, now

    config = write_config(tmp_path, **SLURM)
    out = tmp_path / "results"
    store = ResultStore((out / "truth").resolve())
    record = JobRecord(
        job_id="41", allocation="s01-n1", nodes=1, cells=[], script="x", submitted_at=now()
    )
    add_job(store, record)
    monkeypatch.setenv("PATH", str(slurm_client_without_controller(tmp_path / "bin")))
    result = invoke("-c", config, "-o", out, "--dry-run", "--resume")
    assert result.exit_code == 0, result.output
    assert (
        "warning: not checked: which jobs recorded in slurm/jobs.json still run (--resume)"
        in flat(result.output)
    )


def test_a_resumed_dry_run_says_the_recorded_jobs_were_not_asked_when_slurm_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered_without_controller(monkeypatch)
    test_a_resumed_dry_run_without_a_controller_says_the_recorded_jobs_were_not_asked(
        tmp_path, monkeypatch
    )


@pytest.mark.slow  # starts a child command
def test_the_real_scontrol_with_its_controller_down_is_a_dry_run_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real client against a slurm.conf whose controller port nobody listens on (as with
    slurmctld stopped): Slurm's own words, the scripts written."""
    import shutil
    import socket

    if shutil.which("scontrol") is None:
        pytest.skip("Slurm's client is not installed (apt-get install slurm-client)")
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=unreachable\n"
        "SlurmctldHost=localhost(127.0.0.1)\n"
        f"SlurmctldPort={port}\n"
        "AuthType=auth/munge\n"
        "MessageTimeout=2\n"
        "NodeName=n1 NodeAddr=127.0.0.1 CPUs=1\n"
        "PartitionName=debug Nodes=n1 Default=YES State=UP\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    out = tmp_path / "results"
    result = invoke("-c", write_config(tmp_path, **SLURM), "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert (
        "Slurm's controller could not be asked from here (scontrol failed: "
        "slurm_load_partitions error: Unable to contact slurm controller (connect failure))"
        in flat(result.output)
    )
    assert len(sorted((out / "truth" / "slurm").glob("*/job.sbatch"))) == 2


@pytest.mark.slow  # starts a child command
def test_a_real_slurm_run_without_a_controller_stops_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path, **SLURM)
    client = slurm_client_without_controller(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(client))
    result = invoke("-c", config, "-o", tmp_path / "results")
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "Could not establish a configuration source" in flat(result.output)
    calls = (client / "calls.log").read_text(encoding="utf-8").splitlines()
    assert not any(call.startswith("sbatch") for call in calls)


def test_a_slurm_run_stops_in_one_line_read_from_scontrols_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered_without_controller(monkeypatch)
    test_a_real_slurm_run_without_a_controller_stops_in_one_line(tmp_path, monkeypatch)


@pytest.mark.slow  # starts a child command
def test_batch_sizes_auto_under_slurm_is_refused_naming_the_launcher(tmp_path: Path) -> None:
    """The login node does not see the nodes' GPUs: one line that says so and how to go on
    (docs/first-gpu-run.md quotes it: tests/project/test_first_gpu_run_doc.py)."""
    data = {key: value for key, value in TINY.items() if key != "batch_sizes"}
    slurm = {"kind": "slurm", "nodes": [1, 2], "slurm": {"gpus_per_node": 8}}
    path = tmp_path / "auto.yaml"
    path.write_text(json.dumps({**data, "device": "cuda", "launcher": slurm}), encoding="utf-8")
    result = invoke("-c", path, "-o", tmp_path / "results", "--dry-run")
    assert result.exit_code == 2, result.output
    assert [line for line in result.output.splitlines() if line.startswith("error:")] == [
        "error: batch_sizes: auto sizes each batch from the GPU's memory, which is unknown "
        "here (launcher.kind slurm: the cells run on the cluster's nodes, whose GPUs are not "
        "read from the submitting host); list batch_sizes (torchscale config init --hardware "
        "NAME sizes them for a named node)"
    ]


def test_batch_sizes_auto_under_slurm_is_refused_before_slurm_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same line off the cluster, Slurm's client not found (in-process)."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    answered_without_controller(monkeypatch)
    test_batch_sizes_auto_under_slurm_is_refused_naming_the_launcher(tmp_path)


def test_a_real_slurm_run_off_the_cluster_still_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path, **SLURM)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "results"
    result = invoke("-c", config, "-o", out)
    assert result.exit_code == 2, result.output
    assert "needs Slurm's client commands on PATH" in result.output
    assert not out.exists()


def test_a_comm_dry_run_probes_the_output_like_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    args = ["comm", "--device", "cpu", "--dry-run", "-o", str(blocker / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "cannot write results to" in result.output and "(ENOTDIR)" in result.output


def test_a_dry_run_says_which_batch_auto_chose(tmp_path: Path) -> None:
    """A config without batch_sizes runs `auto`; the dry run names the batch it
    chose and why, before the cells; a CUDA config on a node without a GPU cannot size one
    and says so in one line."""
    data = {key: value for key, value in TINY.items() if key != "batch_sizes"}
    path = tmp_path / "auto.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = invoke("-c", path, "-o", tmp_path / "results", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[0] == (
        "note: tiny-mlp fp32: batch 8 (batch_sizes auto on CPU: host memory does not limit a "
        "CPU benchmark)"
    )
    assert lines[1].startswith("1. tiny-mlp__b8__w1__fp32__ddp__")
    path.write_text(json.dumps({**data, "device": "cuda"}), encoding="utf-8")
    failed = invoke("-c", path, "-o", tmp_path / "results", "--dry-run")
    assert failed.exit_code == 2 and "Traceback" not in failed.output
    assert [line for line in failed.output.splitlines() if line.startswith("error:")] == [
        "error: batch_sizes: auto sizes each batch from the GPU's memory, which is unknown "
        "here (no CUDA GPU here); list batch_sizes (torchscale config init --hardware NAME "
        "sizes them for a named node)"
    ]
