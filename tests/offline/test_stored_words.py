"""A cell's warnings and the reasons its figures are null are stored as findings (codes and
figures), worded when shown: today's writers store no sentence."""

from __future__ import annotations

from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import StepTimeStats
from torchscale.contracts.wording import say, why
from torchscale.contracts.wording.cell_reasons import coded, one_reason
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.rank.worker.aggregate import step_time_warning


def test_todays_writer_stores_a_code_and_figures_never_words() -> None:
    pooled = StepTimeStats(
        count=10, mean=1.0, p50=1.0, p95=1.2, p99=1.3, min=0.8, max=1.4, std=0.3, cv=0.3
    )
    (warning,) = step_time_warning(pooled, 0.1)
    assert set(warning.model_dump()) == {"kind", "finding"}
    assert warning.finding.figures == {"cv": 0.3, "threshold": 0.1}
    assert warning_words(warning) == "High variance in step time: CV 0.30 > 0.10"


def test_one_rank_says_why_as_a_code() -> None:
    from tests.rank.test_aggregate import make_rank, make_spec, run

    result = run([make_rank(0, [1, 1, 1])], make_spec(world=1))
    assert result.unavailable["straggler"] == coded("unavailable.one_rank_straggler")
    assert why(result.unavailable["straggler"]) == "world size 1: no other rank to be slower than"


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


def _gpu_cell(mfu: float | None) -> Any:
    from tests.rank.test_aggregate import make_rank, run
    from torchscale.contracts.schema.cell_result import Compute

    result = run([make_rank(0, [1, 1, 1])])
    compute = (result.compute or Compute.model_construct()).model_copy(update={"mfu": mfu})
    cuda = result.cell.model_copy(update={"device": "cuda"})
    return result.model_copy(update={"cell": cuda, "host_bound": None, "compute": compute})


def test_the_arithmetic_fallback_stores_its_reason_as_a_code_once_however_often_read() -> None:
    from torchscale.offline.results.host_bound import judged_host_bound

    unjudged = judged_host_bound(_gpu_cell(0.5))
    assert unjudged is not None and unjudged.host_bound is None
    said = why(unjudged.reason)
    # the MFU as tables spell it, with its interval
    assert said is not None and said.startswith("no busy trace was recorded; MFU 50 % ")
    assert said.endswith(", at least 1 %: not judged")
    # read again (another MFU): judged from the probe's own reason, not from the first verdict
    judged = judged_host_bound(_gpu_cell(0.005).model_copy(update={"host_bound": unjudged}))
    assert judged is not None and judged.host_bound is True
    reason = judged.reason
    assert isinstance(reason, Finding) and reason.code == "host_bound.arithmetic"
    assert reason.figures["why"] == {"code": "host_bound.no_probe", "figures": {}}
    assert "mfu" not in reason.figures and reason.figures["interval"]["value"] == 0.005
