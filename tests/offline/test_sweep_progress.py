"""How far a sweep got, in the sentence a report opens with: each way a sweep
ends, over hand-built progress (the writer and the report are tested in
tests/orchestration/test_sweep_state.py and tests/interfaces/test_report_sweep_state.py)."""

from __future__ import annotations

from pathlib import Path

from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.sweep_state import PlannedCell, SweepState
from torchscale.offline.results.experiment import Experiment
from torchscale.offline.results.sweep_progress import CellProgress, SweepProgress, sweep_progress

OK = CellProgress("a", "m b8 x1 fp32 ddp", "ok")
FAILED = CellProgress("b", "m b8 x2 fp32 ddp", "failed", "rank 1 raised")
SKIPPED = CellProgress("c", "m b8 x4 fp32 ddp", "skipped", "needs 4 CPU cores; this node has 2")
CUT = CellProgress("d", "m b16 x1 fp32 ddp", "stopped", "stopped by SIGHUP while it ran")
NEVER = CellProgress("e", "m b16 x2 fp32 ddp", "not reached", "the sweep stopped before it")


def test_a_signal_names_itself_and_the_cell_it_cut_short() -> None:
    """The headline's sentence says how it ended and where; the line under it names the cells
    (the summary counts them); the first action finishes it."""
    progress = SweepProgress(
        "stopped", [OK, SKIPPED, CUT, NEVER], "SIGHUP", CUT, 2, ["torchscale", "benchmark"]
    )
    assert progress.sentence() == "Sweep stopped by SIGHUP during cell 3 of 4."
    assert progress.details() == (
        "Stopped while it ran: m b16 x1 fp32 ddp. Not reached: m b16 x2 fp32 ddp. Skipped by "
        "design (needs 4 CPU cores; this node has 2): m b8 x4 fp32 ddp."
    )
    assert progress.finish() == "To finish it: `torchscale benchmark`."


def test_fail_fast_says_it_stopped_after_the_failure() -> None:
    progress = SweepProgress("stopped", [OK, FAILED, NEVER], "--fail-fast", None, 2)
    assert (
        progress.sentence()
        == "Sweep stopped by --fail-fast after its first failed cell, of 3 planned."
    )
    assert (
        progress.details()
        == "Failed (rank 1 raised): m b8 x2 fp32 ddp. Not reached: m b16 x2 fp32 ddp."
    )
    assert progress.finish() == ""  # no config kept: no command to give


def test_a_killed_sweep_is_still_running_by_its_file() -> None:
    progress = SweepProgress("running", [OK, NEVER], None, None, 1)
    sentence = progress.sentence()
    assert sentence is not None
    assert sentence.startswith("Sweep did not finish after cell 1 of 2: its state file still")
    assert progress.details() == "Not reached: m b16 x2 fp32 ddp."


def test_complete_is_silent_in_the_headline_and_a_skip_is_said_under_it() -> None:
    assert SweepProgress("complete", [OK, FAILED]).sentence() is None
    skipped = SweepProgress("complete", [OK, SKIPPED])
    assert skipped.sentence() is None
    assert skipped.details() == (
        "Skipped by design (needs 4 CPU cores; this node has 2): m b8 x4 fp32 ddp."
    )


def _cell(cell_id: str) -> CellIdentity:
    return CellIdentity(
        id=cell_id,
        definition_sha256="0" * 64,
        model="m",
        label="m",
        batch_size=8,
        world_size=1,
        precision="fp32",
        strategy="ddp",
        device="cpu",
        backend="gloo",
    )


def _experiment(
    state: SweepState, ok: list[str], started: list[str], skipped: list[str] = ()
) -> Experiment:
    results = [CellResult(cell=_cell(i), status=Status.OK) for i in ok]
    bad = [(Path("x/cells") / f"{i}.json", "not valid JSON") for i in skipped]
    return Experiment(Path("x"), {}, {}, results, bad, state, started)


PLAN = [PlannedCell(id=f"c{i}", label=f"m b8 x{i} fp32 ddp") for i in range(4)]


def test_a_resumed_cell_stopped_again_is_the_one_stopped_not_its_old_result() -> None:
    state = SweepState(phase="stopped", planned=PLAN, finished=1, stopped_by="SIGTERM", during="c1")
    progress = sweep_progress(_experiment(state, ok=["c0", "c1"], started=["c0", "c1"]))
    assert [c.state for c in progress.cells] == ["ok", "stopped", "not reached", "not reached"]
    assert progress.during is not None and progress.during.id == "c1"


def test_an_unreadable_result_is_unreadable_not_unrun() -> None:
    state = SweepState(phase="complete", planned=PLAN, finished=4)
    progress = sweep_progress(_experiment(state, ok=["c0", "c1", "c3"], started=[], skipped=["c2"]))
    assert [c.state for c in progress.cells] == ["ok", "ok", "unreadable", "ok"]
    assert progress.sentence() is None


def test_a_killed_sweep_names_the_cell_it_was_in() -> None:
    """SIGKILL leaves 'running': the planned cell with a spec and no result was cut short."""
    state = SweepState(phase="running", planned=PLAN, finished=2)
    progress = sweep_progress(_experiment(state, ok=["c0", "c1"], started=["c0", "c1", "c2"]))
    assert [c.state for c in progress.cells] == ["ok", "ok", "stopped", "no result yet"]
    sentence = progress.sentence()
    assert sentence is not None and sentence.startswith("Sweep did not finish during cell 3 of 4")


def test_without_a_state_file_every_cell_started_without_a_result_is_named() -> None:
    """A Slurm sweep runs cells side by side: each in flight is named, none called old."""
    progress = sweep_progress(_experiment(None, ok=["c0"], started=["c0", "c1", "c2"]))  # type: ignore[arg-type]
    sentence = progress.sentence()
    assert sentence is not None and "during 2 cells (c1, c2)" in sentence
    assert "old" not in sentence
    assert progress.details().endswith("No sweep.json: the cells it never started are not known.")


def test_an_unfollowed_run_lists_every_cell_with_its_result_or_none_yet() -> None:
    """Kubernetes (handed on) or a detached Slurm follower: 'running' with a reason; a cell the
    plan skipped is skipped, a started one with no result is not yet run, never 'stopped'."""
    by = "handed to Kubernetes; torchscale does not follow its jobs"
    needs = Finding(
        code="plan.needs_gpus", figures={"have": 1, "source": None, "gpus": 8, "nodes": 1}
    )
    plan = [*PLAN[:3], PlannedCell(id="c3", label="m b8 x3 fp32 ddp", skip=needs)]
    state = SweepState(phase="running", planned=plan, finished=0, stopped_by=by)
    progress = sweep_progress(_experiment(state, ok=["c0", "c1"], started=["c2"]))
    assert [c.state for c in progress.cells] == ["ok", "ok", "no result yet", "skipped"]
    assert progress.cells[2].why == by
    assert progress.during is None
    assert progress.sentence() == f"Sweep not followed to its end ({by})."
    assert progress.details() == (
        "No result yet: m b8 x2 fp32 ddp. Skipped by design (needs 8 GPUs; this node has 1): "
        "m b8 x3 fp32 ddp."
    )


def test_a_detached_follower_says_why_it_cannot_tell_more() -> None:
    by = "its follower was stopped; the Slurm jobs go on (benchmark --status DIR)"
    state = SweepState(phase="running", planned=PLAN, finished=1, stopped_by=by)
    progress = sweep_progress(_experiment(state, ok=["c0"], started=[]))
    assert progress.sentence() == f"Sweep not followed to its end ({by})."
    assert progress.details() == "No result yet: m b8 x1 fp32 ddp, b8 x2 fp32 ddp, b8 x3 fp32 ddp."


def test_without_a_state_file_torchruns_error_file_names_the_signal(tmp_path: Path) -> None:
    """The H100 sweep stopped by SIGTERM before sweeps kept a state file: torchrun's own error
    file of the started cell says 'got signal: 15', so the report says by what."""
    import json

    from torchscale.offline.results.experiment import load

    root = tmp_path / "exp"
    for sub in ("cells", "specs", "logs/c1"):
        (root / sub).mkdir(parents=True)
    (root / "specs" / "c1.json").write_text("{}", encoding="utf-8")
    message = {"message": "SignalException: Process 2320 got signal: 15", "extraInfo": {}}
    error = {"message": message}
    (root / "logs" / "c1" / "error.json").write_text(json.dumps(error), encoding="utf-8")
    experiment = load(root)
    assert experiment.signalled == {"c1": 15}
    sentence = sweep_progress(experiment).sentence()
    assert sentence is not None and sentence.startswith("Sweep stopped by SIGTERM during c1")
    # a torn error file says nothing of a signal
    (root / "logs" / "c1" / "error.json").write_text("{not json", encoding="utf-8")
    assert load(root).signalled == {}


def test_a_signal_is_said_of_its_own_cell_only() -> None:
    """Two cells cut short, one with a signal in its torchrun error file: only that one is
    said stopped by it; the other is 'stopped, killed or still running'."""
    experiment = _experiment(None, ok=["c0"], started=["c0", "c1", "c2"])  # type: ignore[arg-type]
    experiment.signalled["c2"] = 15
    by_id = {c.id: c for c in sweep_progress(experiment).cells}
    assert by_id["c2"].why is not None and by_id["c2"].why.startswith("stopped by SIGTERM")
    assert by_id["c1"].why is not None and "stopped, killed or still running" in by_id["c1"].why
