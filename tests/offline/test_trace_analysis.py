"""Trace analyses on hand-built event tables with known answers (no trace files, no torch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import PART_NAMES, Diagnosis, Estimate, Problem
from torchscale.contracts.schema.profile_analysis import findings_for_target
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say, why
from torchscale.contracts.wording.diagnosis_checks import CHECKS, check_label
from torchscale.contracts.wording.diagnosis_checks import detail as said
from torchscale.offline.analysis.diagnosis import RunEvidence, TraceEvidence, diagnose
from torchscale.offline.analysis.diagnosis.findings import (
    MIN_COST_FRACTION,
    FindingInputs,
    RankedFinding,
    finding_inputs,
    rank_findings,
)
from torchscale.offline.analysis.diagnosis.inflation import disagreement
from torchscale.offline.analysis.diagnosis.traces import build_step_model
from torchscale.offline.analysis.trace import intervals as iv
from torchscale.offline.analysis.trace.breakdown import activity, overlap_pct, rank_breakdown
from torchscale.offline.analysis.trace.clock import arrivals, estimate_offsets
from torchscale.offline.analysis.trace.collective_matching import (
    collective_table,
    match_collectives,
    sync_stall,
)
from torchscale.offline.analysis.trace.idle import CATEGORIES, idle_reducer, idle_taxonomy
from torchscale.offline.analysis.trace.steps import phase_table, step_table
from torchscale.offline.analysis.trace.straggler import attribute_straggler, binomial_tail
from torchscale.offline.traces.rank_trace import EVENT_COLUMNS

# --------------------------------------------------------------------------- event helper

DTYPES = {
    "name": "category",
    "kind": "category",
    "ts": np.float64,
    "dur": np.float64,
    "tid": np.int64,
    "device_side": bool,
    "correlation": "Int64",
    "step": "Int64",
    "phase": "category",
    "coll_op": "category",
    "op_source": "category",
    "pg": object,
    "seq": "Int64",
    "nelems": "Int64",
    "dtype": object,
    "group_size": "Int64",
}


def line(verdict: Any) -> str:
    """The straggler's one line, as every surface shows it."""
    return verdict_words.straggler_text(verdict, 2)


def point(value: float) -> Estimate:
    """An Estimate without an interval (a figure given by hand)."""
    return Estimate(value=value, low=None, high=None, n=1, measurable=True, reason=None)


def ev(*rows: dict[str, Any]) -> pd.DataFrame:
    """An events table with exactly the model's columns and dtypes; unspecified fields None."""
    defaults: dict[str, Any] = {c: None for c in EVENT_COLUMNS}
    defaults.update(tid=1, device_side=False)
    data = [{**defaults, **r} for r in rows]
    frame = pd.DataFrame(data, columns=list(EVENT_COLUMNS))
    assert tuple(frame.columns) == EVENT_COLUMNS
    return frame.astype(DTYPES)


def row(kind: str, ts: float, dur: float, name: str = "", **kw: Any) -> dict[str, Any]:
    return {"kind": kind, "ts": ts, "dur": dur, "name": name or kind, **kw}


# durations of a synthetic DDP step (us)
DATA, FWD, BWD, XFER, OPT = 1000.0, 3000.0, 5000.0, 800.0, 1000.0
CALL = 5.0  # the enqueue call of each bucket, on the main thread (not compute: communication)
START = 1.0e9  # a large, realistic base time


def cpu_ddp_rank(
    rank: int,
    *,
    steps: int = 6,
    delay_rank: int | None = 1,
    delay: float = 2000.0,
    offset: float = 0.0,
    buckets: int = 1,
    end_noise: float = 0.0,
    seed: int = 0,
    op: str = "all_reduce",
    nelems: int = 1000,
    world: int = 2,
) -> pd.DataFrame:
    """One CPU (gloo) DDP rank: data, forward, backward (+ `delay` on `delay_rank`, injected at
    the start of backward), gradient all_reduce per bucket on its own runloop thread, optimizer.
    The collective of every rank ends when the last arrival's transfer is done; the fast ranks'
    backward range includes the wait (main thread blocked, nothing recorded). `offset` shifts
    this rank's clock."""
    rng = np.random.default_rng(seed * 100 + rank)
    delay = delay if delay_rank is not None else 0.0
    rows: list[dict[str, Any]] = []
    step_len = DATA + FWD + BWD + delay + XFER + OPT
    t = START
    for s in range(steps):
        d = delay if rank == delay_rank else 0.0
        rows.append(row("step", t, step_len, f"ProfilerStep#{s}", step=s))
        rows.append(row("phase", t, DATA, "torchscale:data", phase="data"))
        rows.append(row("cpu_op", t, DATA, "collate"))
        rows.append(row("phase", t + DATA, FWD, "torchscale:forward", phase="forward"))
        rows.append(row("cpu_op", t + DATA, FWD, "aten::addmm"))
        b0 = t + DATA + FWD
        if d:
            rows.append(row("cpu_op", b0, d, "torchscale:injected_delay"))
        rows.append(row("cpu_op", b0 + d, BWD, "autograd::engine"))
        finish = b0 + delay + BWD + XFER  # the last bucket's end, all ranks
        for b in range(buckets):
            ready = BWD * (b + 1) / buckets
            arrive = b0 + d + ready
            end = b0 + delay + ready + XFER + rng.uniform(-end_noise, end_noise)
            seqno = s * buckets + b
            rows.append(row("collective_call", arrive, CALL, "c10d::allreduce_", coll_op=op, tid=1))
            rows.append(
                row(
                    "collective",
                    arrive,
                    end - arrive,
                    f"gloo:{op}",
                    coll_op=op,
                    tid=100 + b % 2,
                    pg="0",
                    seq=seqno,
                    nelems=nelems + b,
                    dtype="float32",
                    group_size=world,
                )
            )
        rows.append(row("phase", b0, finish - b0, "torchscale:backward", phase="backward"))
        rows.append(row("phase", finish, OPT, "Optimizer.step", phase="optimizer"))
        rows.append(row("cpu_op", finish, OPT, "aten::add_"))
        t += step_len
    frame = ev(*rows)
    frame["ts"] += offset
    return frame


def run_all(frames: dict[int, pd.DataFrame], world: int | None = None) -> dict[str, Any]:
    """The caller's loop: per-rank reducers one rank at a time, then the cross-rank steps, the
    step model and the run's one diagnosis, as `reduce.combine` builds them (`world`: the world
    size the traces declare; default: the ranks given)."""
    steps, phases, colls, bds, bases = {}, {}, {}, {}, {}
    for r, events in frames.items():
        st = step_table(events)
        steps[r] = st.table
        phases[r] = phase_table(events, st.table)
        colls[r] = collective_table(events, st.table)
        bds[r] = rank_breakdown(events, st.table)
        bases[r] = idle_reducer(events, st.table)
    matched = match_collectives(colls)
    offsets = estimate_offsets(matched)
    arr = arrivals(matched, offsets)
    stall = sync_stall(matched, steps)
    strag = attribute_straggler(matched, arr, phases, steps)
    exposed = {r: b.exposed for r, b in bases.items()}
    idle = idle_taxonomy(bases, matched)
    model = build_step_model(
        idle,
        phases_by_rank=phases,
        matched=matched,
        arrival=strag,
        waits_known=stall.overall_pct is not None,
        world_size=world if world is not None else len(frames),
    )
    out = dict(
        model=model,
        steps=steps,
        phases=phases,
        colls=colls,
        bds=bds,
        bases=bases,
        matched=matched,
        offsets=offsets,
        arr=arr,
        stall=stall,
        strag=strag,
        idle=idle,
        exposed=exposed,
    )
    _inputs, out["diagnosis"] = diagnosis_of(out)
    return out


STEP_LEN = DATA + FWD + BWD + 2000.0 + XFER + OPT


def diagnosis_of(
    out: dict[str, Any], device_type: str = "cpu", backend: str | None = "gloo"
) -> tuple[FindingInputs, Diagnosis | None]:
    """The finding inputs and the run's one diagnosis of a run_all result, as `reduce.combine`
    builds them (the diagnosis fills the inputs' what-if and per-rank waits)."""
    inputs = finding_inputs(
        out["model"],
        out["bds"],
        matched=out["matched"],
        arrival=out["strag"],
        phases_by_rank=out["phases"],
        device_type=device_type,
        backend=backend,
    )
    evidence = RunEvidence(
        traces=TraceEvidence(model=out["model"], inputs=inputs),
        device_type=device_type,
        backend=backend,
    )
    return inputs, diagnose(evidence)


def findings_of(
    out: dict[str, Any], device_type: str = "cpu", backend: str | None = "gloo"
) -> tuple[FindingInputs, list[RankedFinding]]:
    """The findings of a run_all result, as the diagnosis ranks them (the same titles, in the
    same order, as `Diagnosis.findings`)."""
    inputs, diagnosis = diagnosis_of(out, device_type, backend)
    found = rank_findings(inputs)
    if diagnosis is not None:
        assert [f.title for f in diagnosis.findings] == [f.title for f in found]
    return inputs, found


def assert_whatif_bounded(out: dict[str, Any]) -> None:
    """The diagnosis' what-if never promises more than the wait it removes (per step, the
    least wait for peers of any other rank) nor more than the candidate's extra own work
    (per step, its own work over the median of the others'), and is never negative."""
    model, w = out["model"], out["diagnosis"].whatif
    assert w is not None
    wait = model.parts.pivot_table(index="step", columns="rank", values="wait_for_peers")
    least_wait = wait.drop(columns=[w.rank]).min(axis=1)
    own = model.own.pivot_table(index="step", columns="rank", values="compute")
    extra = own[w.rank] - own.drop(columns=[w.rank]).median(axis=1)
    assert w.extra_work_s == pytest.approx(float(extra.mean()))
    bound = min(float(least_wait.mean()), float(extra.clip(lower=0.0).mean()))
    if w.saved_s.value is None:  # not measurable: nothing above noise, interval from 0
        assert not w.share.measurable and w.saved_s.low == 0.0
        return
    assert 0.0 <= w.saved_s.value <= bound + 1e-12
    step = float(model.parts.groupby("step")["step_s"].mean().mean())
    assert w.share.value == pytest.approx(w.saved_s.value / step)


def assert_saves_nothing(out: dict[str, Any]) -> None:
    """The what-if saves nothing: 0 every step, so not measurable, its interval [0, 0]."""
    w = out["diagnosis"].whatif
    assert w is not None
    for estimate in (w.saved_s, w.share):
        assert not estimate.measurable and estimate.value is None
        assert (estimate.low, estimate.high) == (0.0, 0.0)
    assert_whatif_bounded(out)


# --------------------------------------------------------------------------- intervals


def test_merge_and_window_lengths() -> None:
    m = iv.merge([5, 0, 2, 20, 20], [6, 3, 4, 25, 22])
    assert m.starts.tolist() == [0, 5, 20] and m.ends.tolist() == [4, 6, 25]
    assert m.total() == 10
    assert m.within([0, 3, 21, -10], [10, 5.5, 100, -5]).tolist() == [5, 1.5, 4, 0]
    assert iv.subtract(m, iv.merge([1], [21])).total() == 1 + 4
    assert iv.intersect(m, iv.merge([1], [21])).total() == 3 + 1 + 1
    assert iv.merge([], []).count == 0 and iv.EMPTY.within([0], [1]).tolist() == [0]


def test_overlap_pct_is_htas_definition() -> None:
    # comm [0,10) and [20,30) = 20 us; compute [5,25) overlaps 5 + 5 = 10 us -> 50 %
    comm = iv.merge([0, 20], [10, 30])
    compute = iv.merge([5, 6], [25, 7])  # nested ranges merge, counted once
    assert overlap_pct(compute, comm) == pytest.approx(50.0)
    assert np.isnan(overlap_pct(compute, iv.EMPTY))
    # the same through rank_breakdown on a GPU-style rank
    events = ev(
        row("step", 0, 40, step=1),
        row(
            "collective",
            0,
            10,
            "ncclDevKernel_AllReduce",
            device_side=True,
            tid=7,
            coll_op="all_reduce",
        ),
        row(
            "collective",
            20,
            10,
            "ncclDevKernel_AllReduce",
            device_side=True,
            tid=7,
            coll_op="all_reduce",
        ),
        row("kernel", 5, 20, "gemm", device_side=True, tid=8),
        row("kernel", 6, 1, "small", device_side=True, tid=9),
    )
    bd = rank_breakdown(events, step_table(events).table).iloc[0]
    assert bd["comm_us"] == 20 and bd["compute_us"] == 20
    assert bd["overlap_pct"] == pytest.approx(50.0)
    assert bd["exposed_comm_us"] == 10
    assert bd["idle_us"] == 40 - 30  # [30, 40)


@pytest.mark.slow
def test_breakdown_takes_a_million_events_vectorised() -> None:
    # how fast is benchmarks/trace_analysis.py's to say (a timed test breaks under load): this
    # holds the shape, a million events in ten steps
    n = 1_000_000
    rng = np.random.default_rng(0)
    ts = np.sort(rng.uniform(0, 1e7, n))
    frame = pd.DataFrame(
        {
            "name": pd.Categorical(["k"] * n),
            "kind": pd.Categorical(np.where(np.arange(n) % 10 == 0, "collective", "kernel")),
            "ts": ts,
            "dur": rng.uniform(1, 20, n),
            "tid": np.int64(7),
            "device_side": True,
        }
    )
    steps = pd.DataFrame({"step": np.arange(10), "start": np.arange(10) * 1e6})
    steps["end"] = steps["start"] + 1e6
    steps["dur"] = 1e6
    steps["partial"] = False
    for col in EVENT_COLUMNS:  # cheap all-missing columns of the model's dtypes
        if frame.get(col) is not None:
            continue
        if DTYPES[col] == "Int64":
            frame[col] = pd.arrays.IntegerArray(np.zeros(n, np.int64), np.ones(n, bool))
        elif DTYPES[col] == "category":
            frame[col] = pd.Categorical.from_codes(np.full(n, -1), categories=["x"])
        else:
            frame[col] = np.full(n, None, dtype=object)
    frame = frame[list(EVENT_COLUMNS)]
    bd = rank_breakdown(frame, steps)
    assert len(bd) == 10


# --------------------------------------------------------------------------- steps, phases


def test_steps_partial_and_pseudo() -> None:
    events = ev(
        row("step", 0, 100, step=3),
        row("step", 100, 100, step=4),
        row("step", 200, 100, step=5),
        row("step", 300, 20, step=6),  # cut short by the end of the capture
        row("cpu_op", 0, 320),
    )
    st = step_table(events)
    assert st.table["step"].tolist() == [3, 4, 5, 6]
    assert st.table["partial"].tolist() == [False, False, False, True]
    assert st.full["step"].tolist() == [3, 4, 5]
    assert [n.code for n in st.notes] == ["trace.partial_step"]
    bd = rank_breakdown(events, st.table)
    assert bd["step"].tolist() == [3, 4, 5]  # partial step left out

    no_steps = ev(row("cpu_op", 10, 5), row("cpu_op", 30, 10))
    st = step_table(no_steps)
    assert len(st.table) == 1 and st.table.iloc[0]["dur"] == 30
    assert [n.code for n in st.notes] == ["trace.pseudo_step"]


def test_phase_busy_hides_nothing_under_ddp() -> None:
    fast, slow = cpu_ddp_rank(0), cpu_ddp_rank(1)
    pf = phase_table(fast, step_table(fast).table).set_index(["step", "phase"])
    ps = phase_table(slow, step_table(slow).table).set_index(["step", "phase"])
    # raw backward durations are equal: the fast rank's range includes its wait
    assert pf.loc[(0, "backward"), "dur_us"] == ps.loc[(0, "backward"), "dur_us"]
    # busy time shows the delay
    assert pf.loc[(0, "backward"), "busy_us"] == BWD
    assert ps.loc[(0, "backward"), "busy_us"] == BWD + 2000
    assert bool(pf.loc[(0, "backward"), "has_comm"])
    assert ps.loc[(0, "backward"), "effective_us"] == BWD + 2000
    # a phase without communication: its duration is the rank's own cost
    assert pf.loc[(0, "data"), "effective_us"] == DATA


def tp_forward_rank(waits: bool) -> pd.DataFrame:
    """One CPU step as DTensor tensor parallelism records it: an enclosing op (the DTensor
    matmul) holds 600 us of work and, nested in it, a 400 us `wait_tensor` while gloo's
    runloop thread runs the all-reduce. `waits=False` drops the wait row (as if the trace had
    only the enclosing op)."""
    rows = [
        row("step", START, 2000.0, "ProfilerStep#0", step=0),
        row("phase", START, 2000.0, "torchscale:forward", phase="forward"),
        row("cpu_op", START + 100, 1000.0, "aten::mm"),
        row("collective", START + 700, 400.0, "gloo:all_reduce", tid=9, coll_op="all_reduce"),
    ]
    if waits:
        rows.append(row("comm_wait", START + 700, 400.0, "_c10d_functional::wait_tensor"))
    return ev(*rows)


def test_a_wait_nested_in_an_op_is_exposed_communication_not_compute() -> None:
    frame = tp_forward_rank(waits=True)
    steps = step_table(frame).table
    b = rank_breakdown(frame, steps).iloc[0]
    assert b["compute_us"] == 600.0  # 1000 us op less the 400 us it sat in the wait
    assert b["exposed_comm_us"] == 400.0 and b["overlap_pct"] == 0.0
    busy = phase_table(frame, steps).set_index("phase").loc["forward", "busy_us"]
    assert busy == 600.0
    # negative control: without the wait row the same timeline reads as fully hidden comm
    hidden = rank_breakdown(tp_forward_rank(waits=False), steps).iloc[0]
    assert hidden["exposed_comm_us"] == 0.0 and hidden["compute_us"] == 1000.0


# --------------------------------------------------------------------------- known answers


@pytest.mark.parametrize("world", [2, 4])
def test_delayed_rank_wait_stall_straggler_whatif(world: int) -> None:
    delay = 2000.0
    # 8 steps: the what-if is the straggler candidate's, and the test needs at least 7
    frames = {r: cpu_ddp_rank(r, world=world, delay=delay, steps=8) for r in range(world)}
    out = run_all(frames)
    matched = out["matched"]
    assert not matched.mismatches
    m = matched.matched
    assert len(m) == 8 * world
    others = m[m["rank"] != 1]
    assert np.allclose(others["wait_us"], delay)
    assert np.allclose(m[m["rank"] == 1]["wait_us"], 0.0)
    assert np.allclose(m["transfer_us"], XFER)
    assert m[m["last_by_duration"]]["rank"].unique().tolist() == [1]

    stall = out["stall"]
    expected = 100.0 * delay * (world - 1) / world / STEP_LEN
    assert stall.overall_pct == pytest.approx(expected)
    t = stall.table.set_index(["rank", "step"])
    assert t.loc[(0, 2), "stall_us"] == pytest.approx(delay)
    assert t.loc[(1, 2), "stall_us"] == 0.0

    s = out["strag"].straggler
    assert s is not None, out["strag"].reason
    assert s.rank == 1 and s.share_last == 1.0 and s.op == "all_reduce"
    assert s.mean_lateness_us == pytest.approx(delay)
    assert s.phase == "backward"
    assert s.phase_gap_us == pytest.approx(delay)
    assert s.phase_gap_pct == pytest.approx(100 * delay / STEP_LEN)
    assert s.mean_arrival_lateness_us == pytest.approx(delay)

    w = out["diagnosis"].whatif
    assert w is not None and w.rank == 1 and w.named
    # by hand: every other rank waits `delay` per step with nothing else to do, and rank 1's
    # extra own work is `delay` (its injected delay): one delay per step, the same both ways
    assert w.saved_s.value == pytest.approx(delay * 1e-6)
    assert w.extra_work_s == pytest.approx(delay * 1e-6)
    assert w.share.value == pytest.approx(delay / STEP_LEN)
    assert_whatif_bounded(out)

    idle = out["idle"].set_index(["rank", "step"])
    assert idle.loc[(0, 1), "waiting_for_peers_us"] == pytest.approx(delay)
    assert idle.loc[(0, 1), "transfer_us"] == pytest.approx(XFER)
    assert idle.loc[(1, 1), "waiting_for_peers_us"] == pytest.approx(0.0)


def test_no_delay_no_straggler() -> None:
    # 8 steps: enough for the straggler test, so there is a candidate and its what-if
    frames = {r: cpu_ddp_rank(r, world=4, delay_rank=None, steps=8) for r in range(4)}
    out = run_all(frames)
    assert out["stall"].overall_pct == pytest.approx(0.0)
    assert out["strag"].straggler is None
    assert "clear last" in say(out["strag"].reason)
    # no delay, no wait: whatever the candidate, it would save nothing
    w = out["diagnosis"].whatif
    assert w is not None and not w.named
    assert_saves_nothing(out)


def test_even_spread_is_not_a_straggler() -> None:
    # each rank late once per cycle of 4 steps: shares are uniform
    frames = {}
    for r in range(4):
        parts = []
        for s in range(8):
            f = cpu_ddp_rank(r, steps=1, delay_rank=s % 4, world=4)
            f["ts"] += s * STEP_LEN
            f["step"] = f["step"].where(f["step"].isna(), s)
            f["seq"] = f["seq"].where(f["seq"].isna(), s)
            parts.append(f)
        frames[r] = pd.concat(parts, ignore_index=True)
    out = run_all(frames)
    assert out["strag"].straggler is None
    assert "no rank stands out" in say(out["strag"].reason)
    assert out["stall"].overall_pct == pytest.approx(100 * 2000 * 3 / 4 / STEP_LEN)
    attribution = out["model"].attribution
    verdict = attribution.straggler
    assert verdict is not None and not verdict.named, line(verdict)
    wait = next(p for p in attribution.parts if p.name == "wait_for_peers")
    assert wait.share.value == pytest.approx(2000 * 3 / 4 / STEP_LEN)
    _inputs, found = findings_of(out)
    cats = [f.category for f in found]
    assert "load_imbalance" in cats and "straggler" not in cats
    (imbalance,) = [f for f in found if f.category == "load_imbalance"]
    assert imbalance.cost == wait.share  # the finding costs the model's part, nothing else


def test_skewed_clocks_offsets_and_lateness() -> None:
    skew = {0: 0.0, 1: 3.0e6, 2: -1.0e6, 3: 0.5e6}
    frames = {
        r: cpu_ddp_rank(r, world=4, offset=skew[r], end_noise=3.0, steps=10, seed=7)
        for r in range(4)
    }
    out = run_all(frames)
    off = out["offsets"].table.set_index("rank")
    for r in range(4):
        assert off.loc[r, "offset_us"] == pytest.approx(skew[r], abs=6.0)
        assert off.loc[r, "uncertainty_us"] < 10.0
    assert out["offsets"].reference == 0
    arr = out["arr"].table
    late = arr[arr["rank"] == 1]["arrival_lateness_us"]
    assert np.allclose(late, 2000.0, atol=12.0)
    assert arr[arr["last_by_arrival"]]["rank"].unique().tolist() == [1]
    assert out["arr"].agreement == 1.0
    # the duration method never looks at clocks: waits are the delay up to the end noise
    m = out["matched"].matched
    assert np.allclose(m[m["rank"] != 1]["wait_us"], 2000.0, atol=6.0)
    assert out["strag"].straggler is not None and out["strag"].straggler.rank == 1


def test_mismatches_and_unequal_counts_are_reported() -> None:
    a = cpu_ddp_rank(0, delay_rank=None)
    b = cpu_ddp_rank(1, delay_rank=None, nelems=999)  # every size differs
    matched = match_collectives(
        {0: collective_table(a, step_table(a).table), 1: collective_table(b, step_table(b).table)}
    )
    assert any("size" in say(finding) for finding in matched.mismatches)
    (disagree,) = [f for f in matched.mismatches if f.code == "trace.disagreeing_collectives"]
    assert disagree.figures["kinds"] == ["size"] and disagree.figures["examples"]
    assert matched.usable.empty and not matched.matched.empty

    c = cpu_ddp_rank(1, delay_rank=None, op="broadcast")
    m2 = match_collectives(
        {0: collective_table(a, step_table(a).table), 1: collective_table(c, step_table(c).table)}
    )
    assert any("op" in (line := say(f)) and "broadcast" in line for f in m2.mismatches)

    short = cpu_ddp_rank(1, steps=4)
    tables = {
        0: collective_table(a, step_table(a).table),
        1: collective_table(short, step_table(short).table),
    }
    m3 = match_collectives(tables)
    lines = [say(f) for f in m3.mismatches]
    assert any("different numbers" in line and "rank 0: 6" in line for line in lines)
    assert m3.matched["index"].nunique() == 4

    # without seq: matched by order, the common prefix
    for t in tables.values():
        t["by_seq"] = False
    m4 = match_collectives(tables)
    assert m4.matched["index"].nunique() == 4 and m4.mismatches


def test_single_rank_gives_comm_figures_but_no_stall() -> None:
    frames = {0: cpu_ddp_rank(0, delay_rank=None)}
    out = run_all(frames, world=2)
    assert out["matched"].matched.empty
    assert any(n.code == "trace.group_one_rank" for n in out["matched"].notes)
    assert out["stall"].overall_pct is None
    assert out["strag"].straggler is None
    # the waits are unknown: no what-if (nothing to bound it with)
    assert out["diagnosis"] is not None and out["diagnosis"].whatif is None
    assert out["offsets"].table.empty and out["arr"].agreement is None
    bd = out["bds"][0]
    assert (bd["comm_us"] == XFER).all()
    idle = out["idle"]
    assert (idle["waiting_for_peers_us"] == 0).all()
    inputs, _ = findings_of(out)
    assert inputs.stall is None and not inputs.waits_known
    # one rank of two: the wait is not zero, it is unknown (inside exposed transfer)
    attribution = out["model"].attribution
    wait = next(p for p in attribution.parts if p.name == "wait_for_peers")
    assert wait.share.value is None and wait.share.high is None
    assert "one rank of 2" in (why(wait.share.reason) or "")
    assert attribution.straggler is None


def test_empty_tables() -> None:
    empty = ev()
    st = step_table(empty)
    assert st.table.empty
    assert phase_table(empty, st.table).empty
    assert rank_breakdown(empty, st.table).empty
    coll = collective_table(empty, st.table)
    assert coll.empty
    base = idle_reducer(empty, st.table)
    matched = match_collectives({0: coll, 1: coll})
    assert matched.matched.empty
    assert sync_stall(matched, {0: st.table}).overall_pct is None
    assert estimate_offsets(matched).table.empty
    assert arrivals(matched, estimate_offsets(matched)).table.empty
    assert attribute_straggler(matched, None, {}).straggler is None
    assert idle_taxonomy({0: base}, matched).empty
    model = build_step_model(
        idle_taxonomy({0: base}, matched),
        phases_by_rank={},
        matched=matched,
        arrival=None,
        waits_known=False,
        world_size=None,
    )
    assert model.attribution is None and model.reason
    inputs = finding_inputs(model, {})
    assert rank_findings(inputs) == []
    # no step model, no diagnosis (and so no what-if)
    assert diagnose(RunEvidence(traces=TraceEvidence(model=model, inputs=inputs))) is None
    # a rank with steps but nothing else
    only_steps = ev(row("step", 0, 10, step=0))
    assert rank_breakdown(only_steps, step_table(only_steps).table)["idle_us"].tolist() == [10]


def test_idle_categories_add_up_cpu() -> None:
    frames = {r: cpu_ddp_rank(r, world=2, buckets=2, steps=8) for r in range(2)}
    out = run_all(frames)
    idle = out["idle"]
    assert np.allclose(idle[CATEGORIES].sum(axis=1), idle["step_us"])
    # two buckets: bucket 0's wait hides behind backward compute (but for the CALL us its
    # enqueue call interrupts it: the thread is communicating then), bucket 1's is exposed
    r0 = idle[idle["rank"] == 0]
    assert np.allclose(r0["waiting_for_peers_us"], 2000.0 + CALL)
    m = out["matched"].matched
    assert np.allclose(m[m["rank"] == 0]["wait_us"], 2000.0)
    # hidden waits count in the raw stall, not in the exposed one
    assert out["stall"].table.set_index(["rank", "step"]).loc[(0, 0), "stall_us"] == 4000.0
    exposed = sync_stall(out["matched"], out["steps"], out["exposed"])
    assert exposed.table.set_index(["rank", "step"]).loc[(0, 0), "stall_us"] == 2000.0 + CALL
    # the what-if counts the exposed wait only: rank 1 on time saves one delay per step, not
    # the two the raw waits add up to (its extra own work, 2000 us, caps the 2000 + CALL us
    # rank 0 waits with nothing to do)
    w = out["diagnosis"].whatif
    assert w is not None and w.rank == 1 and w.named
    assert w.saved_s.value == pytest.approx(2000e-6)
    assert_whatif_bounded(out)


def test_a_loaders_wait_inside_pytorchs_dataloader_range_is_data_not_compute() -> None:
    """Where torchscale's own data range stands, PyTorch's `enumerate(DataLoader)#...` range
    inside it is a plain host op (no phase counted twice) but no work of its own: a slow
    loader's sleep under it is the data phase, and only the ops nested in it (indexing,
    collate) are compute."""
    loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    frame = ev(
        row("step", START, 10_000.0, "ProfilerStep#1", step=1),
        row("phase", START, 8_000.0, "torchscale:data", phase="data"),
        row("cpu_op", START + 1.0, 7_998.0, loader),
        row("cpu_op", START + 7_000.0, 500.0, "aten::stack"),
        row("phase", START + 8_000.0, 2_000.0, "torchscale:forward", phase="forward"),
        row("cpu_op", START + 8_000.0, 2_000.0, "aten::addmm"),
    )
    steps = step_table(frame).table
    base = idle_reducer(frame, steps).per_step.iloc[0]
    assert base["compute_us"] == pytest.approx(2_500.0)
    assert base["data_us"] == pytest.approx(7_500.0)
    data = phase_table(frame, steps).set_index("phase").loc["data"]
    assert data["busy_us"] == pytest.approx(500.0)
    assert data["effective_us"] == pytest.approx(8_000.0)


def test_an_injected_delay_is_data_in_the_data_phase_and_work_elsewhere() -> None:
    """`--inject-delay R:data:MS` stands for a slow loader: inside the data phase its range
    is the loader's wait (data), while a delay in forward stays work (compute)."""
    delay = "torchscale:injected_delay"
    frame = ev(
        row("step", START, 10_000.0, "ProfilerStep#1", step=1),
        row("phase", START, 4_000.0, "torchscale:data", phase="data"),
        row("cpu_op", START + 100.0, 3_000.0, delay),
        row("phase", START + 4_000.0, 6_000.0, "torchscale:forward", phase="forward"),
        row("cpu_op", START + 4_000.0, 2_000.0, delay),
        row("cpu_op", START + 6_000.0, 4_000.0, "aten::addmm"),
    )
    base = idle_reducer(frame, step_table(frame).table).per_step.iloc[0]
    assert base["compute_us"] == pytest.approx(6_000.0)
    assert base["data_us"] == pytest.approx(4_000.0)


def test_gloo_buckets_on_two_threads_are_ordered_by_start() -> None:
    # four buckets alternate between two runloop threads; no seq recorded
    frames = {r: cpu_ddp_rank(r, world=2, buckets=4, steps=3) for r in range(2)}
    tables = {}
    for r, f in frames.items():
        f["seq"] = pd.array([pd.NA] * len(f), dtype="Int64")
        t = collective_table(f, step_table(f).table)
        assert not t["by_seq"].any()
        assert t["tid"].nunique() == 2
        # index follows start order, alternating threads; sizes come in bucket order
        assert t.sort_values("index")["nelems"].tolist() == [1000, 1001, 1002, 1003] * 3
        tables[r] = t
    matched = match_collectives(tables)
    assert not matched.mismatches
    m = matched.matched
    assert np.allclose(m[m["rank"] == 0]["wait_us"], 2000.0)
    # compute excludes the runloop threads' time and the main thread's enqueue calls (three
    # of the four fall inside the backward op; the last one comes after it)
    act = activity(frames[0])
    assert act.comm.total() > 0
    computed = act.compute.within([START], [START + STEP_LEN])[0]
    assert computed == DATA + FWD + BWD + OPT - 3 * CALL


def test_metadata_filled_from_calls_on_cpu() -> None:
    f = cpu_ddp_rank(0, delay_rank=None)
    calls = f["kind"] == "collective_call"
    coll = f["kind"] == "collective"
    # metadata only on the enqueue calls, as some readers leave it
    for col in ("pg", "nelems", "dtype"):
        f.loc[calls, col] = f.loc[coll, col].to_numpy()
        f.loc[coll, col] = None
    t = collective_table(f, step_table(f).table)
    assert (t["group"] == "0").all()
    assert (t["nelems"] == 1000).all() and (t["dtype"] == "float32").all()


# --------------------------------------------------------------------------- GPU ranks


def gpu_rank(
    rank: int, *, delay: float = 0.0, launch_gap: float = 0.0, steps: int = 4
) -> pd.DataFrame:
    """A tiny GPU rank: per step, a host range launching forward and backward kernels and an
    NCCL all_reduce on its own stream. `delay` makes the backward kernel longer; `launch_gap`
    launches the backward kernel late (the GPU idles waiting for the host)."""
    rows: list[dict[str, Any]] = []
    step_len = 1000.0
    corr = 0
    for s in range(steps):
        t = s * step_len
        rows.append(row("step", t, step_len, step=s))
        rows.append(row("phase", t, 300, "fwd", phase="forward"))
        rows.append(row("phase", t + 300, 500, "bwd", phase="backward"))
        corr += 1
        rows.append(row("runtime", t + 10, 5, "cudaLaunchKernel", correlation=corr))
        rows.append(
            row("kernel", t + 20, 200, "gemm_fwd", device_side=True, tid=7, correlation=corr)
        )
        corr += 1
        launch = t + 310 + launch_gap
        rows.append(row("runtime", launch, 5, "cudaLaunchKernel", tid=2, correlation=corr))
        rows.append(
            row(
                "kernel",
                max(launch + 10, t + 320),
                300 + delay,
                "gemm_bwd",
                device_side=True,
                tid=7,
                correlation=corr,
            )
        )
        corr += 1
        rows.append(row("runtime", t + 700, 5, "cudaLaunchKernel", tid=2, correlation=corr))
        rows.append(
            row(
                "collective_call",
                t + 695,
                20,
                "record_param_comms",
                coll_op="all_reduce",
                tid=2,
                pg="0",
                nelems=4096,
                dtype="bf16",
                seq=s,
            )
        )
        rows.append(
            row(
                "collective",
                t + 720,
                100,
                "ncclDevKernel_AllReduce_Sum_bf16",
                device_side=True,
                tid=20,
                coll_op="all_reduce",
                correlation=corr,
            )
        )
        rows.append(row("memory", t + 900, 20, "Memcpy HtoD", device_side=True, tid=21))
    return ev(*rows)


def test_gpu_phase_busy_uses_launch_correlation() -> None:
    events = gpu_rank(0, delay=50.0)
    ph = phase_table(events, step_table(events).table).set_index(["step", "phase"])
    assert ph.loc[(0, "forward"), "busy_us"] == 200
    assert ph.loc[(0, "backward"), "busy_us"] == 350  # launched in backward, from thread 2
    t = collective_table(events, step_table(events).table)
    # metadata came from the enqueuing call through the launch correlation
    assert t["group"].tolist() == ["0"] * 4 and t["nelems"].tolist() == [4096] * 4
    assert t["by_seq"].all() and t["step"].tolist() == [0, 1, 2, 3]


def test_gpu_idle_host_wait_and_categories() -> None:
    events = gpu_rank(0, launch_gap=200.0)
    st = step_table(events).table
    base = idle_reducer(events, st)
    ps = base.per_step.set_index("step")
    # step 1: fwd kernel [1020,1220), bwd launched at 1510, runs [1520, 1820); the gap
    # [1220, 1520) ends with a kernel launched after it began: host wait
    # plus [1920, 2000): step 2's first kernel is launched at 2010, after the memcpy ended; and
    # [1000, 1020) before this step's first kernel, launched at 1010
    assert ps.loc[1, "host_wait_us"] == pytest.approx(300.0 + 80.0 + 20.0)
    idle = idle_taxonomy({0: base}, None)
    assert np.allclose(idle[CATEGORIES].sum(axis=1), idle["step_us"])
    assert (idle["memory_us"] == 20).all()
    bd = rank_breakdown(events, st).set_index("step")
    assert bd.loc[1, "compute_us"] == 500
    assert bd.loc[1, "comm_us"] == pytest.approx(820 + 100 - 820)  # collective [1720,1820)
    # under the backward kernel: overlap 100 %
    assert bd.loc[1, "overlap_pct"] == pytest.approx(100.0)
    out = run_all({0: events})
    inputs, found = findings_of(out, device_type="cuda", backend="nccl")
    assert inputs.host_wait is not None and (inputs.host_wait.value or 0) > 0.2
    assert found[0].category == "host_bound"
    assert found[0].cost == out["model"].host_wait


def _gpu_pair(steps: int) -> dict[int, pd.DataFrame]:
    frames = {}
    for r in range(2):
        f = gpu_rank(r, delay=100.0 if r == 1 else 0.0, steps=steps)
        coll = f["kind"] == "collective"
        if r == 0:  # arrives 100 us earlier, the collective ends together: it waits
            f.loc[coll, "dur"] = 200.0
            f.loc[coll, "ts"] = f.loc[coll, "ts"] - 100.0
        frames[r] = f
    return frames


@pytest.mark.slow
def test_gpu_straggler_named_with_enough_evidence() -> None:
    few = run_all(_gpu_pair(4))
    assert few["strag"].straggler is None  # 4 of 4: p = 2 x 1/16 = 0.125, could be chance
    assert "chance" in say(few["strag"].reason)
    # 4 steps are too few for the own-work test (7): no candidate, so no what-if either
    assert few["model"].attribution.straggler.candidate_rank is None
    assert few["diagnosis"].whatif is None
    out = run_all(_gpu_pair(8))
    s = out["strag"].straggler
    assert s is not None and s.rank == 1 and s.phase == "backward"
    assert s.phase_gap_us == pytest.approx(100.0)  # kernel busy, launched in backward
    assert s.mean_lateness_us == pytest.approx(100.0)
    verdict = out["model"].attribution.straggler
    assert verdict.named and (verdict.rank, verdict.phase) == (1, "backward"), line(verdict)
    assert verdict.gap_s.value == pytest.approx(100e-6)
    _, listed = findings_of(out, device_type="cuda", backend="nccl")
    found = {f.category: f for f in listed}
    top = found["straggler"]
    assert top.title == "GPU-1 is the straggler: compute in backward, in NCCL all_reduce"
    # its cost is the model's waiting for peers: GPU-0 waits 100 us, GPU-1 0, of 1000 us
    assert top.cost_fraction == pytest.approx(0.05)
    # the what-if is the other rank's own wait (100 us of its 1000 us step), which is also
    # GPU-1's extra work: an upper bound, never more than either
    w = out["diagnosis"].whatif
    assert w is not None and w.rank == 1 and w.named
    assert w.share.value == pytest.approx(0.1)
    assert w.saved_s.value == pytest.approx(100e-6)
    assert_whatif_bounded(out)
    assert "host_bound" in found  # the toy step leaves the GPU idle between launches


def test_findings_titles_and_threshold() -> None:
    # 8 steps: the paired test needs at least 7 to reach p < 0.01
    frames = {r: cpu_ddp_rank(r, world=4, delay=2000.0, steps=8) for r in range(4)}
    out = run_all(frames)
    _inputs, found = findings_of(out)
    assert found[0].category == "straggler"
    assert found[0].title == "rank 1 is the straggler: compute in backward, in gloo all_reduce"
    assert "GPU" not in found[0].title
    # the model's waiting for peers: three of four ranks wait 2 ms of each step
    assert found[0].cost_fraction == pytest.approx(2000.0 * 3 / 4 / STEP_LEN)
    assert all(f.cost_fraction >= MIN_COST_FRACTION for f in found)
    costs = [f.cost_fraction for f in found]
    assert costs == sorted(costs, reverse=True)
    assert all(f.recommendation and f.evidence for f in found)
    cats = {f.category for f in found}
    # the data phase is all collate (an op): compute, not a wait for data (schema 1 counted
    # it twice, as compute and as a 7.8 % data wait)
    assert "data_wait" not in cats
    assert "load_imbalance" not in cats

    gpu = FindingInputs(
        cycle_us=1000.0,
        ranks=4,
        device_type="cuda",
        backend="nccl",
        stall=point(0.15),
        verdict=out["model"].attribution.straggler,
        straggler_op="all_reduce",
        straggler_peer=0,
        whatif=point(0.12),
        exposed_transfer=point(0.01),
        data=point(0.005),
    )
    found = rank_findings(gpu)
    assert found[0].title == "GPU-1 is the straggler: compute in backward, in NCCL all_reduce"
    assert "throttl" in found[0].recommendation
    assert [f.category for f in found] == ["straggler"]  # the rest is under 2 %


def test_binomial_tail() -> None:
    assert binomial_tail(0, 5, 0.5) == 1.0
    assert binomial_tail(5, 5, 0.5) == pytest.approx(1 / 32)
    assert binomial_tail(3, 4, 0.5) == pytest.approx(5 / 16)
    assert binomial_tail(6, 5, 0.5) == 0.0


def test_captures_starting_at_different_steps() -> None:
    a = cpu_ddp_rank(0, steps=6)
    b = cpu_ddp_rank(1, steps=7)
    b = b[~((b["kind"] != "step") & (b["ts"] < START + STEP_LEN))]  # rank 1 starts a step late
    b = b[b["step"].isna() | (b["step"] >= 1)]
    st_a, st_b = step_table(a).table, step_table(b).table
    tables = {0: collective_table(a, st_a), 1: collective_table(b, st_b)}
    by_seq = match_collectives(tables)
    assert not by_seq.mismatches  # same count, shifted window: a note, not a mismatch
    assert any(n.code == "trace.different_collectives" for n in by_seq.notes)
    assert sorted(by_seq.matched["index"].unique()) == [1, 2, 3, 4, 5]
    assert np.allclose(by_seq.usable.query("rank == 0")["wait_us"], 2000.0)
    for t in tables.values():
        t["by_seq"] = False
    by_order = match_collectives(tables)
    assert any(n.code == "trace.captures_start_apart" for n in by_order.notes)
    assert np.allclose(by_order.usable.query("rank == 0")["wait_us"], 2000.0)
    assert by_order.matched["step"].min() == 1


def test_findings_say_when_waits_are_unknown() -> None:
    out = run_all({0: cpu_ddp_rank(0, delay_rank=None)}, world=2)
    inputs, found = findings_of(out)
    assert not inputs.waits_known
    comm = [f for f in found if f.category == "exposed_comm"]
    assert comm and "may include waiting" in comm[0].evidence[0]


def test_waits_fully_hidden_behind_compute_save_nothing() -> None:
    out = run_all({r: cpu_ddp_rank(r) for r in range(2)})
    hidden = {0: iv.EMPTY, 1: iv.EMPTY}  # no exposed communication at all
    assert sync_stall(out["matched"], out["steps"], hidden).overall_pct == 0.0
    # the what-if: GPU-0 computes through its whole wait for GPU-1 (a kernel launched before
    # the step's phases, so GPU-0's own work in them is unchanged and GPU-1 stays 100 us
    # slower): GPU-1 on time would shorten nothing, however large its extra work
    frames = _gpu_pair(8)
    extra = [
        r
        for s in range(8)
        for r in (
            row("runtime", s * 1000.0 - 50, 5, "cudaLaunchKernel", tid=2, correlation=1000 + s),
            row(
                "kernel",
                s * 1000.0 + 620,
                100,
                "overlapped",
                device_side=True,
                tid=8,
                correlation=1000 + s,
            ),
        )
    ]
    frames[0] = pd.concat([frames[0], ev(*extra)], ignore_index=True)
    out = run_all(frames)
    parts = out["model"].parts
    assert (parts["wait_for_peers"] == 0.0).all()
    verdict = out["model"].attribution.straggler
    assert verdict.named and verdict.rank == 1, line(verdict)
    w = out["diagnosis"].whatif
    assert w is not None and w.rank == 1 and w.named
    assert w.extra_work_s == pytest.approx(100e-6)  # the extra work alone would promise 10 %
    assert_saves_nothing(out)


def test_exposed_communication_remedy_follows_the_strategy() -> None:
    """DDP bucket advice is wrong for a tensor-parallel cell: its all-reduces are in every
    layer, not in a gradient sync."""

    def fix(strategy: str | None) -> str:
        inputs = FindingInputs(
            cycle_us=1000.0,
            ranks=2,
            backend="gloo",
            strategy=strategy,
            exposed_transfer=point(0.2),
            waits_known=True,
        )
        (found,) = [f for f in rank_findings(inputs) if f.category == "exposed_comm"]
        return found.recommendation

    assert "bucket_cap_mb" in fix(None) and "bucket_cap_mb" in fix("ddp")
    assert "Tensor-parallel" in fix("tp") and "bucket_cap_mb" not in fix("tp")
    assert "micro-batches" in fix("pp")


def test_interface_advice_only_where_ranks_span_hosts() -> None:
    """Which interface carries the traffic is no question on one host: no GLOO/NCCL socket
    advice there; across hosts it is given, and traces of unknown hosts say when it applies."""

    def fix(backend: str, device: str, nodes: int | None) -> str:
        inputs = FindingInputs(
            cycle_us=1000.0,
            ranks=2,
            device_type=device,
            backend=backend,
            strategy="ddp",
            nodes=nodes,
            exposed_transfer=point(0.2),
            waits_known=True,
        )
        (found,) = [f for f in rank_findings(inputs) if f.category == "exposed_comm"]
        return found.recommendation

    for backend, device, word in (("gloo", "cpu", "GLOO_SOCKET_IFNAME"), ("nccl", "cuda", "NCCL")):
        assert word not in fix(backend, device, 1)
        assert word in fix(backend, device, 2)
        assert "cross hosts" in fix(backend, device, None)
        assert "bucket_cap_mb" in fix(backend, device, 1)


# --------------------------------------------------------------------------- the step model


def assert_partition(out: dict[str, Any]) -> None:
    """The model's parts are never negative, add up to every step of every rank, and its
    estimates are shares inside [0, 1] whose means add up to the mean step."""
    model = out["model"]
    parts = model.parts
    assert not parts.empty
    values = parts[list(PART_NAMES)].to_numpy()
    assert (values >= 0).all()
    window = out["idle"].set_index(["rank", "step"])["step_us"]
    keyed = parts.set_index(["rank", "step"])
    assert np.allclose(keyed["step_s"] * 1e6, window.loc[keyed.index], rtol=0, atol=1e-3)
    assert np.allclose(values.sum(axis=1), parts["step_s"])
    attribution = model.attribution
    per_step = parts.groupby("step")[list(PART_NAMES)].mean()
    assert per_step.sum(axis=1).mean() == pytest.approx(attribution.step_s.value)
    for part in attribution.parts:
        for figure in (part.share.value, part.share.low, part.share.high):
            assert figure is None or 0.0 <= figure <= 1.0
        for figure in (part.seconds.value, part.seconds.low, part.seconds.high):
            assert figure is None or figure >= 0.0


def _overlapping_rank() -> pd.DataFrame:
    """A CPU rank where everything overlaps: a data phase with an op in it and a collective
    under it, compute nested in compute, a collective half under compute."""
    rows = []
    for s in range(3):
        t = START + s * 10_000.0
        rows += [
            row("step", t, 10_000.0, f"ProfilerStep#{s}", step=s),
            row("phase", t, 3000.0, "torchscale:data", phase="data"),
            row("cpu_op", t, 1000.0, "collate"),
            row("cpu_op", t + 200, 500.0, "aten::copy_"),  # nested: counted once
            row("collective", t + 2000, 500.0, "gloo:broadcast", coll_op="broadcast", tid=9),
            row("phase", t + 3000, 4000.0, "torchscale:forward", phase="forward"),
            row("cpu_op", t + 3000, 3000.0, "aten::addmm"),
            row("collective", t + 5500, 1000.0, "gloo:all_reduce", coll_op="all_reduce", tid=9),
        ]
    return ev(*rows)


@pytest.mark.parametrize(
    "case",
    ["cpu_delay", "cpu_buckets", "cpu_balanced", "gpu_host_wait", "gpu_pair", "overlapping"],
)
def test_step_model_parts_partition_the_step(case: str) -> None:
    frames = {
        "cpu_delay": lambda: {r: cpu_ddp_rank(r, world=4, steps=8) for r in range(4)},
        "cpu_buckets": lambda: {r: cpu_ddp_rank(r, buckets=3, end_noise=40) for r in range(2)},
        "cpu_balanced": lambda: {r: cpu_ddp_rank(r, delay_rank=None) for r in range(3)},
        "gpu_host_wait": lambda: {0: gpu_rank(0, launch_gap=200.0)},
        "gpu_pair": lambda: _gpu_pair(8),
        "overlapping": lambda: {0: _overlapping_rank()},
    }[case]()
    assert_partition(run_all(frames))


def test_data_is_the_data_phase_with_nothing_else_running() -> None:
    out = run_all({0: _overlapping_rank()})
    parts = out["model"].parts.iloc[0]
    # data phase 3000 us: collate 1000 us is compute, the broadcast 500 us is communication
    assert parts["data"] == pytest.approx(1500e-6)
    assert parts["compute"] == pytest.approx(4000e-6)
    assert parts["exposed_transfer"] == pytest.approx(500e-6 + 500e-6)  # half under addmm
    assert parts["rest"] == pytest.approx(10_000e-6 - 1500e-6 - 4000e-6 - 1000e-6)
    bd = out["bds"][0].iloc[0]
    assert bd["data_wait_us"] == pytest.approx(1500.0)  # the breakdown says the same


@pytest.mark.slow
def test_balanced_ranks_name_no_straggler_and_a_gap_names_rank_and_phase() -> None:
    balanced = run_all({r: cpu_ddp_rank(r, world=4, delay_rank=None, steps=8) for r in range(4)})
    verdict = balanced["model"].attribution.straggler
    assert verdict is not None and not verdict.named and verdict.rank is None
    assert line(verdict).startswith("Straggler: none (rank ")
    _, found = findings_of(balanced)
    assert "straggler" not in {f.category for f in found}
    delayed = run_all({r: cpu_ddp_rank(r, world=4, steps=8) for r in range(4)})
    verdict = delayed["model"].attribution.straggler
    assert verdict.named and (verdict.rank, verdict.phase) == (1, "backward"), line(verdict)
    assert verdict.gap_s.value == pytest.approx(2000e-6)
    checks = {c.check: c for c in delayed["model"].attribution.cross_checks}
    assert checks["arrival_order"].agrees is True
    assert checks["others_wait"].agrees is True
    assert checks["others_wait"].detail.figures["source"] == "matched collectives"


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 4])
def test_whatif_never_promises_more_than_the_wait_it_removes(world: int) -> None:
    for frames in (
        {r: cpu_ddp_rank(r, world=world, steps=8) for r in range(world)},
        {r: cpu_ddp_rank(r, world=world, steps=8, buckets=2) for r in range(world)},
    ):
        out = run_all(frames)
        model, diagnosis = out["model"], out["diagnosis"]
        w = diagnosis.whatif
        assert w is not None and w.rank == 1 and w.named
        assert w.saved_s.value is not None and w.saved_s.value > 0
        assert_whatif_bounded(out)
        wait = next(p for p in diagnosis.parts if p.name == "wait_for_peers")
        # in the Step line's terms: the mean wait over N ranks is (N-1)/N of the others' wait
        assert w.share.value <= wait.share.value * world / (world - 1) + 1e-9
        # one diagnosis: the what-if is its own figure, no longer a cross-check of the model,
        # and the straggler finding quotes that same figure
        checks = [*model.attribution.cross_checks, *diagnosis.cross_checks]
        assert all(c.check in CHECKS and "what-if" not in check_label(c.check) for c in checks)
        inputs, found = findings_of(out)
        assert inputs.whatif == w.share
        (straggler,) = [f for f in found if f.category == "straggler"]
        assert any(e.startswith("what-if") for e in straggler.evidence)


def test_contradicting_arrival_order_withdraws_the_straggler() -> None:
    """Own work says GPU-1 is slower in backward, but the collectives say GPU-0 arrives last
    at every one: the traces contradict the test, no straggler is named."""
    frames = {}
    for r in range(2):
        f = gpu_rank(r, delay=100.0 if r == 1 else 0.0, steps=8)
        coll = f["kind"] == "collective"
        if r == 1:  # rank 1 now holds the longer instance: it waited, rank 0 was last
            f.loc[coll, "dur"] = 200.0
            f.loc[coll, "ts"] = f.loc[coll, "ts"] - 100.0
        frames[r] = f
    out = run_all(frames)
    assert out["strag"].straggler is not None and out["strag"].straggler.rank == 0
    verdict = out["model"].attribution.straggler
    assert not verdict.named and verdict.candidate_rank == 1
    # the gap itself passed the test: it is the arrival order that withdrew the name
    assert verdict.significant and verdict.why_not == Finding(
        code="straggler.withdrawn", figures={"by": ["arrival_order"]}
    )
    assert line(verdict).endswith(": withdrawn by arrival order (last arriver))"), line(verdict)
    check = next(c for c in out["model"].attribution.cross_checks if c.check == "arrival_order")
    assert check.agrees is False and "rank 0 arrives last" in said(check.detail)
    # the what-if stays the candidate's, unnamed: rank 0 never waits for rank 1, so rank 1 on
    # time would save nothing
    w = out["diagnosis"].whatif
    assert w is not None and w.rank == 1 and not w.named
    assert_saves_nothing(out)


def test_targets_select_and_rank_findings() -> None:
    def make(category: str, cost: float) -> Problem:
        share = Estimate(value=cost, low=None, high=None, n=1, measurable=True)
        code = Finding(code=f"problem.{category}")  # never worded here
        return Problem(finding=code, category=category, cost_share=share)

    found = [
        make("exposed_comm", 0.30),
        make("host_bound", 0.20),
        make("straggler", 0.10),
        make("data_wait", 0.05),
    ]
    kept, left = findings_for_target(found, "sync_stalls")
    assert [f.category for f in kept] == ["straggler"]
    assert [f.category for f in left] == ["exposed_comm", "host_bound", "data_wait"]
    kept, _ = findings_for_target(found, "comm")
    assert [f.category for f in kept] == ["exposed_comm", "straggler"]
    kept, _ = findings_for_target(found, "compute")
    assert [f.category for f in kept] == ["host_bound", "data_wait"]
    assert findings_for_target(found, "memory")[0] == []
    assert findings_for_target(found, "all") == (found, [])


def test_without_collectives_the_wait_is_unknown_but_the_phases_name_the_straggler() -> None:
    """An nsys capture of CPU ranks records no collectives: the wait for peers cannot be
    split from the rest, but the phases still name the slow rank (and say its cost is its
    extra own work, not a wait it cannot see)."""
    frames = {}
    for r in range(2):
        f = cpu_ddp_rank(r, steps=8)
        frames[r] = f[~f["kind"].isin(["collective", "collective_call"])].reset_index(drop=True)
    out = run_all(frames)
    model = out["model"]
    assert not model.waits_known
    wait = next(p for p in model.attribution.parts if p.name == "wait_for_peers")
    assert wait.share.value is None and "no collective matched" in (why(wait.share.reason) or "")
    verdict = model.attribution.straggler
    assert verdict.named and (verdict.rank, verdict.phase) == (1, "backward"), line(verdict)
    assert out["diagnosis"].whatif is None  # nothing to cap it with: no what-if at all
    inputs, found = findings_of(out)
    assert inputs.stall is None
    (straggler,) = [f for f in found if f.category == "straggler"]
    assert any("extra own work" in e for e in straggler.evidence)
    assert 0 < straggler.cost_fraction <= 1
    assert_partition(out)


def test_a_gap_nobody_waits_for_stays_named_and_costs_nothing() -> None:
    """Own work says GPU-1 is slower every step, significantly, but at the collectives nobody
    waits for it (every instance as long on both ranks). No evidence names another rank: the
    others' wait is not measurable (not judged) and arrival order has no clear last arriver,
    so the name stands (until schema 10 such a check withdrew it, and a real 50 ms straggler
    was withdrawn by an arrival order of p = 0.11); the what-if says how little it costs."""
    frames = {}
    for r in range(2):
        f = gpu_rank(r, delay=100.0 if r == 1 else 0.0, steps=8)
        f.loc[f["kind"] == "collective", "dur"] = 100.0
        frames[r] = f
    out = run_all(frames)
    verdict = out["model"].attribution.straggler
    assert verdict is not None and verdict.candidate_rank == 1
    assert verdict.p_value is not None and verdict.p_value < 0.01  # the gap itself is certain
    assert verdict.named and (verdict.rank, verdict.phase) == (1, "backward"), line(verdict)
    assert verdict.significant and verdict.why_not is None
    checks = {c.check: c for c in out["model"].attribution.cross_checks}
    others = checks["others_wait"]
    assert others.detail.figures["source"] == "matched collectives"
    assert others.agrees is None and "no measurable extra wait" in said(others.detail)
    assert checks["arrival_order"].agrees is None
    diagnosis = out["diagnosis"]
    # the diagnosis' verdict is the model's, said not injected (no delay was)
    assert diagnosis.straggler == verdict.model_copy(update={"injected": False})
    assert disagreement(diagnosis.cross_checks) is None
    # nobody waits for it: it would save nothing, whatever its extra work
    w = diagnosis.whatif
    assert w is not None and w.rank == 1 and w.named
    assert w.extra_work_s == pytest.approx(100e-6)
    assert_saves_nothing(out)
    # its cost is the model's waiting for peers, 0 here: no straggler finding, and no
    # turn-taking story either
    _, found = findings_of(out, device_type="cuda", backend="nccl")
    assert not {"straggler", "load_imbalance"} & {f.category for f in found}
