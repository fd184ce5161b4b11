"""`memory.max_batch_search`: the search on fake OOM oracles, the probe and result plumbing, and
one real search end to end (CPU, gloo, one rank, tests/oom_threshold_models.py).

Everything but the last test is pure and fast; the real one launches about five torchrun
probes of a 5-parameter model (a few seconds each on 2 cores).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_nvml import FakeGpu, FakeNvml
from tests.processes import REPO_ROOT, processes_mentioning
from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, CellResult, Memory, Warmup
from torchscale.contracts.schema.max_batch import MAX_BATCH_SCHEMA_VERSION, MaxBatchResult
from torchscale.contracts.versioned import VersionError
from torchscale.contracts.wording import say
from torchscale.contracts.wording.max_batch import reason_words
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.documents import read_max_batch
from torchscale.offline.results.max_batch_table import COLUMNS, load_max_batch
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.memory import max_batch_runs as runner
from torchscale.orchestration.memory.max_batch_result import CPU_UTILISATION, build_result
from torchscale.orchestration.memory.max_batch_runs import (
    known_fits,
    run_max_batch_search,
    search_groups,
    visible_device_total_bytes,
)
from torchscale.orchestration.memory.probe import outcome_of, probe_cell, probe_measurement
from torchscale.orchestration.memory.search import ProbeOutcome, SearchOutcome, search_max_batch
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine

LIMIT = 4096
CPU_MACHINE = Machine(gpu_count=0, cpu_cores=2)

# -- fake oracles ------------------------------------------------------------------------------


# a probe's reason: its cell error's code with the evidence (CellError.finding)
RAISED = Finding(code="failure.raised", figures={"rank": 0, "exception": "RuntimeError: boom"})
OOM = Finding(code="failure.oom", figures={"exception": "CUDA out of memory"})


class Oracle:
    """Fits up to `threshold`, OOM above; `fail_at`: that batch fails for another reason;
    `flaky`: batch -> the call number (1-based) at which that batch runs out of memory."""

    def __init__(
        self, threshold: int, fail_at: int | None = None, flaky: dict[int, int] | None = None
    ) -> None:
        self.threshold = threshold
        self.fail_at = fail_at
        self.flaky = flaky or {}
        self.calls: list[int] = []

    def __call__(self, batch: int) -> ProbeOutcome:
        self.calls.append(batch)
        if batch == self.fail_at:
            return ProbeOutcome("failed", reason=RAISED)
        if self.flaky.get(batch) == self.calls.count(batch) or batch > self.threshold:
            return ProbeOutcome("oom", reason=OOM)
        return ProbeOutcome("fits", peak_reserved_bytes=batch * 1000, peak_rss_bytes=batch)


def kinds(outcome: SearchOutcome) -> list[tuple[int, str]]:
    return [(r.batch, r.outcome.kind) for r in outcome.probes]


def boundary_observed(outcome: SearchOutcome) -> bool:
    """The answer fitted and answer + 1 ran out of memory, both probed."""
    seen = kinds(outcome)
    assert outcome.max_batch is not None
    return (outcome.max_batch, "fits") in seen and (outcome.max_batch + 1, "oom") in seen


# probes expected: doublings up to the first OOM, bisection inside it, one confirmation
@pytest.mark.parametrize(("threshold", "expected"), [(1, 3), (2, 5), (3, 5), (5, 7), (1000, 21)])
def test_search_finds_the_threshold(threshold: int, expected: int) -> None:
    oracle = Oracle(threshold)
    outcome = search_max_batch(oracle, LIMIT)
    assert outcome.max_batch == threshold
    assert not outcome.limit_reached
    assert outcome.failure is None and outcome.warnings == ()
    assert boundary_observed(outcome)
    assert len(outcome.probes) == expected
    assert len(outcome.probes) <= 2 * math.log2(threshold) + 3
    assert outcome.probes[-1].phase == "confirm" and outcome.probes[-1].batch == threshold
    assert oracle.calls == [r.batch for r in outcome.probes]  # every probe recorded, in order
    assert outcome.at_max is not None and outcome.at_max.outcome.peak_reserved_bytes == (
        threshold * 1000
    )


def test_search_order_for_threshold_5() -> None:
    outcome = search_max_batch(Oracle(5), LIMIT)
    assert kinds(outcome) == [
        (1, "fits"),
        (2, "fits"),
        (4, "fits"),
        (8, "oom"),
        (6, "oom"),
        (5, "fits"),
        (5, "fits"),
    ]
    assert [r.phase for r in outcome.probes] == ["double"] * 4 + ["bisect"] * 2 + ["confirm"]


@pytest.mark.parametrize("threshold", [LIMIT, LIMIT + 1, 10**6])
def test_search_stops_at_the_limit(threshold: int) -> None:
    outcome = search_max_batch(Oracle(threshold), LIMIT)
    assert outcome.max_batch == LIMIT and outcome.limit_reached
    assert [r.batch for r in outcome.probes] == [2**k for k in range(13)]
    assert all(r.outcome.kind == "fits" for r in outcome.probes)


def test_search_limit_not_a_power_of_two() -> None:
    assert [r.batch for r in search_max_batch(Oracle(100), 10).probes] == [1, 2, 4, 8, 10]
    outcome = search_max_batch(Oracle(9), 10)
    assert outcome.max_batch == 9 and not outcome.limit_reached
    assert kinds(outcome)[-3:] == [(10, "oom"), (9, "fits"), (9, "fits")]


@pytest.mark.parametrize("start", [1, 3, 16, 100])
def test_search_every_threshold_up_to_300(start: int) -> None:
    for threshold in range(1, 301):
        outcome = search_max_batch(Oracle(threshold), 512, start=start)
        assert outcome.max_batch == threshold, (threshold, kinds(outcome))
        assert boundary_observed(outcome)
        # from a start below the answer: about 2 x log2(answer / start) + confirmation
        bound = 2 * math.log2(max(threshold, start)) + 3
        assert len(outcome.probes) <= bound, (threshold, kinds(outcome))


def test_search_from_a_known_fit_saves_the_doublings() -> None:
    outcome = search_max_batch(Oracle(5), LIMIT, start=4)
    assert kinds(outcome) == [(4, "fits"), (8, "oom"), (6, "oom"), (5, "fits"), (5, "fits")]
    assert outcome.start == 4
    assert search_max_batch(Oracle(5), 3, start=64).start == 3  # clamped to the limit


def test_search_below_a_start_that_does_not_fit() -> None:
    outcome = search_max_batch(Oracle(5), LIMIT, start=8)
    assert outcome.max_batch == 5
    assert kinds(outcome)[:3] == [(8, "oom"), (4, "fits"), (6, "oom")]


def test_nothing_fits() -> None:
    outcome = search_max_batch(Oracle(0), LIMIT)
    assert outcome.max_batch is None and outcome.largest_fit is None
    assert outcome.failure is not None
    assert say(outcome.failure) == "batch 1 runs out of memory: no batch fits"
    assert kinds(outcome) == [(1, "oom")]


@pytest.mark.parametrize(("fail_at", "largest_fit", "probes"), [(8, 4, 4), (6, 4, 5), (1, None, 1)])
def test_a_failure_that_is_not_an_oom_stops_the_search(
    fail_at: int, largest_fit: int | None, probes: int
) -> None:
    # 8: while doubling; 6: while bisecting (8 ran out of memory first); 1: the first probe
    oracle = Oracle(7 if fail_at == 6 else 100, fail_at=fail_at)
    outcome = search_max_batch(oracle, LIMIT)
    assert outcome.max_batch is None
    assert outcome.largest_fit == largest_fit
    assert outcome.failure == Finding(code="max_batch.probe_failed", figures={"batch": fail_at})
    result = result_of(identity(), outcome, 2)
    assert reason_words(result) == (
        f"the probe at batch {fail_at} failed: rank 0 raised RuntimeError: boom"
    )
    assert len(outcome.probes) == probes and oracle.calls[-1] == fail_at


def test_a_flaky_answer_is_searched_below_and_reported() -> None:
    # batch 5 fits the first time and runs out of memory when probed again
    outcome = search_max_batch(Oracle(5, flaky={5: 2}), LIMIT)
    assert outcome.max_batch == 4
    assert kinds(outcome)[-2:] == [(5, "fits"), (5, "oom")]
    assert outcome.largest_fit == 5
    assert len(outcome.warnings) == 1
    assert say(outcome.warnings[0]).startswith(
        "batch 5 fitted (a probe) but batch 5 ran out of memory"
    )


def test_a_sweep_fit_above_an_oom_is_reported() -> None:
    outcome = search_max_batch(Oracle(5), LIMIT, known_fits=[2, 16])
    assert outcome.max_batch == 5
    assert say(outcome.warnings[0]).startswith("batch 16 fitted (the sweep) but batch 6 ran out")
    assert search_max_batch(Oracle(5), LIMIT, known_fits=[2, 4]).warnings == ()


def test_no_confirmation_when_asked_and_probe_seconds() -> None:
    ticks = iter(range(100))
    outcome = search_max_batch(Oracle(5), LIMIT, confirm=False, clock=lambda: next(ticks))
    assert len(outcome.probes) == 6
    assert all(r.seconds == 1 for r in outcome.probes)


def test_bad_limit() -> None:
    with pytest.raises(ValueError, match="limit must be >= 1"):
        search_max_batch(Oracle(5), 0)


# -- results -----------------------------------------------------------------------------------


def identity(
    device: str = "cpu", group: str = "tiny__w1__fp32__ddp__cpu__abcdef12"
) -> dict[str, Any]:
    return {
        "group": group,
        "definition_sha256": "ab" * 32,
        "model": "tiny-mlp",
        "label": "tiny-mlp",
        "world_size": 1,
        "precision": "fp32",
        "strategy": "ddp",
        "device": device,
        "backend": "nccl" if device == "cuda" else "gloo",
        "nodes": 1,
    }


def result_of(
    ident: dict[str, Any],
    outcome: SearchOutcome,
    steps: int,
    total: tuple[int | None, str | None] = (None, None),
) -> MaxBatchResult:
    """A result of probes that warmed up one step, eager."""
    return build_result(ident, outcome, steps, total, warmup_min=1, compiled=False)


def test_cpu_result_has_rss_and_no_utilisation() -> None:
    result = result_of(identity(), search_max_batch(Oracle(5), LIMIT), 2)
    assert result.status == "ok" and result.finding is None
    assert result.max_batch == 5 and len(result.probes) == 7
    assert result.peak_bytes == 5 and result.peak_basis == "rss"
    assert result.memory_utilisation is None
    assert result.unavailable["memory_utilisation"] == CPU_UTILISATION
    assert result.peak_reserved_bytes is None  # the fake reported it; a CPU rank has none
    assert "peak_reserved_bytes" in result.unavailable


def test_cuda_result_utilisation_is_reserved_over_total() -> None:
    outcome = search_max_batch(Oracle(5), LIMIT)
    result = result_of(identity("cuda"), outcome, 2, (20_000, None))
    assert result.peak_bytes == 5000 and result.peak_basis == "reserved"
    assert result.device_total_bytes == 20_000
    assert result.memory_utilisation == pytest.approx(0.25)
    nvml = Finding(code="max_batch.total.nvml_unavailable", figures={"error": "no library"})
    unknown = result_of(identity("cuda"), outcome, 2, (None, nvml))
    assert unknown.memory_utilisation is None
    assert say(unknown.unavailable["memory_utilisation"]) == (
        "NVML unavailable (no library): device memory total unknown"
    )


def test_result_of_a_limit_a_failure_and_allocator_retries() -> None:
    at_limit = result_of(identity(), search_max_batch(Oracle(99), 16), 2)
    assert at_limit.status == "ok" and at_limit.limit_reached and at_limit.max_batch == 16
    assert (reason_words(at_limit) or "").startswith("at least 16")
    failed = result_of(identity(), search_max_batch(Oracle(99, fail_at=4), 16), 2)
    assert failed.status == "failed" and failed.max_batch is None and failed.largest_fit == 2
    assert failed.peak_bytes is None and "peak_bytes" in failed.unavailable

    def retrying(batch: int) -> ProbeOutcome:
        kind = "fits" if batch <= 3 else "oom"
        return ProbeOutcome(kind, peak_reserved_bytes=1, alloc_retries=2)

    warned = result_of(identity("cuda"), search_max_batch(retrying, 16), 2, (4, None))
    assert any("retried 2 time(s)" in say(w) for w in warned.warnings)


def warming(oracle: Oracle, steps: dict[int, int]) -> Any:
    """`oracle` whose fitting probes report the warm-up steps they ran: `steps[batch]` (a
    compiled rank warms up until two steps compile nothing: more at a batch it compiles anew)."""

    def probe(batch: int) -> ProbeOutcome:
        outcome = oracle(batch)
        if outcome.kind != "fits":
            return outcome
        return dataclasses.replace(outcome, warmup_steps=steps.get(batch, 1))

    return probe


def test_the_result_records_the_warm_up_each_probe_really_ran() -> None:
    """Compiled probes set to 1 warm-up step ran 3 (the first compiled, two steady) and the
    confirmation 2 (its graphs from the cache): the result records what they ran."""
    outcome = search_max_batch(warming(Oracle(5), {1: 3, 2: 3, 4: 3, 5: 3}), LIMIT)
    cuda = build_result(identity("cuda"), outcome, 2, (10**9, None), warmup_min=1, compiled=True)
    assert [(p.batch, p.warmup_steps) for p in cuda.probes] == [
        (1, 3), (2, 3), (4, 3), (8, None), (6, None), (5, 3), (5, 3)
    ]  # fmt: skip
    assert (cuda.probe_warmup_min, cuda.probe_warmup_steps, cuda.probe_compiled) == (1, 3, True)
    assert "probe_warmup_steps" not in cuda.unavailable
    assert cuda.how_probed() == "compiled, peaks after 3 warm-up step(s)"


def test_a_warm_up_not_recorded_is_worded_as_at_least_the_set_steps() -> None:
    outcome = search_max_batch(Oracle(5), LIMIT)  # its probes report no warm-up
    cuda = build_result(identity("cuda"), outcome, 2, (10**9, None), warmup_min=1, compiled=True)
    assert (cuda.probe_warmup_min, cuda.probe_warmup_steps) == (1, None)
    assert cuda.how_probed() == (
        "compiled, peaks after at least 1 warm-up step(s), until compile settles"
    )
    assert say(cuda.unavailable["probe_warmup_steps"]) == (
        "the answer's probe recorded no warm-up; each probe ran at least 1 warm-up step(s), "
        "until compile settles"
    )
    cpu = build_result(identity(), outcome, 2, warmup_min=1, compiled=False)
    assert cpu.how_probed() == "eager, peak RSS includes at least 1 warm-up step(s)"
    failed = build_result(
        identity(), search_max_batch(Oracle(99, fail_at=2), 16), 2, warmup_min=1, compiled=True
    )
    assert failed.probe_warmup_steps is None
    assert say(failed.unavailable["probe_warmup_steps"]).startswith("no max batch was found")


def write_result(root: Path, result: MaxBatchResult, **changes: Any) -> Path:
    path = ResultLayout(root).max_batch_path(result.group)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**result.model_dump(mode="json"), **changes}), encoding="utf-8")
    return path


def test_load_max_batch_reads_and_refuses_newer_versions(tmp_path: Path) -> None:
    assert list(load_max_batch(tmp_path).columns) == list(COLUMNS)  # no search yet: empty
    assert load_max_batch(tmp_path).empty
    result = result_of(identity(), search_max_batch(Oracle(5), LIMIT), 2)
    write_result(tmp_path, result)
    (tmp_path / "max_batch" / "junk.json").write_text("{", encoding="utf-8")
    frame = load_max_batch(tmp_path)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert (row["model"], row["max_batch"], row["probes"], row["status"]) == (
        "tiny-mlp",
        5,
        7,
        "ok",
    )
    assert row["memory_utilisation"] is None or math.isnan(row["memory_utilisation"])
    reasons = dict(frame.attrs["skipped"])
    assert reasons[str(tmp_path / "max_batch" / "junk.json")].startswith("not valid JSON")
    # a file of a newer version stops the load with the one line
    newer = write_result(
        tmp_path,
        result.model_copy(update={"group": "z"}),
        schema_version=MAX_BATCH_SCHEMA_VERSION + 1,
    )
    line = (
        f"{newer}: max-batch result of schema {MAX_BATCH_SCHEMA_VERSION + 1}; this torchscale "
        f"reads {MAX_BATCH_SCHEMA_VERSION}: upgrade torchscale to read it"
    )
    for read in (lambda: load_max_batch(tmp_path), lambda: read_max_batch(newer)):
        with pytest.raises(VersionError) as raised:
            read()
        assert str(raised.value) == line


# -- probes and groups -------------------------------------------------------------------------


def config(**data: Any) -> BenchConfig:
    base: dict[str, Any] = {
        "experiment_name": "mb",
        "device": "cpu",
        "models": ["tiny-mlp"],
        "batch_sizes": [2, 4],
        "gpu_counts": [1, 2],
    }
    return BenchConfig.model_validate({**base, **data})


def test_probe_cell_changes_only_batch_and_measurement() -> None:
    plan = build_plan(config(), CPU_MACHINE)
    planned = plan[0]
    measurement = probe_measurement(planned.measurement, 3)
    assert (measurement.warmup_steps, measurement.steps, measurement.repeats) == (1, 3, 1)
    assert not (measurement.flops or measurement.comm_overhead or measurement.telemetry.enabled)
    first, again = (probe_cell(planned, 7, measurement, n) for n in (1, 2))
    assert first.cell.batch_size == 7 and first.cell.id.startswith("p01__tiny-mlp__b7__w1")
    assert again.cell.id.startswith("p02__") and again.cell.id[5:] == first.cell.id[5:]
    assert first.launch == planned.launch and first.measurement == measurement
    before, after = json.loads(planned.definition), json.loads(first.definition)
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {"batch_size", "measurement"}
    assert first.cell.definition_sha256 != planned.cell.definition_sha256


def cell_result(planned_cell: Any, status: Status, **fields: Any) -> CellResult:
    return CellResult(cell=planned_cell, status=status, **fields)


def test_outcome_of_each_status() -> None:
    cell = build_plan(config(), CPU_MACHINE)[0].cell
    memory = Memory(
        parameter_bytes=1,
        gradient_bytes=1,
        optimizer_state_bytes=2,
        peak_allocated_bytes=None,
        peak_reserved_bytes=None,
        non_static_peak_bytes=None,
        peak_rss_bytes=123,
    )
    fits = outcome_of(cell_result(cell, Status.OK, memory=memory))
    assert (fits.kind, fits.peak_rss_bytes, fits.probe_id) == ("fits", 123, cell.id)
    assert fits.warmup_steps is None  # no warm-up block: not guessed
    # a compiled probe set to 1 warm-up step that ran 3: read from its warm-up block
    warm = Warmup(step_s=[40.0, 0.2, 0.2], compile_s=39.0)
    ran = outcome_of(cell_result(cell, Status.OK, memory=memory, warmup_steps=1, warmup=warm))
    assert ran.warmup_steps == 3
    for status, kind in [
        (Status.OOM, "oom"),
        (Status.FAILED, "failed"),
        (Status.TIMEOUT, "failed"),
    ]:
        why = Finding(code="failure.torchrun_exit", figures={"returncode": 1})
        got = outcome_of(cell_result(cell, status, error=CellError(why=why, root_cause_rank=0)))
        figures = {"rank": 0, "returncode": 1}  # the error's evidence with its code's figures
        assert (got.kind, got.reason) == (kind, Finding(code=why.code, figures=figures))


def test_groups_leave_out_batch_and_skipped_cells(tmp_path: Path) -> None:
    plan = build_plan(config(), CPU_MACHINE)
    groups = search_groups(plan)
    assert [g.cell.world_size for g in groups] == [1, 2]
    assert [[p.cell.batch_size for p in g.cells] for g in groups] == [[2, 4], [2, 4]]
    assert groups[0].id.startswith("tiny-mlp__w1__fp32__ddp__cpu__")
    assert len({g.definition_sha256 for g in groups}) == 2
    assert search_groups(build_plan(config(device="cuda"), CPU_MACHINE)) == []  # all skipped
    store = ResultStore(tmp_path)
    assert known_fits(groups[0], store) == []
    store.write_cell(cell_result(groups[0].cells[1].cell, Status.OK))
    store.write_cell(cell_result(groups[0].cells[0].cell, Status.OOM))
    assert known_fits(groups[0], store) == [4]


def test_device_total_from_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    small = FakeGpu(uuid="GPU-small", memory_total=40 * 2**30)
    fake = FakeNvml([FakeGpu(uuid="GPU-big"), small])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert visible_device_total_bytes({}) == (40 * 2**30, None)
    assert visible_device_total_bytes({"CUDA_VISIBLE_DEVICES": "GPU-big"}) == (80 * 2**30, None)
    total, why = visible_device_total_bytes({"CUDA_VISIBLE_DEVICES": "MIG-1"})
    assert total is None and why == Finding(code="max_batch.total.mig")
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([]))
    assert visible_device_total_bytes({}) == (None, Finding(code="max_batch.total.no_gpu"))


def test_run_writes_one_result_per_group(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The orchestration with a fake prober: one search per group, a CUDA group's utilisation
    from the device total, progress through on_probe, results written and loadable."""
    made: list[Any] = []

    class FakeProber:
        def __init__(self, planned: Any, store: ResultStore, env: Any, steps: int) -> None:
            self.world = planned.cell.world_size
            made.append((planned.cell.world_size, store.root, steps))

        def __call__(self, batch: int) -> ProbeOutcome:
            kind = "fits" if batch <= 3 * self.world else "oom"
            return ProbeOutcome(kind, peak_reserved_bytes=batch * 100, warmup_steps=3)

    monkeypatch.setattr(runner, "CellProber", FakeProber)
    plan = build_plan(
        config(device="auto", gpu_counts=[1, 2], memory={"probe_steps": 3}, models=["gpt2"]),
        Machine(gpu_count=2, cpu_cores=2),
    )
    store = ResultStore(tmp_path / "mb")
    stale = store.root / "max_batch" / "probes" / search_groups(plan)[0].id / "old.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}", encoding="utf-8")
    seen: list[tuple[str, int, str]] = []
    results = run_max_batch_search(
        plan,
        store,
        {},
        lambda group, batch, outcome: seen.append((group.id, batch, outcome.kind)),
        device_total=lambda env: (1000, None),
    )
    assert [r.max_batch for r in results] == [3, 6]
    # CUDA cells compile by default: the probes ran as they do, set to one warm-up step; each
    # probe's result says it ran 3 (compiled ranks warm up until compile settles)
    assert [(r.probe_compiled, r.probe_warmup_min, r.probe_warmup_steps) for r in results] == [
        (True, 1, 3)
    ] * 2
    assert {p.warmup_steps for r in results for p in r.probes} == {3}
    assert [r.memory_utilisation for r in results] == [pytest.approx(0.3), pytest.approx(0.6)]
    assert [w for w, _, _ in made] == [1, 2] and {s for _, _, s in made} == {3}
    assert made[0][1] == store.root / "max_batch" / "probes" / results[0].group
    assert not stale.exists()  # an earlier search's probes of the group are gone
    assert len(seen) == sum(len(r.probes) for r in results)
    assert list(load_max_batch(store.root)["max_batch"]) == [3, 6]


# -- the real thing ----------------------------------------------------------------------------


@pytest.mark.slow  # about 50 s on 2 cores; the search and the probes are tested apart above
def test_real_search_on_cpu_through_the_benchmark_command(tmp_path: Path) -> None:
    """`torchscale benchmark` with memory.max_batch_search: the sweep's cell at batch 4, then a
    fresh torchrun per probe of a model that raises torch.OutOfMemoryError above batch 5; the
    sweep's ok result at batch 4 is the start: 4, 8 (oom), 6 (oom), 5, 5 again. The report
    tables the answer."""
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app
    from torchscale.interfaces.report.build import ReportOptions, build_report
    from torchscale.interfaces.report.model import Table
    from torchscale.interfaces.report.sources import read_sources

    cfg = tmp_path / "mb.yaml"
    data = {
        "experiment_name": "mb",
        "device": "cpu",
        "models": [{"name": "tests.oom_threshold_models:threshold", "options": {"threshold": 5}}],
        "batch_sizes": [4],
        "gpu_counts": [1],
        "measurement": {"warmup_steps": 1, "steps": 2, "repeats": 1, "comm_overhead": False},
        "launcher": {"env": {"PYTHONPATH": str(REPO_ROOT)}, "cell_timeout_s": 120},
        "memory": {"max_batch_search": True, "max_batch_limit": 16},
    }
    cfg.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "results"
    dry = CliRunner().invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "max batch search for 1 group(s)" in " ".join(dry.output.split())

    run = CliRunner().invoke(app, ["benchmark", "-c", str(cfg), "-o", str(out)])
    store = ResultStore(out / "mb")
    leftovers = processes_mentioning(str(store.root))
    assert run.exit_code == 0, run.output
    flat = " ".join(run.output.split())
    assert "max batch per device 5 (5 probes" in flat
    [group] = list((store.root / "max_batch").glob("*.json"))
    read = read_max_batch(group)
    result = read.doc
    assert result is not None, read.problem
    assert result.status == "ok", reason_words(result)
    assert result.max_batch == 5 and not result.limit_reached
    assert (result.probe_compiled, result.probe_warmup_min, result.probe_warmup_steps) == (
        False,
        1,
        1,
    )
    assert {p.warmup_steps for p in result.probes if p.outcome == "fits"} == {1}
    assert "eager, peak RSS includes 1 warm-up step(s)" in flat
    kinds = [(p.batch, p.outcome) for p in result.probes]
    assert kinds == [(4, "fits"), (8, "oom"), (6, "oom"), (5, "fits"), (5, "fits")]
    assert result.peak_basis == "rss" and result.peak_bytes and result.peak_bytes > 10**6
    assert result.memory_utilisation is None
    assert result.unavailable["memory_utilisation"] == CPU_UTILISATION
    oom = result.probes[1]
    assert oom.reason is not None and "OutOfMemoryError" in say(oom.reason)
    # each probe was its own launch, with its own result, none among the sweep's cells
    ids = [p.probe_id for p in result.probes]
    assert len(set(ids)) == 5
    probes = ResultStore(store.root / "max_batch" / "probes" / result.group)
    statuses = [probes.read_cell(i).status for i in ids if i]  # type: ignore[union-attr]
    assert statuses == [Status.OK, Status.OOM, Status.OOM, Status.OK, Status.OK]
    assert len(list((store.root / "cells").glob("*.json"))) == 1
    assert leftovers == []
    report = build_report(read_sources(out), ReportOptions(generated_at="2026-01-01T00:00:00Z"))
    section = report.section("memory")
    assert section is not None
    table = next(b for b in section.blocks if isinstance(b, Table))
    assert [r["max_batch"] for r in table.rows] == ["5"]
