"""Schema 20 stores a cell's warnings as findings; the reader turns the sentences schema 16-19
wrote back into their codes and figures (offline/results/upgrades/stored_words.py)."""

from __future__ import annotations

from typing import Any

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellWarning, StepTimeStats
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.wording.unavailable import coded, one_reason, why
from torchscale.offline.results.upgrades.stored_words import SENTENCES, upgrade_v19
from torchscale.rank.worker.aggregate import step_time_warning

# one finding per recognised sentence; today's words for it are the words schema 19 wrote
WRITTEN_BY_19 = [
    Finding(code="warning.step_time_cv", figures={"cv": 0.27, "threshold": 0.1}),
    Finding(
        code="warning.sync_variance",
        figures={"wait_cv": 0.61, "share": 0.74, "step_cv": 0.22, "threshold": 0.1},
    ),
    Finding(
        code="warning.sync_variance",
        figures={"wait_cv": 0.61, "share": None, "step_cv": 0.22, "threshold": 0.1},
    ),
    Finding(code="warning.injected_delay", figures={"rank": 1, "phase": "backward", "ms": 50.0}),
    Finding(
        code="warning.compiled_in_windows",
        figures={
            "frames": 2,
            "compile_s": 1.25,
            "graph_breaks": 1,
            "ranks": [0, 1],
            "first_compile": False,
        },
    ),
    Finding(
        code="warning.compiled_in_windows",
        figures={
            "frames": 3,
            "compile_s": 4.5,
            "graph_breaks": 0,
            "ranks": [0],
            "first_compile": True,
        },
    ),
    Finding(code="warning.tf32_off", figures={"fp32_tflops": 67.0, "tf32_tflops": 494.0}),
    Finding(code="warning.cpu_amp", figures={}),
    Finding(code="warning.cpu_oversubscribed", figures={"ranks": 4, "cores": 2}),
    Finding(
        code="warning.compile_off_small_model",
        figures={"parameters": 22026, "min_parameters": 50_000_000},
    ),
    Finding(
        code="warning.slurm_few_cpus", figures={"cpus": 2, "where": "the first node", "ranks": 4}
    ),
    Finding(code="warning.killed_after_result", figures={"grace_s": 30.0, "log_dir": "logs/c"}),
    Finding(code="warning.timed_out_after_result", figures={"timeout_s": 600.0, "log_dir": "l"}),
    Finding(code="warning.exit_after_result", figures={"returncode": -6, "log_dir": "logs/c"}),
]


def _read(warnings: list[dict[str, Any]], **rest: Any) -> list[dict[str, Any]]:
    return upgrade_v19({"schema_version": 19, "warnings": warnings, **rest})["warnings"]


@pytest.mark.parametrize("finding", WRITTEN_BY_19, ids=lambda f: f.code)
def test_each_sentence_schema_19_wrote_reads_back_as_its_code_and_figures(finding: Finding) -> None:
    (read,) = _read([{"kind": "other", "text": say(finding)}])
    assert read == {"kind": "other", "finding": finding.model_dump()}


def test_every_recognised_sentence_is_covered_above() -> None:
    assert {code for code, _, _ in SENTENCES} == {f.code for f in WRITTEN_BY_19}


def test_warnings_made_of_telemetry_are_rebuilt_from_it_not_parsed() -> None:
    busy = {"code": "busy.contended", "figures": {"other": 3.0}}
    telemetry = {
        "ranks": [
            {"rank": 0, "gpu_name": "H100", "clock_verdict": "full_clocks"},
            {"rank": 1, "gpu_name": "H100", "clock_verdict": "throttled"},
        ],
        "hosts": [
            {"host": "a", "busy": True, "finding": busy, "load_avg_1m": {"mean": 1, "max": 2.5}},
            {"host": "b", "busy": False, "other_gpu_processes": 1, "other_gpu_pids": [77]},
        ],
    }
    read = _read(
        [
            {"kind": "busy machine", "text": "busy machine: on a, whatever was said then"},
            {"kind": "other", "text": "GPU shared: 1 other compute process(es) ..."},
            {"kind": "throttling", "text": "GPU clocks throttled during the measured windows: x"},
        ],
        telemetry=telemetry,
    )
    assert [w["finding"] for w in read] == [
        {
            "code": "warning.busy_machine",
            "figures": {"hosts": [{**busy, "host": "a", "load_avg_max": 2.5}]},
        },
        {
            "code": "warning.gpu_shared",
            "figures": {"hosts": [{"host": "b", "processes": 1, "pids": [77]}]},
        },
        {"code": "warning.throttled", "figures": {"ranks": [{"rank": 1, "gpu": "H100"}]}},
    ]


def test_words_not_recognised_stay_as_stored_and_are_shown_as_stored() -> None:
    old = {"kind": "other", "text": "some sentence an older torchscale wrote"}
    (read,) = _read([old])
    assert read == old
    assert warning_words(CellWarning(**read)) == old["text"]


def test_todays_writer_stores_a_code_and_figures_never_words() -> None:
    pooled = StepTimeStats(
        count=10, mean=1.0, p50=1.0, p95=1.2, p99=1.3, min=0.8, max=1.4, std=0.3, cv=0.3
    )
    (warning,) = step_time_warning(pooled, 0.1)
    assert warning.text is None and warning.finding is not None
    assert warning.finding.figures == {"cv": 0.3, "threshold": 0.1}
    assert warning_words(warning) == "High variance in step time: CV 0.30 > 0.10"


def test_a_reason_stored_in_a_codes_words_reads_as_the_code_and_the_straggler_copy_goes() -> None:
    summary = "no straggler: rank 1 +0.2 ms/step, nobody named (could be noise)"
    data = {
        "schema_version": 19,
        "warnings": [],
        "diagnosis": {"straggler": {"summary": summary}},
        "unavailable": {
            "straggler": summary,  # a copy of the verdict's words
            "sync_overhead": say(coded("unavailable.sync_overhead_cross_check")),
            "flops": "FlopCounterMode failed: RuntimeError",  # not a code's words: as stored
        },
    }
    assert upgrade_v19(data)["unavailable"] == {
        "sync_overhead": {"code": "unavailable.sync_overhead_cross_check", "figures": {}},
        "flops": "FlopCounterMode failed: RuntimeError",
    }


def test_one_rank_says_why_as_a_code() -> None:
    from tests.rank.test_aggregate import make_rank, make_spec, run

    result = run([make_rank(0, [1, 1, 1])], make_spec(world=1))
    assert result.unavailable["straggler"] == coded("unavailable.one_rank_straggler")
    assert why(result.unavailable["straggler"]) == "world size 1: no other rank to be slower than"


def test_what_an_older_schema_did_not_record_is_a_code() -> None:
    from pathlib import Path

    from torchscale.offline.results.versions import read_cell_result

    read = read_cell_result(
        Path(__file__).parents[1]
        / "fixtures/cpu_sweep_profile/v3_fixture/cells/tiny-gpt2__b8__w2__fp32__ddp__5ca6a1b4.json"
    )
    assert read.version == 3 and read.result is not None
    assert read.result.unavailable["telemetry"] == coded("older.v3_telemetry")
    assert why(read.result.unavailable["telemetry"]) == "version 3 result: no telemetry"


# reasons the worker wrote as sentences up to schema 19, each read back as its code
WORKER_REASONS = (
    "unavailable.no_phase_split",
    "unavailable.model_parallel",
    "unavailable.fsdp_no_split",
    "unavailable.host_bound_cpu",
    "unavailable.pipeline_phases",
    "unavailable.no_allocator_stats_on_cpu",
    "unavailable.telemetry_off",
    "unavailable.flops_off",
    "unavailable.compile_counters_unread",
    "unavailable.cpu_device_init",
    "unavailable.not_timed_by_rank",
    "unavailable.parent_not_torchrun",
    "unavailable.fsdp2_hooks",
    "unavailable.no_trainable_parameters",
    "unavailable.hooks_missed",
    "unavailable.no_flops_counted",
    "unavailable.no_rank_sampled",
    "unavailable.no_energy_used",
    "unavailable.no_host_readings",
)


@pytest.mark.parametrize("code", WORKER_REASONS)
def test_a_workers_reason_of_schema_19_reads_as_its_code(code: str) -> None:
    data = {"schema_version": 19, "warnings": [], "unavailable": {"x": say(coded(code))}}
    assert upgrade_v19(data)["unavailable"] == {"x": {"code": code, "figures": {}}}


@pytest.mark.parametrize(
    ("code", "figures"),
    [
        ("unavailable.flop_count_failed", {"error": "RuntimeError: item() on meta (x; y)"}),
        ("unavailable.parent_unreadable", {"error": "AccessDenied: psutil (pid=1)"}),
        ("unavailable.compile_counters_failed", {"error": "AttributeError: gone (x)"}),
        ("peak.mig_slice", {"device": "NVIDIA A100-SXM4-40GB MIG 1g.5gb"}),
        ("peak.not_in_table", {"device": "Some GPU"}),
        ("peak.no_dtype", {"dtype": "tf32", "device": "Tesla T4", "model": "T4"}),
        ("peak.tf32_unknown", {"unreadable": ["cudnn.allow_tf32", "matmul.allow_tf32"]}),
        ("peak.not_measured", {"host": "gpu-7"}),
        ("peak.dtype_not_measured", {"dtype": "fp8", "host": "gpu-7", "path": "a/gpu-7.perf.json"}),
        ("peak.not_looked_for", {}),
        ("peak.mfu_above_peak", {"mfu": 1.12, "which": "spec-sheet"}),
    ],
)
def test_a_reason_with_its_figure_inside_reads_as_the_code_and_the_figure(
    code: str, figures: dict[str, Any]
) -> None:
    words = say(Finding(code=code, figures=figures))
    data = {"schema_version": 19, "warnings": [], "unavailable": {"mfu": words}}
    assert upgrade_v19(data)["unavailable"] == {"mfu": {"code": code, "figures": figures}}


def test_a_sentence_whose_figures_do_not_word_back_exactly_stays_as_stored() -> None:
    words = "MFU above 100 % of the measured peak (1.10): a FLOP count or peak bug, not reported."
    data = {"schema_version": 19, "warnings": [], "unavailable": {"mfu": words}}
    assert upgrade_v19(data)["unavailable"] == {"mfu": words}


def test_todays_worker_stores_its_reasons_as_codes() -> None:
    from tests.rank.test_aggregate import make_rank, make_spec, run

    result = run([make_rank(r, [1, 1, 1]) for r in (0, 1)], make_spec(world=2))
    assert result.unavailable["diagnosis"] == coded("unavailable.no_phase_split")
    assert result.unavailable["host_bound"] == coded("unavailable.host_bound_cpu")
    assert result.unavailable["memory.oom_count"] == coded("unavailable.no_allocator_stats_on_cpu")


def test_ranks_that_give_different_reasons_keep_each_as_a_code() -> None:
    hooks, fsdp = coded("unavailable.hooks_missed"), coded("unavailable.fsdp2_hooks")
    assert one_reason([hooks, hooks]) == hooks
    differ = one_reason([hooks, fsdp, hooks])
    assert isinstance(differ, Finding) and differ.code == "unavailable.ranks_differ"
    assert why(differ) == f"{say(fsdp)}; {say(hooks)}"  # sorted by code, each once


@pytest.mark.parametrize(
    "finding",
    [
        Finding(code="data.plugin_drawn"),
        Finding(code="data.plugin_not_model_parallel"),
        Finding(code="data.cifar_in_memory"),
        Finding(code="data.no_fadvise"),
        Finding(code="data.labels_mod", figures={"classes": 10, "dataset_classes": 100}),
        Finding(code="data.cache_not_dropped", figures={"failed": ["a.bin: EIO", "b.bin: EIO"]}),
    ],
)
def test_an_input_pipelines_note_of_schema_19_reads_as_its_code(finding: Finding) -> None:
    data = {"schema_version": 19, "warnings": [], "data": {"notes": [say(finding)]}}
    assert upgrade_v19(data)["data"]["notes"] == [finding.model_dump()]


def test_a_note_whose_figures_the_result_does_not_keep_stays_as_stored() -> None:
    # the page-cache note's host memory and byte counts are rounded in its words
    note = (
        "the dataset (4 MB) is smaller than this host's memory (8.0 GB): after the first epoch "
        "samples may come from the page cache, not the storage (each rank read 2.00 epochs of "
        "its share in this cell)"
    )
    data = {"schema_version": 19, "warnings": [], "data": {"notes": [note]}}
    assert upgrade_v19(data)["data"]["notes"] == [note]


def test_a_plugins_reason_for_no_bytes_read_of_schema_19_reads_as_its_code() -> None:
    words = "plug-in batches: their bytes are the plug-in's own, not counted"
    data = {"schema_version": 19, "warnings": [], "unavailable": {"data.read_bytes_per_s": words}}
    assert upgrade_v19(data)["unavailable"] == {
        "data.read_bytes_per_s": {"code": "data.plugin_not_read", "figures": {}}
    }


def _gpu_cell(mfu: float | None) -> Any:
    from tests.rank.test_aggregate import make_rank, run
    from torchscale.contracts.schema.cell_result import Compute

    result = run([make_rank(0, [1, 1, 1])])
    compute = (result.compute or Compute.model_construct()).model_copy(update={"mfu": mfu})
    cuda = result.cell.model_copy(update={"device": "cuda"})
    return result.model_copy(update={"cell": cuda, "host_bound": None, "compute": compute})


def test_the_arithmetic_fallback_stores_its_reason_as_a_code_once_however_often_read() -> None:
    from torchscale.offline.results.upgrades.host_bound import judged_host_bound

    unjudged = judged_host_bound(_gpu_cell(0.5))
    assert unjudged is not None and unjudged.host_bound is None
    said = why(unjudged.reason)
    # the MFU as tables spell it, with its interval
    assert said is not None and said.startswith("no busy probe (schema 15 or older); MFU 50 % ")
    assert said.endswith(", at least 1 %: not judged")
    # read again (another MFU): judged from the probe's own reason, not from the first verdict
    judged = judged_host_bound(_gpu_cell(0.005).model_copy(update={"host_bound": unjudged}))
    assert judged is not None and judged.host_bound is True
    reason = judged.reason
    assert isinstance(reason, Finding) and reason.code == "host_bound.arithmetic"
    assert reason.figures["why"] == {"code": "host_bound.no_probe", "figures": {}}
    assert "mfu" not in reason.figures and reason.figures["interval"]["value"] == 0.005


@pytest.mark.parametrize(
    "finding",
    [
        Finding(code="host_bound.pipeline"),
        Finding(code="host_bound.peer_failed"),
        Finding(code="host_bound.none_traced"),
        Finding(code="host_bound.trace_failed", figures={"error": "RuntimeError: CUPTI (x)"}),
    ],
)
def test_the_busy_traces_reason_of_schema_19_reads_as_its_code(finding: Finding) -> None:
    bound = {"method": "CUDA trace: not run", "reason": say(finding)}
    data = {"schema_version": 19, "warnings": [], "host_bound": bound}
    assert upgrade_v19(data)["host_bound"]["reason"] == finding.model_dump()
