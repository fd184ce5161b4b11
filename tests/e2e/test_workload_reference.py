"""benchmarks/workload_reference.py keeps running (the comparison must stay honest on
CPU, so CI runs it): two short rounds, one in each order, both sides the same model, tiny-bert's
loop of benchmarks/reference_loops.py (the GPT-2 loop is built and stepped in
test_workload_reference_loss.py). Its figures are a benchmark's, never asserted here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT, start, stop

SCRIPT = REPO_ROOT / "benchmarks" / "workload_reference.py"

pytestmark = pytest.mark.slow  # benchmarks' smoke runs: real training


def test_the_reference_benchmark_runs_both_sides_on_one_model(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    argv = [sys.executable, str(SCRIPT), "--model", "tiny-bert", "--rounds", "2", "--steps", "3"]
    argv += ["--warmup", "1"]
    proc = start(argv, output, env={"OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path)})
    try:
        code = proc.wait(timeout=240)
    finally:
        stop(proc, marker=str(tmp_path))
    text = output.read_text(encoding="utf-8", errors="replace")
    assert code == 0, text
    rounds = re.findall(
        r"^round (\d) \((\w+) first\): reference [\d,]+\.\d samples/s, "
        r"torchscale [\d,]+\.\d samples/s, ratio \d+\.\d{3}$",
        text,
        re.M,
    )
    assert rounds == [("1", "reference"), ("2", "torchscale")], text
    # tiny-bert as torchscale builds it (tests/rank/test_models.py pins the count)
    assert "both sides train 187,456 parameters" in text, text
    assert re.search(r"1 thread\(s\) a side: median ratio torchscale / reference \d\.\d{3}", text)
    assert "95 % interval" in text
    assert not any(tmp_path.glob("workload-reference-*")), "the work directory is removed"


def test_the_cpu_malloc_benchmark_runs_both_settings(tmp_path: Path) -> None:
    """benchmarks/cpu_malloc.py: the bare loop with glibc's defaults and with a CPU cell's
    malloc settings, each its own process; its figures are a benchmark's, not asserted."""
    output = tmp_path / "out.txt"
    argv = [sys.executable, str(REPO_ROOT / "benchmarks" / "cpu_malloc.py")]
    proc = start([*argv, "--rounds", "1", "--steps", "3"], output, env={"OMP_NUM_THREADS": "1"})
    try:
        code = proc.wait(timeout=240)
    finally:
        stop(proc, marker=str(REPO_ROOT / "benchmarks" / "cpu_malloc.py"))
    text = output.read_text(encoding="utf-8", errors="replace")
    assert code == 0, text
    for side in ("glibc defaults", "cpu_malloc reuse"):
        assert re.search(
            rf"^  {side} +[\d,]+ tokens/s \(runs [\d,]+-[\d,]+\), +[\d,]+ page faults/s, "
            r"kernel +\d+\.\d % of CPU time$",
            text,
            re.M,
        ), text
    assert re.search(r"reuse / defaults, median of the rounds' ratios: \d\.\d{3}$", text, re.M)
