"""Stored documents hold facts, not sentences (issue 72): every `str` field of every stored
schema (`contracts/schema/`) is either an identifier a program compares (a name, an id, a
path, a time, a version, an enumerated code) or text that is text by nature, stored as quoted
evidence (an exception's message, a log's tail, a job's root cause). A reason, a verdict, a
warning or a note is a finding (`contracts/finding.py`: a code and its figures), worded at
render time by `contracts/wording/`.

A new `str` field fails here until it is classified. NOT_YET lists the sentences still stored;
it must match the schemas exactly, so it can only shrink.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from typing import Any

from pydantic import BaseModel

import torchscale.contracts.schema as schema_package

# Compared by programs, never read as prose.
IDENTIFIERS: frozenset[str] = frozenset(
    {
        "burn_in.BurnSpec.result_path",
        "burn_in.Fingerprint.sha256",
        "burn_in.Interval.slowdown",  # NVML's slowdown reason names (clock_reasons.py)
        "burn_in.RankBurn.device",
        "burn_in.RankBurn.device_name",
        "cell.CellIdentity.definition_sha256",
        "cell.CellIdentity.id",
        "cell.CellIdentity.label",
        "cell.CellIdentity.model",
        "cell_result.CellError.artifacts",
        "cell_result.CellError.exit_signal",
        "cell_result.CellResult.model_kind",
        "cell_result.CellResult.started_at",
        "cell_result.DataPipeline.dir",
        "cell_result.Problem.category",
        "cell_result.InjectedDelay.phase",
        "cell_result.ParallelMetrics.mesh_dim_names",
        "cell_result.ProfileRecord.files",
        "cell_result.ProfileRecord.tool",
        "cell_result.ProfileRecord.trace_dir",
        "cell_result.RankStats.host",
        "cell_result.StragglerVerdict.phase",
        "cell_telemetry.HostLoad.host",
        "cell_telemetry.RankTelemetry.clock_event_reasons",
        "cell_telemetry.RankTelemetry.device",
        "cell_telemetry.RankTelemetry.gpu_name",
        "cell_telemetry.RankTelemetry.gpu_uuid",
        "cell_telemetry.RankTelemetry.host",
        "cell_telemetry.RankTelemetry.throttle_reasons",
        "cell_telemetry.Telemetry.source",
        "cell_telemetry.Telemetry.throttle_reasons",
        "comm_result.CommPair.host_a",
        "comm_result.CommPair.host_b",
        "comm_result.CommResult.backend",
        "comm_result.CommResult.device",
        "comm_result.CommResult.device_name",
        "comm_result.CommResult.dtype",
        "comm_result.CommResult.id",
        "comm_result.CommResult.imported_from",
        "comm_result.CommResult.started_at",
        "comm_result.CommRow.dtype",
        "comm_result.CommRow.op",
        "comm_result.CommRow.redop",
        "comm_result.OpSummary.op",
        "comm_result.RankTime.host",
        "finding.Finding.code",
        "forecast.Forecast.basis",
        "forecast.Forecast.created_at",
        "forecast.Forecast.id",
        "forecast.ForecastKey.label",
        "forecast.ForecastKey.model",
        "forecast.ForecastScore.cell_file",
        "forecast.ForecastScore.cell_id",
        "forecast.ForecastScore.forecast_id",
        "forecast.ForecastScore.scored_at",
        "max_batch.MaxBatchProbe.probe_id",
        "max_batch.MaxBatchResult.definition_sha256",
        "max_batch.MaxBatchResult.group",
        "max_batch.MaxBatchResult.label",
        "max_batch.MaxBatchResult.model",
        "max_batch.MaxBatchResult.started_at",
        "pcie_topology.GpuPlacement.bus_id",
        "pcie_topology.GpuPlacement.via",
        "pcie_topology.HostTopology.unknown",
        "perf.BandwidthResult.check",
        "perf.BandwidthResult.device",
        "perf.PeakResult.device",
        "perf.PeakResult.device_name",
        "perf.PeakResult.dtype",
        "perf.PeakResult.spec_source",
        "perf.PerfSpec.dtypes",
        "perf.PerfSpec.phase_dir",
        "perf.PerfSpec.result_path",
        "perf.RankPerf.device",
        "perf.RankPerf.device_name",
        "perf.RankPerf.uuid",
        "profile_analysis.KernelFigures.name",
        "profile_analysis.OpFigures.op",
        "profile_analysis.ProfileAnalysis.backend",
        "profile_analysis.ProfileAnalysis.device_type",
        "profile_analysis.ProfileAnalysis.source",
        "profile_analysis.ProfileAnalysis.target",
        "profile_analysis.ProfileAnalysis.tool",
        "profile_analysis.ProfileAnalysis.torchscale_version",
        "profile_analysis.TraceFile.format",
        "profile_analysis.TraceFile.path",
        "sweep_state.PlannedCell.id",
        "sweep_state.PlannedCell.label",
        "sweep_state.SweepState.during",
        "sweep_state.SweepState.stopped_by",
        "validate_report.CheckResult.id",
        "validate_report.CheckResult.title",  # a check's name, a label ('NCCL', 'matmul bf16')
        "validate_report.Measurement.check",
        "validate_report.Measurement.expected_source",
        "validate_report.Measurement.title",  # a figure's name, a label
        "validate_report.Measurement.unit",
        "validate_report.ValidateReport.created_at",
        "validate_report.ValidateReport.folder",
        "validate_report.ValidateReport.hostname",
        "validate_report.ValidateReport.sku",
        "validate_report.ValidateReport.torchscale_version",
    }
)


# Text by nature, shown quoted: a message, a log, a root cause.
EVIDENCE: frozenset[str] = frozenset(
    {
        "cell_result.CellError.exception",
        "cell_result.CellError.log_tail",
        "cell_result.StackFrame.file",  # where a rank was: its dumped stack's frames
        "cell_result.StackFrame.function",
        "comm_result.CommResult.error",
        "comm_result.CommRow.reason",
        "perf.Probe.error",
    }
)


# Sentences still stored; each goes to a finding.
NOT_YET: frozenset[str] = frozenset()


def _holds_text(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if annotation is str:
        return True
    if origin in (typing.Union, types.UnionType, list, tuple, set, frozenset):
        return any(_holds_text(a) for a in typing.get_args(annotation) if a is not Ellipsis)
    if origin is dict:
        return _holds_text(typing.get_args(annotation)[1])
    return False


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    found = (
        [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []
    )
    for argument in typing.get_args(annotation):
        found += _models_in(argument)
    return found


def stored_text_fields() -> set[str]:
    """`module.Model.field` for every field of a stored schema that holds text."""
    modules = [
        importlib.import_module(f"{schema_package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(schema_package.__path__)
    ]
    seen: set[type[BaseModel]] = set()
    fields: set[str] = set()

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        where = f"{model.__module__.rsplit('.', 1)[-1]}.{model.__name__}"
        for name, field in model.model_fields.items():
            if _holds_text(field.annotation):
                fields.add(f"{where}.{name}")
            for inner in _models_in(field.annotation):
                walk(inner)

    for module in modules:
        for value in vars(module).values():
            ours = isinstance(value, type) and value.__module__ == module.__name__
            if ours and issubclass(value, BaseModel):
                walk(value)
    return fields


def test_every_stored_text_field_is_an_identifier_or_quoted_evidence() -> None:
    found = stored_text_fields()
    unclassified = found - IDENTIFIERS - EVIDENCE - NOT_YET
    assert not unclassified, f"stored text fields that may hold sentences: {sorted(unclassified)}"


def test_the_lists_name_only_fields_that_exist() -> None:
    found = stored_text_fields()
    for listed in (IDENTIFIERS, EVIDENCE, NOT_YET):
        assert listed <= found, f"listed but gone (delete): {sorted(listed - found)}"
    assert not IDENTIFIERS & EVIDENCE and not IDENTIFIERS & NOT_YET and not EVIDENCE & NOT_YET


def test_todays_validate_writers_store_no_words() -> None:
    """A check is built from findings only (a sentence is refused), and a report's
    conclusion is its `verdict_basis`: no field holds their words."""
    import pytest

    from torchscale.contracts.finding import Finding
    from torchscale.orchestration.validate import check_result

    found = Finding(code="workload.no_step")
    made = check_result.check("x", "x", check_result.CheckStatus.FAIL, found, found)
    assert made.findings == [found] and not {"said", "said_fix"} & set(made.model_dump())
    with pytest.raises(TypeError):
        check_result.check("x", "x", check_result.CheckStatus.FAIL, "a sentence")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        check_result.failed("x", "x", found, "a sentence")  # type: ignore[arg-type]


def test_todays_cross_checks_store_codes() -> None:
    """Every cross-check the diagnosis builds today holds a code: the phase timers' model
    rebuilt from a kept run's steps (paired test, CPU wait, others' wait, no_sync windows),
    the same model as a cross-check of a traced one (its split and verdict), and a kept trace
    analysis judged against its measured windows (the profiler's inflation)."""
    from pathlib import Path

    from tests.offline.test_diagnosis import _table
    from torchscale.contracts.finding import Finding
    from torchscale.offline.analysis.diagnosis import RunEvidence, TimerEvidence, diagnose
    from torchscale.offline.analysis.diagnosis.inflation import phase_timer_checks
    from torchscale.offline.results.documents import read_cell, read_profile_analysis
    from torchscale.offline.results.profile_windows import timer_diagnosis

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    run = fixtures / "cpu_sweep_profile/profile/profile/tiny-mlp__b8__w2__fp32__ddp__8154de06"
    result = read_cell(run / "result.json").doc
    assert result is not None
    # an analysis rewrote the result with the traces' diagnosis: the timers' is rebuilt
    stored = diagnose(RunEvidence(timers=TimerEvidence(steps=_table(steps=20, ranks=2, extra={}))))
    assert stored is not None
    traced = stored.model_copy(update={"source": "traces"})
    timers = timer_diagnosis(run, result.model_copy(update={"diagnosis": traced}))
    assert timers is not None and timers.straggler is not None
    checks = [*timers.cross_checks, *phase_timer_checks(timers, timers)]
    profiled = (
        fixtures
        / "h100_first_run/workload/runs/profile-torch/profile/gpt2__b8__w1__bf16__ddp__c0265f5b"
    )
    analysis = read_profile_analysis(profiled / "analysis.json").doc
    assert analysis is not None and analysis.diagnosis is not None
    checks += analysis.diagnosis.cross_checks
    assert len({c.check for c in checks}) >= 7
    assert all(isinstance(c.detail, Finding) for c in checks), [c.detail for c in checks]
