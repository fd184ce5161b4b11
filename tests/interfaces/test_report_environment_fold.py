"""One machine is one row of the environment table: the H100 workload's
two experiments read the same host from their cells' rank 0 (two rows before)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app

H100_WORKLOAD = Path(__file__).parents[1] / "fixtures" / "h100_second_run" / "workload" / "runs"


def test_one_host_seen_by_three_experiments_is_one_row(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    args = ["report", "-s", str(H100_WORKLOAD), "-f", "json", "--full", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    sections = json.loads(out.read_text(encoding="utf-8"))["sections"]
    blocks = [b for s in sections for b in s["blocks"] if b.get("id") == "appendix-environment"]
    ((row,),) = [b["rows"] for b in blocks]
    assert row["host"] == "vm" and row["gpus"] == "1 x NVIDIA H100 80GB HBM3"
    assert set(row["source"].split(", ")) == {"compiled", "eager"}
    assert row["role"] == "rank 0 of the cells"
