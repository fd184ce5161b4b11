"""Schema 15 -> 16 on the first H100 run's own cells (read in place; skipped when absent): the
untimed window edge, the GPU busy probe and the itemised fixed costs did not exist, so each is
null with its reason in a measured cell, and a skipped cell gains no reason."""

from __future__ import annotations

import json

from tests.h100_replay import DEFAULT_SWEEP, h100_cell, needs_h100
from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION, CellResult
from torchscale.contracts.wording.unavailable import coded
from torchscale.offline.results.versions import (
    V15_EDGE_STEPS,
    V15_FIXED_COSTS,
    V15_HOST_BOUND,
    parse_cell_result,
    upgrade_v15,
    upgrade_v16,
    upgrade_v17,
    upgrade_v18,
    upgrade_v19,
)


def _from_16(data: dict) -> dict:
    return upgrade_v19(upgrade_v18(upgrade_v17(upgrade_v16(data))))


@needs_h100
def test_an_h100_v15_cell_reads_with_the_reasons() -> None:
    raw = json.loads(h100_cell(DEFAULT_SWEEP, "tiny-mlp__b16__w1").read_text(encoding="utf-8"))
    assert raw["schema_version"] == 15 and raw["cell"]["device"] == "cuda"
    before = json.dumps(raw, sort_keys=True)
    upgraded = upgrade_v15(raw)
    assert json.dumps(raw, sort_keys=True) == before  # its input untouched
    direct = CellResult.model_validate(_from_16(upgraded))
    assert direct.schema_version == RESULT_SCHEMA_VERSION == 20
    assert direct.window_edge_steps is None and direct.host_bound is None
    assert direct.fixed_costs is None
    assert direct.unavailable["window_edge_steps"] == V15_EDGE_STEPS
    assert direct.unavailable["host_bound"] == V15_HOST_BOUND
    assert direct.unavailable["fixed_costs"] == V15_FIXED_COSTS
    # read the way every surface reads it
    result, version, problem = parse_cell_result(raw)
    assert problem is None and version == 15 and result is not None
    assert result.window_edge_steps is None and result.fixed_costs is None
    assert result.unavailable["window_edge_steps"] == V15_EDGE_STEPS


@needs_h100
def test_a_skipped_v15_cell_gains_no_reason() -> None:
    raw = json.loads(h100_cell(DEFAULT_SWEEP, "tiny-mlp__b16__w2").read_text(encoding="utf-8"))
    assert raw["status"] == "skipped"
    result = CellResult.model_validate(_from_16(upgrade_v15(raw)))
    assert "window_edge_steps" not in result.unavailable
    assert "host_bound" not in result.unavailable and "fixed_costs" not in result.unavailable


@needs_h100
def test_a_v15_cpu_cell_says_host_bound_applies_to_gpus() -> None:
    raw = json.loads(h100_cell(DEFAULT_SWEEP, "tiny-mlp__b16__w1").read_text(encoding="utf-8"))
    raw["cell"] = {**raw["cell"], "device": "cpu", "backend": "gloo"}
    result = CellResult.model_validate(_from_16(upgrade_v15(raw)))
    assert result.unavailable["host_bound"] == coded("unavailable.host_bound_cpu")
