"""The order the suite runs its files in (CI passes --no-loadscope-reorder, or pytest-xdist
would order a file by its count of tests instead)."""

from __future__ import annotations

# The files whose tests take longest (worker seconds with --runslow on 2 cores, longest first):
# run first, a pytest-xdist worker takes them in turn and the short files fill in behind, so
# both workers end together instead of one waiting on a long file collected last. An order,
# never a check: a file missing here only runs in its collected place.
LONGEST_FIRST = (
    "tests/e2e/test_straggler_kinds.py",
    "tests/orchestration/test_slurm.py",
    "tests/e2e/test_workload_level.py",
    "tests/e2e/test_sweep.py",
    "tests/e2e/test_strategies.py",
    "tests/e2e/test_profile_run.py",
    "tests/e2e/test_prediction_accuracy.py",
    "tests/orchestration/test_compile_cache.py",
    "tests/e2e/test_own_job_frameworks.py",
    "tests/orchestration/test_compile_toolchain.py",
    "tests/orchestration/test_max_batch.py",
    "tests/orchestration/test_validate_perf.py",
    "tests/e2e/test_surface_equality.py",
    "tests/orchestration/test_comm.py",
    "tests/e2e/test_workload_reference.py",
    "tests/interfaces/test_validate_cli.py",
    "tests/orchestration/test_output_dir.py",
    "tests/e2e/test_predict_then_verify.py",
    "tests/e2e/test_straggler_detection.py",
    "tests/e2e/test_own_job_overhead.py",
    "tests/e2e/test_cell_fixed_cost.py",
    "tests/e2e/test_own_job_sweep.py",
)


def run_order(nodeid: str) -> int:
    """A test's place: its file's in LONGEST_FIRST, or after all of them."""
    path = nodeid.split("::", 1)[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)
