"""benchmarks/cell_fixed_cost.py keeps running (it measures a cell's fixed cost, launch to its
first measured step, against a bare torchrun + gloo init + barrier, and against a bare DDP
script): one round of the smallest cell. Its times are a benchmark's, never asserted
here; what a rank has done by its first measured step is (no scipy, no pandas: they wait for
rank 0's aggregation, after the windows; set-up's objects frozen out of the collection at each
window's edge)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT, start, stop

SCRIPT = REPO_ROOT / "benchmarks" / "cell_fixed_cost.py"

pytestmark = pytest.mark.slow  # a benchmark's smoke run: real torchrun cells


def test_one_round_times_every_side_and_sees_no_heavy_import(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    argv = [sys.executable, str(SCRIPT), "--rounds", "1", "--warmup", "1", "--steps", "2"]
    proc = start(argv, output, env={"TMPDIR": str(tmp_path), "OMP_NUM_THREADS": "1"})
    try:
        code = proc.wait(timeout=300)
    finally:
        stop(proc, marker=str(tmp_path))
    text = output.read_text(encoding="utf-8", errors="replace")
    assert code == 0, text
    assert re.search(r"; 1-min load average before: \d+\.\d\d$", text, re.M), text
    assert re.search(
        r"^round 1 \(bare, bare DDP, torchscale\): to the first step bare \d+\.\d\d s, "
        r"bare DDP \d+\.\d\d s, torchscale \d+\.\d\d s \(torchscale / bare \d+\.\d{3}\); "
        r"to exit torchscale / bare \d+\.\d{3}$",
        text,
        re.M,
    ), text
    for side in ("bare", "bare DDP", "torchscale"):
        assert re.search(
            rf"^ *{side}: launch to first measured step \d+\.\d\d s, to exit \d+\.\d\d s, "
            r"CPU of a rank by its first step \d+\.\d\d s \(medians\)$",
            text,
            re.M,
        ), text
    assert re.search(
        r"^median ratio torchscale / bare, to the first measured step: \d+\.\d{3} "
        r"\(target <= 1\.15: (met|MISSED)\); whole process: \d+\.\d{3}; a rank's CPU: "
        r"\d+\.\d{3}$",
        text,
        re.M,
    ), text
    assert re.search(r"^median ratio torchscale / bare DDP \(what the harness adds", text, re.M)
    heavy = re.search(
        r"^scipy and pandas in a rank at its first measured step: neither; set-up objects "
        r"frozen out of the window edges' garbage collection: ([\d,]+)$",
        text,
        re.M,
    )
    assert heavy is not None, text
    assert int(heavy[1].replace(",", "")) > 0, text  # torch's modules, the model, ...
    assert not list(tmp_path.glob("cell-fixed-cost-*")), "the work directory is removed"
