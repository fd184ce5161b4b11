"""How far a sweep got, in the sentence a report opens with (issue 63, point 1): each way a sweep
ends, over hand-built progress (the writer and the report are tested in
tests/orchestration/test_sweep_state.py and tests/interfaces/test_report_sweep_state.py)."""

from __future__ import annotations

from torchscale.offline.results.sweep_progress import CellProgress, SweepProgress

OK = CellProgress("a", "m b8 x1 fp32 ddp", "ok")
FAILED = CellProgress("b", "m b8 x2 fp32 ddp", "failed", "rank 1 raised")
SKIPPED = CellProgress("c", "m b8 x4 fp32 ddp", "skipped", "needs 4 CPU cores; this node has 2")
CUT = CellProgress("d", "m b16 x1 fp32 ddp", "stopped", "stopped by SIGHUP while it ran")
NEVER = CellProgress("e", "m b16 x2 fp32 ddp", "not run", "not run: the sweep stopped before it")


def test_a_signal_names_itself_and_the_cell_it_cut_short() -> None:
    progress = SweepProgress("stopped", [OK, SKIPPED, CUT, NEVER], "SIGHUP", CUT, 2)
    assert progress.sentence() == (
        "Sweep stopped by SIGHUP during cell 3 of 4 (m b16 x1 fp32 ddp): 1 ok, 1 skipped "
        "(needs 4 CPU cores; this node has 2), 1 stopped, 1 not run."
    )


def test_fail_fast_says_it_stopped_after_the_failure() -> None:
    progress = SweepProgress("stopped", [OK, FAILED, NEVER], "--fail-fast", None, 2)
    assert progress.sentence() == (
        "Sweep stopped by --fail-fast after its first failed cell, of 3 planned: 1 ok, 1 failed, "
        "1 not run."
    )


def test_a_killed_sweep_is_still_running_by_its_file() -> None:
    progress = SweepProgress("running", [OK, NEVER], None, None, 1)
    sentence = progress.sentence()
    assert sentence is not None
    assert sentence.startswith("Sweep did not finish after cell 1 of 2: its state file still")
    assert sentence.endswith("1 ok, 1 not run.")


def test_complete_is_silent_but_a_skip_is_said() -> None:
    assert SweepProgress("complete", [OK, FAILED]).sentence() is None
    assert SweepProgress("complete", [OK, SKIPPED]).sentence() == (
        "1 of 2 planned cells skipped (needs 4 CPU cores; this node has 2)."
    )
