"""A schema 1 comm result stored its gate's reason, its left-out sizes and what was unavailable
as sentences; read today, each is a finding (the gate judged again from the stored footer) and
prints as it did (issue 72: facts, not sentences)."""

from __future__ import annotations

import json
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import COMM_SCHEMA_VERSION
from torchscale.interfaces.console.comm import comm_lines
from torchscale.offline.results.documents import read_comm

V1_GATE = "average busbw below 50 GB/s: broadcast 20.00 GB/s"
V1_SKIPPED = "all_gather: 2 size(s) below 8 B (one float32 element per rank) left out"


def _v1(tmp_path: Path) -> Path:
    summary = {"rows": 1, "wrong": 0, "busbw_factor": 1.0}
    data = {
        "kind": "torchscale.comm",
        "schema_version": 1,
        "id": "run",
        "world_size": 2,
        "device": "cuda",
        "backend": "nccl",
        "dtype": "float32",
        "check": True,
        "summaries": [
            {**summary, "op": "all_reduce", "avg_busbw_gbps": 90.0},
            {**summary, "op": "broadcast", "avg_busbw_gbps": 20.0},
        ],
        "min_busbw_gbps": 50.0,
        "gate": "failed",
        "gate_reason": V1_GATE,
        "skipped": [V1_SKIPPED, "something no torchscale wrote"],
        "unavailable": {"pairs": "needs at least 2 ranks"},
        "pairs": [{"a": 0, "b": 1, "size_bytes": 8, "status": "ok", "reason": None}],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    return path


def test_a_schema_1_comm_result_reads_as_findings_in_the_words_it_stored(tmp_path: Path) -> None:
    read = read_comm(_v1(tmp_path))
    result = read.doc
    assert result is not None, read.problem
    assert result.schema_version == 1 and COMM_SCHEMA_VERSION == 3
    assert result.gate == "failed"
    assert result.gate_finding == Finding(
        code="comm.gate.below", figures={"minimum_gbps": 50.0, "busbw": {"broadcast": 20.0}}
    )
    assert result.skipped[0] == Finding(
        code="comm.sizes_left_out",
        figures={"op": "all_gather", "sizes": 2, "below_bytes": 8, "dtype": "float32"},
    )
    assert result.unavailable == {"pairs": Finding(code="comm.pairs.one_rank")}
    text = "\n".join(comm_lines(result))
    assert f"# Gate --min-busbw 50: failed: {V1_GATE}" in text
    assert f"# note: {V1_SKIPPED}" in text
    assert "# note: something no torchscale wrote (as a schema 1 result stored it)" in text
    assert "# unavailable: pairs: needs at least 2 ranks" in text
