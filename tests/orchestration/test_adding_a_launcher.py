"""Adding a launcher is one package plus one registry line (docs/architecture.md,
"Adding a launcher"): tests/added_launcher/ holds a made-up scheduler's `Launcher`, and a fresh
interpreter adds the one line to torchscale/contracts/launcher_registry.py's mapping before anything
reads it. The config then accepts its kind, `torchscale benchmark` runs it, and the CLI shows what
it queued and how its jobs go through the launchers' one generic event (cell ids named as the
plan names them, --quiet leaving progress out but not a problem) and prints what became of its
submission, without another file changing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fresh_interpreter import run_probe

_PROBE = """
import json, sys
import torchscale.contracts.launcher_registry as registry
registry.LAUNCHERS["batchq"] = "tests.added_launcher.launcher:BatchQueue"  # the registry line

from typer.testing import CliRunner
from torchscale.interfaces.cli.app import app

config, out = sys.argv[1], sys.argv[2]
found = {}
for name, flags in (("run", []), ("quiet", ["--quiet"]), ("dry", ["--dry-run"])):
    result = CliRunner().invoke(
        app, ["benchmark", "-c", config, "-o", out + "-" + name, *flags], env={"COLUMNS": "200"}
    )
    found[name] = {"exit": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}
found["slurm_loaded"] = any(".schedulers.slurm" in m for m in sys.modules)
print(json.dumps(found))
"""

CONFIG = (
    "experiment_name: added\nmodels: [tiny-mlp]\nbatch_sizes: [8]\ngpu_counts: [1, 2]\n"
    "device: cpu\nlauncher: {kind: batchq}\n"
)


@pytest.mark.slow
def test_one_package_and_one_registry_line_add_a_launcher(tmp_path: Path) -> None:
    config = tmp_path / "batchq.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    found = run_probe(_PROBE, str(config), str(tmp_path / "out"))
    run, quiet, dry = found["run"], found["quiet"], found["dry"]
    assert run["exit"] == 0, run
    queued = lines(run["stdout"])
    ids = [line.removeprefix("job file: ").removesuffix(".job") for line in queued[:2]]
    assert [i.split("__")[:3] for i in ids] == [["tiny-mlp", "b8", "w1"], ["tiny-mlp", "b8", "w2"]]
    # the submission: its lines when queued, its closing line after the run (stdout)
    assert queued == [
        f"job file: {ids[0]}.job",
        f"job file: {ids[1]}.job",
        "2 job(s) queued",
        "batchq: left queued",
    ]
    assert sorted(p.name for p in (tmp_path / "out-run" / "added" / "batchq").iterdir()) == [
        f"{i}.job" for i in sorted(ids)
    ]
    # the generic events (stderr): a cell named as the plan names it, a problem as it was said
    assert lines(run["stderr"]) == [
        "> [BATCHQ] job 1: running tiny-mlp b8 x1 fp32 ddp",
        "> [BATCHQ] job 2: running tiny-mlp b8 x2 fp32 ddp",
        "> [BATCHQ] job 2: node check: failed [gpu missing]",
    ]
    # --quiet leaves the progress out, never a problem or the submission
    assert quiet["exit"] == 0 and lines(quiet["stdout"]) == queued
    assert lines(quiet["stderr"]) == ["> [BATCHQ] job 2: node check: failed [gpu missing]"]
    # a dry run goes to the same launcher, and its closing line replaces the plan's
    assert dry["exit"] == 0 and lines(dry["stdout"])[-1] == "batchq: nothing queued (dry run)"
    assert not found["slurm_loaded"]  # a launcher loads only its own package


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]
