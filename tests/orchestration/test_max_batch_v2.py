"""A schema 2 max-batch result stored its reason, warnings and unavailable reasons as
sentences; read today each is the finding it said, in the same words (issue 72)."""

from __future__ import annotations

import json
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.contracts.wording.max_batch import reason_words
from torchscale.offline.results.documents import read_max_batch

FAILED = "the probe at batch 8 failed: rank 0 raised RuntimeError: boom"
FLAKY = (
    "batch 16 fitted (the sweep) but batch 6 ran out of memory: memory use is not monotonic in "
    "the batch or not reproducible (cuDNN algorithm choice, allocator fragmentation, other "
    "processes on the device); treat max_batch as approximate"
)
NVML = "NVML unavailable (NVMLError_LibraryNotFound): device memory total unknown"
WARMUP = (
    "no max batch was found (see reason); each probe ran at least 1 warm-up step(s), until "
    "compile settles"
)


def _v2(tmp_path: Path) -> Path:
    probe = {"phase": "double", "seconds": 1.0}
    data = {
        "kind": "torchscale.max_batch",
        "schema_version": 2,
        "group": "g",
        "definition_sha256": "0" * 64,
        "model": "gpt2",
        "label": "gpt2",
        "world_size": 1,
        "precision": "bf16",
        "strategy": "ddp",
        "device": "cuda",
        "backend": "nccl",
        "status": "failed",
        "reason": FAILED,
        "max_batch": None,
        "limit": 4096,
        "limit_reached": False,
        "largest_fit": 4,
        "start": 1,
        "probe_steps": 2,
        "probe_warmup_min": 1,
        "probe_compiled": True,
        "probes": [
            {**probe, "batch": 4, "outcome": "fits"},
            {
                **probe,
                "batch": 8,
                "outcome": "failed",
                "reason": "rank 0 raised RuntimeError: boom",
            },
        ],
        "peak_bytes": None,
        "peak_allocated_bytes": None,
        "peak_reserved_bytes": None,
        "peak_rss_bytes": None,
        "device_total_bytes": None,
        "memory_utilisation": None,
        "warnings": [FLAKY],
        "unavailable": {"device_total_bytes": NVML, "probe_warmup_steps": WARMUP},
    }
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    return path


def test_a_schema_2_max_batch_result_reads_as_findings_in_the_words_it_stored(
    tmp_path: Path,
) -> None:
    read = read_max_batch(_v2(tmp_path))
    result = read.doc
    assert result is not None, read.problem
    assert result.finding == Finding(code="max_batch.probe_failed", figures={"batch": 8})
    assert reason_words(result) == FAILED
    assert result.warnings == [
        Finding(
            code="max_batch.not_monotonic",
            figures={"batch": 16, "where": "the sweep", "oom_batch": 6},
        )
    ]
    assert [say(w) for w in result.warnings] == [FLAKY]
    unavailable = result.unavailable
    assert unavailable["device_total_bytes"].code == "max_batch.total.nvml_unavailable"
    assert {k: say(v) for k, v in unavailable.items()} == {
        "device_total_bytes": NVML,
        "probe_warmup_steps": WARMUP,
    }
