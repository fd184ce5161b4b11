"""torchscale.contracts.step_phases: the phases of a step named once, and what is keyed by them."""

from __future__ import annotations

from torchscale.contracts.schema.cell_result import PhaseTimes
from torchscale.contracts.step_phases import (
    COMPUTE_PHASES,
    OWN_WORK_PHASES,
    STEP_PHASES,
    phase_range,
    seconds_column,
)
from torchscale.contracts.worker_spec import DelaySpec
from torchscale.interfaces.report.sections.latency import PHASE_LABELS


def test_a_step_is_its_own_work_and_the_wait_for_gradient_sync_in_order() -> None:
    assert STEP_PHASES == ("data", "forward", "backward", "grad_sync_wait", "optimizer")
    assert COMPUTE_PHASES == ("forward", "backward", "optimizer")
    assert set(STEP_PHASES) - set(OWN_WORK_PHASES) == {"grad_sync_wait"}


def test_the_result_schema_keeps_one_field_per_phase() -> None:
    assert tuple(PhaseTimes.model_fields) == STEP_PHASES


def test_a_delay_goes_into_own_work_only() -> None:
    schema = DelaySpec.model_json_schema()["properties"]["phase"]
    assert tuple(schema["enum"]) == OWN_WORK_PHASES


def test_what_is_keyed_by_phase_covers_every_phase() -> None:
    assert tuple(PHASE_LABELS) == STEP_PHASES


def test_names_in_traces_and_step_records() -> None:
    assert phase_range("forward") == "torchscale:forward"
    assert seconds_column("grad_sync_wait") == "grad_sync_wait_s"
