"""`validate --level burn`: the judgement on synthetic series (steady, a thermal drop, a slow
peer, corruption, error counters) and real 2-rank CPU burns under torchrun: a clean one judged
the same twice, and one with a rank that corrupts its seeded result, which is caught and named."""

from __future__ import annotations

import os
from typing import Any

import pytest

from torchscale.contracts import wording
from torchscale.contracts.schema.burn_in import BurnRun, Fingerprint, Interval, RankBurn
from torchscale.contracts.wording import validate_measured as shown
from torchscale.orchestration.validate.burn_in import (
    fingerprint_faults,
    judge_burn,
    judge_rank,
    plan_burn,
    run_burn,
)
from torchscale.orchestration.validate.check_result import CheckStatus
from torchscale.rank.programs.burn_in import fingerprint, seeded_work


def _rank(
    rank: int,
    tflops: list[float],
    clocks: list[float] | None = None,
    hashes: list[str] | None = None,
    slowdown: list[str] | None = None,
    **extra: Any,
) -> RankBurn:
    clocks = clocks or [1980.0] * len(tflops)
    intervals = [
        Interval(index=i + 1, t_s=30.0 * (i + 1), tflops=t, copy_gbps=2000.0, sm_clock_mhz=c,
                 temperature_c=70.0 + i, slowdown=(slowdown or []) if i >= len(tflops) // 2 else [])
        for i, (t, c) in enumerate(zip(tflops, clocks, strict=True))
    ]  # fmt: skip
    hashes = hashes or ["a", "a", "a"]
    prints = [Fingerprint(interval=k, sha256=h) for k, h in enumerate(hashes)]
    return RankBurn(rank=rank, device=f"cuda:{rank}", device_name="NVIDIA H100 80GB HBM3",
                    intervals=intervals, fingerprints=prints, **extra)  # fmt: skip


STEADY = [700.0] * 9


def _judged(*args: Any) -> tuple[CheckStatus, str]:
    """A rank's verdict and its evidence in words (stored as findings)."""
    status, evidence = judge_rank(*args)
    return status, "; ".join(wording.say(f) for f in evidence)


def test_the_burn_report_stores_findings_and_words_them_when_read() -> None:
    """A burn check stores codes and figures, no sentence; its words are made when read."""
    ranks = [_rank(r, STEADY) for r in range(2)]
    outcome = judge_burn(BurnRun(world_size=2, duration_s=3, ranks=ranks), "cuda")
    check = outcome.checks[0]
    stored = check.model_dump()
    assert not {"detail", "said", "said_fix"} & set(stored)
    assert [f.code for f in check.findings] == ["burn.steady"]
    assert shown.detail(check) == "700 TFLOP/s steady over 9 intervals; seeded results agree"
    assert all(m.finding is not None for m in outcome.measurements)
    assert not any("said" in m.model_dump() for m in outcome.measurements)


def test_a_steady_gpu_with_agreeing_results_passes() -> None:
    ranks = [_rank(r, STEADY) for r in range(4)]
    status, evidence = _judged(ranks[0], ranks, "cuda", {})
    assert status is CheckStatus.PASS
    assert "700 TFLOP/s steady over 9 intervals" in evidence


def test_a_thermal_drop_is_named_with_its_clock_and_reason() -> None:
    slow = [700.0] * 3 + [640.0] * 3 + [560.0] * 3  # last third 20 % below the first
    clocks = [1980.0] * 3 + [1800.0] * 3 + [1620.0] * 3
    ranks = [_rank(0, slow, clocks, slowdown=["HwThermalSlowdown"])] + [
        _rank(r, STEADY) for r in (1, 2, 3)
    ]
    status, evidence = _judged(ranks[0], ranks, "cuda", {})
    assert status is CheckStatus.WARN
    assert "TFLOP/s fell 20 %" in evidence
    assert "SM clock fell 18 %" in evidence
    assert "HwThermalSlowdown" in evidence


def test_a_slow_peer_is_named_and_two_ranks_give_warn_at_most() -> None:
    ranks = [_rank(r, STEADY) for r in range(3)] + [_rank(3, [500.0] * 9)]
    status, evidence = _judged(ranks[3], ranks, "cuda", {})
    assert status is CheckStatus.FAIL and "29 % below its peers' median 700" in evidence
    assert judge_rank(ranks[0], ranks, "cuda", {})[0] is CheckStatus.PASS
    pair = [_rank(0, STEADY), _rank(1, [500.0] * 9)]
    assert judge_rank(pair[1], pair, "cuda", {})[0] is CheckStatus.WARN


def test_corruption_names_the_rank_against_the_majority_and_its_own_first() -> None:
    ranks = [_rank(r, STEADY) for r in range(3)] + [_rank(3, STEADY, hashes=["a", "a", "b"])]
    faults = fingerprint_faults(ranks)
    assert set(faults) == {3}
    assert "changed from its own first one at interval 2" in wording.say(faults[3])
    odd_from_start = [_rank(r, STEADY) for r in range(3)] + [
        _rank(3, STEADY, hashes=["z", "z", "z"])
    ]
    faults = fingerprint_faults(odd_from_start)
    assert set(faults) == {3}
    assert "differs from its 3 peers' at interval 0" in wording.say(faults[3])
    two = [_rank(0, STEADY), _rank(1, STEADY, hashes=["z", "z", "z"])]
    assert set(fingerprint_faults(two)) == {0, 1}  # no majority, nothing explains it


def test_error_counters_rising_during_the_burn_fail() -> None:
    rank = _rank(0, STEADY, counters_start={"ecc_uncorrected": 0},
                 counters_end={"ecc_uncorrected": 2})  # fmt: skip
    status, evidence = _judged(rank, [rank], "cuda", {})
    assert status is CheckStatus.FAIL and "ecc_uncorrected rose by 2" in evidence


def test_cpu_throughput_is_reported_not_judged() -> None:
    ranks = [_rank(0, [0.05] * 5), _rank(1, [0.01] * 5)]
    outcome = judge_burn(BurnRun(world_size=2, duration_s=3, ranks=ranks), "cpu")
    assert [c.status for c in outcome.checks] == [CheckStatus.INFO, CheckStatus.INFO]
    assert outcome.checks[0].title == "Burn-in rank 0"


def test_the_seeded_work_is_deterministic_and_one_bit_changes_the_hash() -> None:
    import torch

    first = seeded_work(torch.device("cpu"))
    assert fingerprint(first) == fingerprint(seeded_work(torch.device("cpu")))
    assert fingerprint(first, corrupt=True) != fingerprint(first)


def test_the_plan_cuts_the_burn_into_intervals(tmp_path: Any) -> None:
    spec = plan_burn("cuda", 8, 600.0, tmp_path)
    assert (spec.interval_s, spec.gemm_n, spec.fingerprint_every) == (60.0, 8192, 2)
    short = plan_burn("cpu", 0, 2.0, tmp_path)
    assert short.interval_s == 0.5 and short.gemm_n == 256


# --- real burns on this CPU: 2 gloo ranks under torchrun ------------------------------------


@pytest.mark.slow  # real 2-rank burns under torchrun
@pytest.mark.parametrize("corrupt_rank", [None, 1])
def test_a_real_burn_judges_every_rank_and_catches_a_corrupted_one(
    corrupt_rank: int | None,
) -> None:
    outcome = run_burn("cpu", 2.0, dict(os.environ), 0, corrupt_rank=corrupt_rank)
    by_rank = {c.title: c for c in outcome.checks}
    assert set(by_rank) == {"Burn-in rank 0", "Burn-in rank 1"}, outcome.checks
    fingerprints = {m.gpu: m for m in outcome.measurements if m.check == "burn.fingerprint"}
    if corrupt_rank is None:
        assert all(c.status is CheckStatus.INFO for c in outcome.checks)  # CPU: not judged
        assert all(m.status is CheckStatus.PASS for m in fingerprints.values())
        # ranks may close different numbers of intervals on a busy machine: every hash agrees
        assert len({h for m in fingerprints.values() for h in m.data["sha256"]}) == 1
        again = run_burn("cpu", 1.0, dict(os.environ), 0)  # same verdicts on a healthy node
        assert [(c.title, c.status) for c in again.checks] == [
            (c.title, c.status) for c in outcome.checks
        ]
    else:
        assert by_rank["Burn-in rank 1"].status is CheckStatus.FAIL
        assert "silent data corruption" in shown.detail(by_rank["Burn-in rank 1"])
        assert (
            by_rank["Burn-in rank 0"].status is CheckStatus.INFO
        )  # the healthy rank is not blamed
        assert fingerprints[1].status is CheckStatus.FAIL
