"""Reading Kineto traces into the event table: classification, the streaming reader, discovery.

Hand-made traces are written to tmp_path; the real GPU traces of /work/shared/traces are read in
place (never copied) and their tests skip where that folder is absent.
"""

from __future__ import annotations

import collections.abc
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic_traces import write_synthetic_traces
from torchscale.contracts.errors import TraceError
from torchscale.contracts.step_phases import OWN_WORK_PHASES as PHASES
from torchscale.contracts.wording.profile import note
from torchscale.offline.traces import kineto
from torchscale.offline.traces.classify import classify_event, normalise_coll_op, phase_of, step_of
from torchscale.offline.traces.discover import find_traces, read_rank_traces
from torchscale.offline.traces.kineto import rank_from_file_name, read_header, read_kineto
from torchscale.offline.traces.rank_trace import COLL_OPS, EVENT_COLUMNS, KINDS, RankTrace

SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


# -- helpers ---------------------------------------------------------------------------------


def ev(
    name: str, cat: str = "cpu_op", ts: Any = 0, dur: Any = 1, tid: Any = 1, **args: Any
) -> dict:
    out: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts}
    if dur is not None:
        out["dur"] = dur
    out["args"] = {k.replace("_", " "): v for k, v in args.items()}
    return out


def write_trace(
    path: Path,
    events: list[dict],
    *,
    dist: dict | None = None,
    indent: int | None = 1,
    tail: dict | None = None,
    **top: Any,
) -> Path:
    """A Kineto-shaped document: keys, then traceEvents, then `tail` keys (as Kineto orders)."""
    doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": []}
    if dist is not None:
        doc["distributedInfo"] = dist
    doc.update(top)
    doc["traceEvents"] = events
    doc.update(tail or {})
    text = json.dumps(doc, indent=indent)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def gloo_events() -> list[dict]:
    return [
        ev("ProfilerStep#3", "user_annotation", ts=0, dur=100),
        ev("torchscale:forward", "user_annotation", ts=1, dur=20),
        ev("DistributedDataParallel.forward", "user_annotation", ts=2, dur=18),
        ev("aten::addmm", ts=3, dur=5),
        ev("torchscale:backward", "user_annotation", ts=22, dur=50),
        ev("c10d::allreduce_", ts=30, dur=2),
        ev("gloo:all_reduce", "user_annotation", ts=31, dur=40, tid=7),
        ev("torchscale:optimizer", "user_annotation", ts=73, dur=20),
        ev("Optimizer.step#SGD.step", "user_annotation", ts=74, dur=18),
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "pt_gloo_runloop"}},
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 200},
    ]


GLOO = {"backend": "gloo", "rank": 0, "world_size": 2}


def read_error(path: Path) -> str:
    with pytest.raises(TraceError) as info:
        read_kineto(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- classification --------------------------------------------------------------------------

# fmt: off
REAL_NAMES = [
    # (name, cat, args, kind, coll_op)
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "kernel", None,
     "collective", "all_reduce"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "kernel", None,
     "collective", "all_reduce"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "kernel",
     None, "collective", "all_reduce"),
    # NCCL < 2.19's generic kernel: its name says no op (the launch's metadata does)
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     "kernel", None, "collective", "unknown"),
    ("ncclKernel_SendRecv_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     "kernel", None, "collective", "send_recv"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "kernel",
     None, "collective", "broadcast"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "kernel", None, "collective",
     "reduce_scatter"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "kernel", None,
     "collective", "all_gather"),
    ("ncclDevKernel_Reduce_Sum_f32_RING_LL", "kernel", None, "collective", "reduce"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "kernel", None, "collective",
     "send_recv"),
    ("nccldevkernel_allreduce_sum_f32_ring_ll", "kernel", None, "collective", "all_reduce"),
    ("NCCLKERNEL_ALLGATHER_RING_LL_SUM_INT8_T", "kernel", None, "collective", "all_gather"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "kernel", None, "collective",
     "unknown"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "kernel",
     {"Collective name": "_allgather_base"}, "collective", "all_gather"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", {"Collective name": "barrier"},
     "collective", "barrier"),  # the kernel's own metadata before its name
    ("rcclKernel_AllToAll_RING_SIMPLE", "kernel", None, "collective", "all_to_all"),
    ("hcom_allReduce__524_0_1", "kernel", None, "collective", "all_reduce"),
    ("gloo:all_reduce", "user_annotation", None, "collective", "all_reduce"),
    ("gloo:broadcast", "user_annotation", None, "collective", "broadcast"),
    ("gloo:barrier", "user_annotation", None, "collective", "barrier"),
    ("c10d::allreduce_", "cpu_op", None, "collective_call", "all_reduce"),
    ("c10d::_reduce_scatter_base_", "cpu_op", None, "collective_call", "reduce_scatter"),
    ("c10d::alltoall_base_", "cpu_op", None, "collective_call", "all_to_all"),
    ("c10d::allgather_", "cpu_op", None, "collective_call", "all_gather"),
    ("c10d::broadcast_", "cpu_op", None, "collective_call", "broadcast"),
    ("c10d::barrier", "cpu_op", None, "collective_call", "barrier"),
    ("_c10d_functional::all_reduce", "cpu_op", None, "collective_call", "all_reduce"),
    ("_c10d_functional::wait_tensor", "cpu_op", None, "comm_wait", None),
    ("record_param_comms", "cpu_op", {"Collective name": "wait"}, "comm_wait", None),
    ("nccl:all_reduce", "user_annotation", None, "collective_call", "all_reduce"),
    ("nccl:_reduce_scatter_base", "user_annotation", None, "collective_call", "reduce_scatter"),
    ("nccl:_all_gather_base", "user_annotation", None, "collective_call", "all_gather"),
    ("nccl:all_to_all", "user_annotation", None, "collective_call", "all_to_all"),
    ("nccl:send 0->1", "user_annotation", None, "collective_call", "send"),
    ("nccl:recv 1<-0", "user_annotation", None, "collective_call", "recv"),
    ("nccl:coalesced", "user_annotation", None, "collective_call", "unknown"),
    ("hccl:allgather", "user_annotation", None, "collective_call", "all_gather"),
    ("record_param_comms", "cpu_op", None, "collective_call", "unknown"),
    ("record_param_comms", "cpu_op", {"Collective name": "allreduce"}, "collective_call",
     "all_reduce"),
    ("record_param_comms", "cpu_op", {"Collective name": "init"}, "cpu_op", None),
    ("ProfilerStep#551", "user_annotation", None, "step", None),
    ("torchscale:backward", "user_annotation", None, "phase", None),
    ("torchscale:injected_delay", "user_annotation", None, "cpu_op", None),
    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", None,
     "phase", None),
    ("Optimizer.step#SGD.step", "user_annotation", None, "phase", None),
    ("Optimizer.zero_grad#SGD.zero_grad", "user_annotation", None, "cpu_op", None),
    ("DistributedDataParallel.forward", "user_annotation", None, "phase", None),
    ("FullyShardedDataParallel.forward", "user_annotation", None, "phase", None),
    ("## backward ##", "user_annotation", None, "cpu_op", None),
    ("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", None, "cpu_op", None),
    ("aten::mm", "cpu_op", None, "cpu_op", None),
    ("Memcpy DtoD (Device -> Device)", "gpu_memcpy", None, "memory", None),
    ("Memset (Device)", "gpu_memset", None, "memory", None),
    ("dma_request", "mtia_ccp_events", None, "memory", None),
    ("aten::mul.out-dtype_Float", "mtia_ccp_events", None, "kernel", None),
    ("runFunction - job_prep_and_submit_for_execution", "mtia_runtime", None, "runtime", None),
    ("cudaLaunchKernel", "cuda_runtime", None, "runtime", None),
    ("cuLaunchKernel", "cuda_driver", None, "runtime", None),
    ("volta_sgemm_64x64_nt", "kernel", None, "kernel", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1>)", "kernel", None, "kernel", None),
    ("nccl:all_reduce", "gpu_user_annotation", None, None, None),
    ("train.py(12): forward", "python_function", None, None, None),
    ("PyTorch Profiler (0)", "Trace", None, None, None),
    ("Stream Sync", "cuda_sync", None, None, None),
]
# fmt: on


@pytest.mark.parametrize(("name", "cat", "args", "kind", "op"), REAL_NAMES)
def test_classify_real_names(name: str, cat: str, args: Any, kind: Any, op: Any) -> None:
    cls = classify_event(name, cat, args)
    assert ((None, None) if cls is None else (cls.kind, cls.coll_op)) == (kind, op)


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("allreduce", "all_reduce"),
        ("allreduce_coalesced", "all_reduce"),
        ("_allgather_base", "all_gather"),
        ("allgather", "all_gather"),
        ("allgather_into_tensor_coalesced", "all_gather"),
        ("reduce_scatter_tensor_coalesced", "reduce_scatter"),
        ("_reduce_scatter_base", "reduce_scatter"),
        ("all_to_allv", "all_to_all"),
        ("alltoall_base", "all_to_all"),
        ("broadcast", "broadcast"),
        ("reduce", "reduce"),
        ("gather", "gather"),
        ("scatter", "scatter"),
        ("send", "send"),
        ("recv", "recv"),
        ("barrier", "barrier"),
        ("monitored_barrier_", "barrier"),
        ("batch_isend_irecv", "send_recv"),
        ("coalesced", "unknown"),
    ],
)
def test_normalise_collective_name_args(text: str, op: str) -> None:
    assert normalise_coll_op(text) == op
    assert op in COLL_OPS


def test_phase_and_step_of() -> None:
    assert step_of("ProfilerStep#12") == 12
    assert step_of("ProfilerStep#x") is None
    assert [phase_of(f"torchscale:{p}") for p in PHASES] == list(PHASES)
    assert phase_of("torchscale:injected_delay") is None
    assert phase_of("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__") == "data"
    assert phase_of("Optimizer.step#CombinedOptimizer.step") == "optimizer"
    assert phase_of("autograd::engine::evaluate_function: AddmmBackward0") is None


# -- reading hand-made traces ----------------------------------------------------------------


def test_columns_and_dtypes_follow_the_contract(tmp_path: Path) -> None:
    trace = read_kineto(write_trace(tmp_path / "rank0.json", gloo_events(), dist=GLOO))
    df = trace.events
    assert tuple(df.columns) == EVENT_COLUMNS
    dtypes = {c: str(t) for c, t in df.dtypes.items()}
    assert dtypes == {
        "name": "category", "kind": "category", "ts": "float64", "dur": "float64",
        "tid": "int64", "device_side": "bool", "correlation": "Int64", "step": "Int64",
        "phase": "category", "coll_op": "category", "op_source": "category", "pg": "object",
        "seq": "Int64",
        "nelems": "Int64", "dtype": "object", "group_size": "Int64",
    }  # fmt: skip
    assert list(df["kind"].cat.categories) == list(KINDS)
    assert list(df["phase"].cat.categories) == list(PHASES)
    assert list(df["coll_op"].cat.categories) == list(COLL_OPS)
    assert isinstance(trace, RankTrace)
    assert (trace.rank, trace.rank_source, trace.backend) == (0, "distributedInfo", "gloo")
    assert (trace.device_type, trace.world_size) == ("cpu", 2)
    by_name = df.set_index("name")
    assert by_name.loc["ProfilerStep#3", "step"] == 3
    assert by_name.loc["gloo:all_reduce", "kind"] == "collective"
    assert by_name.loc["gloo:all_reduce", "tid"] == 7
    assert by_name.loc["c10d::allreduce_", "kind"] == "collective_call"
    assert len(df) == 9  # instant and metadata events are not rows
    assert trace.bytes_read == len((tmp_path / "rank0.json").read_bytes())


def test_torchscale_phases_win_over_pytorch_ranges(tmp_path: Path) -> None:
    own = read_kineto(write_trace(tmp_path / "rank0.json", gloo_events(), dist=GLOO)).events
    phases = own[own.kind == "phase"]
    assert set(phases["name"]) == {"torchscale:forward", "torchscale:backward",
                                   "torchscale:optimizer"}  # fmt: skip
    plain = [e for e in gloo_events() if not e["name"].startswith("torchscale:")]
    other = read_kineto(write_trace(tmp_path / "rank1.json", plain, dist=GLOO)).events
    got = other[other.kind == "phase"].set_index("name")["phase"].to_dict()
    assert got == {"DistributedDataParallel.forward": "forward",
                   "Optimizer.step#SGD.step": "optimizer"}  # fmt: skip


def test_int_and_float_timestamps(tmp_path: Path) -> None:
    ints = [ev("aten::mm", ts=1669783687570192, dur=153), ev("aten::add", ts=1669783687570400)]
    floats = [ev("aten::mm", ts=4458676524595.135, dur=294.37)]
    a = read_kineto(write_trace(tmp_path / "rank0.json", ints, dist=GLOO)).events
    b = read_kineto(write_trace(tmp_path / "rank1.json", floats, dist=GLOO)).events
    assert a["ts"].dtype == b["ts"].dtype == np.float64
    assert a["ts"].tolist() == [1669783687570192.0, 1669783687570400.0]
    assert b["ts"].iloc[0] == pytest.approx(4458676524595.135)
    assert b["dur"].iloc[0] == pytest.approx(294.37)


def test_bad_durations_dropped_with_one_note(tmp_path: Path) -> None:
    events = [
        ev("aten::mm", dur=5),
        ev("aten::neg", dur=-0.001),
        ev("aten::nan", dur=float("nan")),  # json.dumps writes NaN, as Python-made traces do
        ev("cudaLaunchKernel", "cuda_runtime", dur=7.45e15),  # CUPTI's "236 years"
        ev("aten::nodur", dur=None),
        ev("aten::nots", ts=None),
        ev("aten::inf", dur=float("inf")),  # json.dumps writes Infinity
        ev("aten::exact_day", dur=86_400e6),
    ]
    trace = read_kineto(write_trace(tmp_path / "rank0.json", events, dist=GLOO))
    assert trace.events["name"].tolist() == ["aten::mm", "aten::exact_day"]
    assert [n for n in trace.notes if n.code == "trace.dropped_events"] == [
        note("trace.dropped_events", count=6)
    ]


def test_keys_written_after_trace_events(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    write_trace(path, gloo_events(), tail={"distributedInfo": {**GLOO, "rank": 3}})
    assert read_header(path) == {
        "distributedInfo": None,
        "deviceProperties": [],
        "baseTimeNanoseconds": None,
    }
    trace = read_kineto(path)
    assert (trace.rank, trace.rank_source, trace.backend) == (3, "distributedInfo", "gloo")


def test_collective_metadata_from_args(tmp_path: Path) -> None:
    meta = {
        "Collective name": "allreduce", "In msg nelems": 2049000, "Out msg nelems": 2049000,
        "Group size": 2, "dtype": "Float", "Process Group Name": "0", "Seq": 7,
        "Process Group Ranks": "[0, 1]",
    }  # fmt: skip
    old = {"Collective name": "broadcast", "In msg nelems": 10, "dtype": "Int",
           "Process Group ID": 3, "Group size": 1}  # fmt: skip
    events = [
        {**ev("record_param_comms", ts=1), "args": meta},
        {**ev("record_param_comms", ts=2), "args": old},
        {**ev("ncclDevKernel_Generic", "kernel", ts=3, tid=20), "args": {**meta, "correlation": 9}},
        {**ev("record_param_comms", ts=4), "args": {"Collective name": "init"}},
        {**ev("cudaLaunchKernel", "cuda_runtime", ts=2.5), "args": {"correlation": 9}},
        {**ev("aten::mm", ts=5), "args": {"dtype": "Float", "In msg nelems": 4}},
    ]
    df = read_kineto(write_trace(tmp_path / "rank0.json", events, dist=GLOO)).events
    rows = df.set_index("ts")
    columns = ["kind", "coll_op", "pg", "seq", "nelems", "dtype", "group_size"]
    assert rows.loc[1.0, columns].tolist() == [
        "collective_call", "all_reduce", "0", 7, 2049000, "Float", 2
    ]  # fmt: skip
    assert rows.loc[2.0, ["coll_op", "pg", "nelems", "dtype"]].tolist() == [
        "broadcast", "3", 10, "Int"
    ]  # fmt: skip
    assert pd.isna(rows.loc[2.0, "seq"])
    assert rows.loc[3.0, ["kind", "coll_op", "pg", "correlation"]].tolist() == [
        "collective", "all_reduce", "0", 9
    ]  # fmt: skip
    assert bool(rows.loc[3.0, "device_side"])
    assert rows.loc[4.0, "kind"] == "cpu_op"  # the ProcessGroup's init record is no collective
    assert rows.loc[2.5, "correlation"] == 9
    assert pd.isna(rows.loc[5.0, "nelems"]) and rows.loc[5.0, "dtype"] is None  # not collective


def test_odd_field_types_do_not_break_reading(tmp_path: Path) -> None:
    events = [
        ev("aten::mm", ts=1),
        {**ev("x", ts=2), "name": 5},  # a number as name
        ev("aten::relu", ts=3, tid="PyTorch Profiler"),  # a string tid
        ev("volta_sgemm_64x64_nt", "kernel", ts=3.5, tid="stream 7 "),  # old GPU stream tid
        {**ev("aten::add", ts=4), "args": ["not", "a", "dict"]},
        {**ev("cudaLaunchKernel", "cuda_runtime", ts=5), "args": {"correlation": None}},
    ]
    df = read_kineto(write_trace(tmp_path / "rank0.json", events, dist=GLOO)).events
    assert df["name"].astype(str).tolist() == [
        "aten::mm", "5", "aten::relu", "volta_sgemm_64x64_nt", "aten::add", "cudaLaunchKernel"
    ]  # fmt: skip
    assert df["tid"].tolist() == [1, 1, -1, 7, 1, 1]
    assert df["correlation"].isna().all()


@pytest.mark.parametrize("indent", [None, 1])
def test_piece_cuts_never_change_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None
) -> None:
    """Tiny pieces, and names and args full of `},` and nested objects: a wrong cut must be
    rejected, never produce a different table."""
    events = []
    for i in range(300):
        events.append(ev(f'weird }},\n  {{"ph": "X"}}, name {i}', ts=i, dur=1))
        events.append(
            {
                **ev("cudaLaunchKernel", "cuda_runtime", ts=i + 0.5),
                "args": {"correlation": i, "nested": [{"a": "},"}, {"b": [1, {}]}]},
            }
        )
    path = write_trace(tmp_path / "rank0.json", events, dist=GLOO, indent=indent,
                       tail={"traceName": "x", "baseTimeNanoseconds": 17})  # fmt: skip
    whole = read_kineto(path)
    monkeypatch.setattr(kineto, "CHUNK", 700)
    pieces = read_kineto(path)
    pd.testing.assert_frame_equal(whole.events, pieces.events)
    assert len(pieces.events) == 600
    assert pieces.base_time_ns == 17  # a key written after traceEvents
    assert pieces.events["correlation"].dropna().tolist() == list(range(300))


def test_gzip_and_plain_give_the_same_table(tmp_path: Path) -> None:
    plain = write_trace(tmp_path / "rank0.json", gloo_events(), dist=GLOO)
    zipped = write_trace(tmp_path / "rank0.json.gz", gloo_events(), dist=GLOO)
    a, b = read_kineto(plain), read_kineto(zipped)
    pd.testing.assert_frame_equal(a.events, b.events)
    assert a.bytes_read == b.bytes_read == plain.stat().st_size


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank3.json", 3),
        ("rank-3.json.gz", 3),
        ("rank_3.trace.json", 3),
        ("RANK12.pt.trace.json.gz", 12),
        ("worker_3.json", 3),
        ("trace.3.pt.trace.json", 3),
        ("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 0),
        ("trace.json", None),
    ],
)
def test_rank_from_file_name(name: str, rank: int | None) -> None:
    assert rank_from_file_name(Path(name)) == rank


def test_rank_without_distributed_info(tmp_path: Path) -> None:
    trace = read_kineto(write_trace(tmp_path / "worker_rank-4.json", gloo_events()))
    assert (trace.rank, trace.rank_source) == (4, "file_name")
    assert note("trace.rank_from_file_name", field="distributedInfo", rank=4) in trace.notes
    given = read_kineto(tmp_path / "worker_rank-4.json", rank_hint=6)
    assert (given.rank, given.rank_source) == (6, "given")
    disagree = read_kineto(write_trace(tmp_path / "r.json", gloo_events(), dist=GLOO), rank_hint=1)
    assert disagree.rank == 0
    assert note("trace.rank_disagrees", rank=0, expected=1) in disagree.notes
    message = read_error(write_trace(tmp_path / "trace.json", gloo_events()))
    assert "no rank" in message and "trace.json" in message


def test_single_process_trace_reads_with_notes(tmp_path: Path) -> None:
    events = [ev("aten::mm", ts=1), ev("aten::add", ts=3)]
    trace = read_kineto(write_trace(tmp_path / "rank0.json", events))
    codes = [n.code for n in trace.notes]
    assert {"trace.no_step_ranges", "trace.no_collectives"} <= set(codes)
    assert "trace.rank_from_file_name" in codes
    assert trace.device_type == "cpu" and trace.world_size is None
    empty = read_kineto(write_trace(tmp_path / "rank1.json", []))
    assert len(empty.events) == 0 and tuple(empty.events.columns) == EVENT_COLUMNS


@pytest.mark.parametrize(
    ("backend", "events", "device"),
    [
        ("gloo", [], "cpu"),
        ("cpu:gloo,cuda:gloo", [], "cpu"),
        ("cpu:gloo,cuda:gloo", [ev("volta_sgemm_64x64_nt", "kernel")], "cuda"),
        ("nccl", [], "cuda"),
        ("mtia:hccl,cpu:gloo", [], "mtia"),
        (None, [ev("ncclKernel_AllReduce_RING_LL_Sum_float", "kernel")], "cuda"),
    ],
)
def test_device_type(tmp_path: Path, backend: str | None, events: list[dict], device: str) -> None:
    dist = {"rank": 0} if backend is None else {"rank": 0, "backend": backend}
    trace = read_kineto(write_trace(tmp_path / "rank0.json", [ev("aten::mm"), *events], dist=dist))
    assert trace.device_type == device


def test_process_groups_and_base_time(tmp_path: Path) -> None:
    pg = [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2, "ranks": [0, 1]}]
    dist = {**GLOO, "pg_count": 1, "pg_config": pg}
    trace = read_kineto(
        write_trace(tmp_path / "rank0.json", gloo_events(), dist=dist,
                    deviceProperties=[{"id": 0, "name": "NVIDIA H100"}],
                    tail={"baseTimeNanoseconds": 1790857026000000000})
    )  # fmt: skip
    assert trace.process_groups == pg
    assert trace.base_time_ns == 1790857026000000000
    assert trace.device_names == ["NVIDIA H100"]
    assert read_header(tmp_path / "rank0.json") == {
        "distributedInfo": dist, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
        "baseTimeNanoseconds": None,
    }  # fmt: skip


# -- bad input: one clear line each ----------------------------------------------------------


def test_bad_inputs_give_one_line_trace_errors(tmp_path: Path) -> None:
    good = write_trace(tmp_path / "good.json", gloo_events(), dist=GLOO)
    text = good.read_text()
    cases = {
        "missing.json": (None, "no such file"),
        "empty.json": ("", "empty file"),
        "analysis.json": (json.dumps({"kind": "torchscale.profile_analysis"}), "no 'traceEvents'"),
        "events_obj.json": (json.dumps({"traceEvents": {}}), "'traceEvents' is not a list"),
        "array.json": (json.dumps([ev("aten::mm")]), "no 'traceEvents'"),
        "garbage.json": ("{not json at all", "invalid JSON"),
        "cut.json": (text[: len(text) // 2], "truncated file"),
        "broken.json": (text.replace('"dur": 20', '"dur": 20 20', 1), "invalid JSON near byte"),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content)
        message = read_error(path)
        assert expected in message, (name, message)
        assert str(path) in message
    (tmp_path / "adir.json").mkdir()
    assert "cannot read" in read_error(tmp_path / "adir.json")


def test_truncated_and_corrupt_gzip(tmp_path: Path) -> None:
    [path] = write_synthetic_traces(tmp_path / "t", ranks=1, steps=4, compress=True)
    data = path.read_bytes()
    cut = tmp_path / "rank0.json.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    assert "truncated gzip" in read_error(cut)
    bad = tmp_path / "rank1.json.gz"
    bad.write_bytes(data[:20] + bytes(200) + data[220:])
    assert "gzip" in read_error(bad)


# -- discovery -------------------------------------------------------------------------------


def _job_dir(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    (job / "sub" / "deeper").mkdir(parents=True)
    write_trace(job / "rank0.trace.json", gloo_events(), dist={**GLOO, "rank": 0})
    write_trace(job / "sub" / "host1.pt.trace.json.gz", gloo_events(), dist={**GLOO, "rank": 1})
    write_trace(job / "sub" / "deeper" / "rank2.json", gloo_events(), dist={**GLOO, "rank": 2})
    (job / "analysis.json").write_text(json.dumps({"kind": "torchscale.profile_analysis"}))
    (job / "notes.txt").write_text("not json")
    return job


def test_find_traces_one_level_and_sniffed(tmp_path: Path) -> None:
    job = _job_dir(tmp_path)
    assert find_traces(job) == [job / "rank0.trace.json", job / "sub" / "host1.pt.trace.json.gz"]
    assert find_traces(job / "rank0.trace.json") == [job / "rank0.trace.json"]


def test_read_rank_traces_yields_one_rank_at_a_time(tmp_path: Path) -> None:
    job = _job_dir(tmp_path)
    calls: list[Path] = []

    def reader(path: Path) -> RankTrace:
        calls.append(path)
        return read_kineto(path)

    traces = read_rank_traces(job, reader)
    assert isinstance(traces, collections.abc.Iterator) and calls == []
    first = next(traces)
    assert first.rank == 0 and len(calls) == 1
    assert [t.rank for t in traces] == [1]


def test_discovery_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such directory"):
        find_traces(tmp_path / "nope")
    with pytest.raises(TraceError, match="no such directory"):
        read_rank_traces(tmp_path / "nope")
    assert find_traces(tmp_path) == []  # a query: the caller may look for nsys exports next
    with pytest.raises(TraceError, match="no trace files"):
        read_rank_traces(tmp_path)  # empty directory
    (tmp_path / "analysis.json").write_text("{}")
    with pytest.raises(TraceError, match="not a trace file"):
        find_traces(tmp_path / "analysis.json")
    with pytest.raises(TraceError, match="no trace files"):
        list(read_rank_traces(tmp_path))


def test_duplicate_ranks_from_headers_fail_before_reading(tmp_path: Path) -> None:
    write_trace(tmp_path / "a.json", gloo_events(), dist={**GLOO, "rank": 1})
    write_trace(tmp_path / "b.json.gz", gloo_events(), dist={**GLOO, "rank": 1})
    calls: list[Path] = []

    def reader(path: Path) -> RankTrace:
        calls.append(path)
        return read_kineto(path)

    with pytest.raises(TraceError) as info:
        read_rank_traces(tmp_path, reader)
    assert (
        str(info.value)
        == f"rank 1 appears twice: {tmp_path / 'a.json'} and {tmp_path / 'b.json.gz'}"
    )
    assert calls == []


def test_duplicate_ranks_found_only_when_read(tmp_path: Path) -> None:
    # no distributedInfo at the front and no rank in the names: the reader says rank 5 twice
    write_trace(tmp_path / "a.json", gloo_events())
    write_trace(tmp_path / "b.json", gloo_events())
    traces = read_rank_traces(tmp_path, lambda p: read_kineto(p, rank_hint=5))
    assert next(traces).rank == 5
    with pytest.raises(TraceError, match=r"rank 5 appears twice: .*a\.json and .*b\.json"):
        next(traces)


def test_truncated_gzip_in_a_directory(tmp_path: Path) -> None:
    (tmp_path / "rank0.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [')[:12])
    with pytest.raises(TraceError, match="truncated gzip"):
        list(read_rank_traces(tmp_path))


# -- synthetic traces ------------------------------------------------------------------------


def test_synthetic_gpu_traces_plant_a_straggler(tmp_path: Path) -> None:
    skew = [0.0, 1234.5]
    paths = write_synthetic_traces(
        tmp_path, ranks=2, steps=3, straggler=1, delay_us=5000.0, phase="backward",
        skew_us=skew, events_per_step=120, buckets=4,
    )  # fmt: skip
    traces = list(read_rank_traces(tmp_path))
    assert [t.rank for t in traces] == [0, 1] and [t.path for t in traces] == paths
    ends = []
    for trace in traces:
        df = trace.events
        assert trace.device_type == "cuda" and trace.world_size == 2 and not trace.notes
        assert df.loc[df.kind == "step", "step"].tolist() == [1, 2, 3]
        assert df.loc[df.kind == "phase", "phase"].value_counts().to_dict() == dict.fromkeys(
            PHASES, 3
        )
        coll = df[df.kind == "collective"].sort_values("ts")
        assert len(coll) == 12 and set(coll["coll_op"]) == {"all_reduce"}
        assert coll["seq"].tolist() == list(range(1, 13))
        assert set(coll["pg"]) == {"0"} and set(coll["group_size"]) == {2}
        assert coll["correlation"].notna().all() and coll["device_side"].all()
        kernels = df[df.kind == "kernel"]
        launches = df[(df.kind == "runtime")]
        assert set(kernels["correlation"]) <= set(launches["correlation"])
        delay = df[df.name == "torchscale:injected_delay"]
        assert len(delay) == (3 if trace.rank == 1 else 0)
        assert (delay["kind"] == "cpu_op").all() and (delay["dur"] == 5000.0).all()
        ends.append((coll["ts"] + coll["dur"]).to_numpy())
        waits = coll["dur"].to_numpy()
        if trace.rank == 0:  # waits for the slow rank in the first bucket of each step
            first_bucket = waits[::4]
        else:
            first_bucket_slow = waits[::4]
    # collectives end together: end times differ by exactly the clock skew
    np.testing.assert_allclose(ends[1] - ends[0], skew[1], atol=0.01)
    assert (first_bucket - first_bucket_slow > 4000).all()


def test_synthetic_cpu_traces_and_gzip(tmp_path: Path) -> None:
    plain = write_synthetic_traces(tmp_path / "p", ranks=2, steps=2, gpu=False, seed=3)
    zipped = write_synthetic_traces(tmp_path / "z", ranks=2, steps=2, gpu=False, seed=3,
                                    compress=True)  # fmt: skip
    assert [p.name for p in zipped] == ["rank0.trace.json.gz", "rank1.trace.json.gz"]
    a, b = read_kineto(plain[1]), read_kineto(zipped[1])
    pd.testing.assert_frame_equal(a.events, b.events)
    df = a.events
    assert a.device_type == "cpu" and a.backend == "gloo"
    assert not df["device_side"].any()
    gloo = df[df.kind == "collective"]
    assert set(gloo["name"]) == {"gloo:all_reduce"} and gloo["tid"].nunique() == 2


def test_synthetic_rejects_bad_arguments(tmp_path: Path) -> None:
    for kwargs in [{"ranks": 0}, {"phase": "warmup"}, {"straggler": 2}, {"skew_us": [1.0]}]:
        with pytest.raises(ValueError):
            write_synthetic_traces(tmp_path, **{"ranks": 2, "steps": 1, **kwargs})


# -- the real traces of /work/shared/traces --------------------------------------------------

REAL = {
    # folder: (rank(s), device_type, world_size, expected collective kernel ops)
    "df_index_resolver": ([1], "cuda", 2, {"all_reduce"}),
    # the old generic kernel (SendRecv_RING_SIMPLE) ran these, by the launches' metadata
    "trace_filter": ([0, 1], "cuda", 128, {"all_reduce", "all_gather", "all_to_all"}),
    "nccl_parser_config": ([0], "cuda", 2, {"all_reduce", "broadcast"}),
    "ns_resolution_trace": ([0], "cuda", 1, set()),
    "negative_queue_length_values_check": (
        [0],
        "cuda",
        16,
        {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "unknown"},
    ),
    "mtia_trace_single_rank": ([0], "mtia", 1, set()),
}
_CACHE: dict[str, list[RankTrace]] = {}


def _real(folder: str) -> list[RankTrace]:
    directory = SHARED_TRACES / folder
    if not directory.is_dir():
        pytest.skip(f"{directory} is absent")
    if folder not in _CACHE:
        _CACHE[folder] = list(read_rank_traces(directory))
    return _CACHE[folder]


@pytest.mark.parametrize("folder", sorted(REAL))
def test_real_traces(folder: str) -> None:
    ranks, device, world, ops = REAL[folder]
    traces = _real(folder)
    assert [t.rank for t in traces] == ranks
    for trace in traces:
        df = trace.events
        assert trace.rank_source == "distributedInfo"
        assert (trace.device_type, trace.world_size) == (device, world)
        assert len(df) > 1000 and (df["dur"] >= 0).all()
        comm_kernels = df[df["name"].astype(str).str.contains("nccl", case=False)
                          & df["device_side"]]  # fmt: skip
        assert (comm_kernels["kind"] == "collective").all()
        assert set(comm_kernels["coll_op"].astype(str)) == ops
        assert (df["kind"] == "step").any()


def test_real_nccl_metadata_and_float_timestamps() -> None:
    [trace] = _real("nccl_parser_config")
    df = trace.events
    records = df[df["name"] == "record_param_comms"]
    # the 6 others are "wait" records: a thread blocked until a collective is done
    assert records["kind"].value_counts()[["collective_call", "comm_wait"]].tolist() == [21, 6]
    calls = records[records["kind"] == "collective_call"]  # the 6 others are "wait" records
    assert calls["nelems"].notna().all() and (calls["nelems"] > 0).all()
    assert set(calls["dtype"]) == {"Float", "Long"} and set(calls["pg"]) == {"0"}
    assert set(calls["group_size"]) == {2}
    assert set(calls["coll_op"].astype(str)) == {"all_reduce", "broadcast"}
    kernels = df[df["kind"] == "collective"]
    assert len(kernels) == 21 and kernels["nelems"].notna().all()
    assert (df["ts"] % 1 != 0).any()  # float (sub-microsecond) timestamps
    assert trace.base_time_ns == 1711964646000000000
    assert trace.process_groups[0]["ranks"] == [0, 1]


def test_real_int_timestamps_and_gpu_rows() -> None:
    [trace] = _real("df_index_resolver")
    df = trace.events
    assert (df["ts"] % 1 == 0).all()  # an old trace: integer microseconds
    assert (df["kind"] == "collective").sum() == 2020
    assert df.loc[df["kind"].isin(["kernel", "memory", "runtime"]), "correlation"].notna().all()
    assert df["step"].dropna().tolist() == [2, 3, 4, 5, 6]


def test_real_mtia_reads() -> None:
    [trace] = _real("mtia_trace_single_rank")
    df = trace.events
    assert trace.backend == "mtia:hccl,cpu:gloo" and len(trace.process_groups) == 2
    assert (df.loc[df["name"] == "dma_request", "kind"] == "memory").all()
    assert set(df.loc[df["kind"] == "collective", "name"]) == {"gloo:barrier"}
