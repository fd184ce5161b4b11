"""Communication kernels get their op from the launch's metadata first, their name second.

The real multi-rank traces of /work/shared/traces (older `ncclKernel_*` names) are read in
place and skipped where that folder is absent; a synthetic trace in the same Kineto format
carries NCCL >= 2.19's names (no kept trace has them, and one GPU cannot make one).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.offline.test_trace_reader import SHARED_TRACES, ev, write_trace
from torchscale.contracts.wording import say
from torchscale.offline.traces.classify import kernel_name_op, ops_agree
from torchscale.offline.traces.kineto import read_kineto
from torchscale.offline.traces.rank_trace import UNKNOWN_OP

# the kept traces with NCCL kernels: folder -> NCCL kernels whose name and metadata both say
# an op, and kernels no metadata links to (no runtime launch row with their correlation)
REAL = {
    "df_index_resolver": (2020, 0),
    "nccl_parser_config": (21, 0),
    "trace_filter": (0, 0),
    "negative_queue_length_values_check": (0, 5),
}
OLD_GENERIC = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"
NCCL = {"backend": "nccl", "rank": 0, "world_size": 2}


def _files(folder: str) -> list[Path]:
    directory = SHARED_TRACES / folder
    if not directory.is_dir():
        pytest.skip(f"{directory} is absent")
    return sorted(directory.glob("*.json.gz"))


def _nccl_kernels(events: pd.DataFrame) -> pd.DataFrame:
    names = events["name"].astype(str)
    return events[events["device_side"] & names.str.contains("nccl", case=False)]


def _both(kernels: pd.DataFrame) -> tuple[int, list[tuple[str, str]]]:
    """Kernels whose metadata and name both say an op, and the (name op, op) pairs that
    disagree among them."""
    meta = kernels[kernels["op_source"] == "metadata"]
    said = [kernel_name_op(str(n)) for n in meta["name"]]
    pairs = [(s, str(op)) for s, op in zip(said, meta["coll_op"], strict=True) if s != UNKNOWN_OP]
    return len(pairs), [(s, op) for s, op in pairs if not ops_agree(s, op)]


@pytest.mark.parametrize("folder", sorted(REAL))
def test_real_traces_metadata_and_name_agree(folder: str) -> None:
    both_expected, unlinked = REAL[folder]
    both = 0
    for path in _files(folder):
        trace = read_kineto(path)
        kernels = _nccl_kernels(trace.events)
        assert len(kernels) > 0 and (kernels["kind"] == "collective").all()
        n, disagree = _both(kernels)
        both += n
        assert disagree == []
        assert not any(n.code == "trace.kernel_name_disagrees" for n in trace.notes)
        by_name = kernels[kernels["op_source"] == "name"]
        assert len(by_name) == unlinked
        assert (by_name["correlation"].isna() | ~by_name["correlation"].isin(
            trace.events.loc[trace.events["kind"] == "runtime", "correlation"]
        )).all()  # fmt: skip
    assert both == both_expected


def test_real_traces_count_enough_kernels() -> None:
    """The agreement above is checked on thousands of kernels, not on none."""
    both = sum(
        _both(_nccl_kernels(read_kineto(p).events))[0]
        for folder in ("df_index_resolver", "nccl_parser_config")
        for p in _files(folder)
    )
    assert both == 2041


def test_the_old_send_recv_kernel_is_generic_in_real_traces() -> None:
    """Why its name says no op: NCCL < 2.19 ran every op without a kernel of its own in it,
    and the launches' metadata shows it running all_reduce, all_gather and reduce_scatter."""
    ops: set[str] = set()
    for folder in ("trace_filter", "negative_queue_length_values_check"):
        for path in _files(folder):
            k = _nccl_kernels(read_kineto(path).events)
            old = k[k["name"].astype(str).str.startswith(OLD_GENERIC)]
            ops |= set(old.loc[old["op_source"] == "metadata", "coll_op"].astype(str))
    assert {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"} <= ops


def test_the_launch_link_alone_finds_what_the_kernel_args_say(tmp_path: Path) -> None:
    """nccl_parser_config writes "Collective name" on the kernels too: without it, the link
    kernel -> runtime launch -> record_param_comms finds the same op for every kernel."""
    [path] = _files("nccl_parser_config")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    own = read_kineto(path).events
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e.get("args", {}).pop("Collective name", None)
    stripped = tmp_path / "rank0.json"
    stripped.write_text(json.dumps(doc))
    linked = read_kineto(stripped).events
    a, b = _nccl_kernels(own), _nccl_kernels(linked)
    assert len(a) == len(b) == 21
    assert (b["op_source"] == "metadata").all()
    assert a["coll_op"].astype(str).tolist() == b["coll_op"].astype(str).tolist()


# -- NCCL >= 2.19's names, synthetic ---------------------------------------------------------


def _launch(name: str, ts: float, corr: int, tid: int = 1) -> dict[str, Any]:
    return ev(name, "cuda_runtime", ts=ts, dur=2, tid=tid, correlation=corr)


def _kernel(name: str, ts: float, corr: int) -> dict[str, Any]:
    return ev(name, "kernel", ts=ts, dur=20, tid=7, correlation=corr, stream=7)


def _rpc(op: str, ts: float, dur: float) -> dict[str, Any]:
    return ev("record_param_comms", ts=ts, dur=dur, Collective_name=op, Group_size=2,
              dtype="Float", In_msg_nelems=1024, Process_Group_Name="0")  # fmt: skip


def new_names_events() -> list[dict[str, Any]]:
    """One step: the collectives PyTorch >= 2.2 with NCCL >= 2.19 launches, each under its
    c10d op, record_param_comms and `nccl:<op>` range, as Kineto nests them."""
    return [
        ev("ProfilerStep#1", "user_annotation", ts=0, dur=1000),
        # 1. all_gather in the generic kernel: the op comes from the metadata
        ev("c10d::_allgather_base_", ts=10, dur=60),
        _rpc("_allgather_base", 11, 50),
        ev("nccl:_all_gather_base", "user_annotation", ts=12, dur=40),
        _launch("cudaLaunchKernelExC", 20, corr=101),
        _kernel("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 100, corr=101),
        # 2. a named kernel whose metadata agrees
        ev("c10d::allreduce_", ts=200, dur=60),
        _rpc("allreduce", 201, 50),
        _launch("cudaLaunchKernelExC", 210, corr=102),
        _kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            300,
            corr=102,
        ),
        # 3. a name the metadata contradicts: the metadata wins, the disagreement is noted
        _rpc("reduce_scatter_tensor_coalesced", 400, 50),
        _launch("cudaLaunchKernelExC", 410, corr=103),
        _kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 420, corr=103),
        # 4. all_to_all runs in the SendRecv kernel: agreement, not a disagreement. The short
        # record_param_comms (as older PyTorch wrote it) ends before the launch, so the
        # enclosing c10d op names it
        ev("c10d::alltoall_base_", ts=500, dur=60),
        _rpc("all_to_allv", 501, 2),
        _launch("cudaLaunchKernel", 520, corr=104),
        _kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 600, corr=104),
        # 5. no launch row: by name; 6. launched outside every call: by name ("unknown")
        _kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 700, corr=105),
        _launch("cudaLaunchKernel", 750, corr=106),
        _kernel("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", 800, corr=106),
        # 7. another thread's call does not enclose this thread's launch
        ev("c10d::broadcast_", ts=880, dur=60, tid=2),
        _launch("cudaLaunchKernel", 900, corr=107, tid=1),
        _kernel("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 950, 107),
    ]


def test_new_names_get_their_op_from_metadata_first(tmp_path: Path) -> None:
    trace = read_kineto(write_trace(tmp_path / "rank0.json", new_names_events(), dist=NCCL))
    k = trace.events[trace.events["kind"] == "collective"].sort_values("ts")
    assert k["device_side"].all()
    got = list(zip(k["coll_op"].astype(str), k["op_source"].astype(str), strict=True))
    assert got == [
        ("all_gather", "metadata"),
        ("all_reduce", "metadata"),
        ("reduce_scatter", "metadata"),
        ("all_to_all", "metadata"),
        ("reduce_scatter", "name"),
        ("unknown", "name"),
        ("broadcast", "name"),
    ]
    [found] = [n for n in trace.notes if n.code == "trace.kernel_name_disagrees"]
    assert found.figures == {"count": 1, "ops": [["all_reduce", "reduce_scatter", 1]]}
    assert "named all_reduce, launched as reduce_scatter (1)" in say(found)


def test_host_rows_say_where_their_op_came_from(tmp_path: Path) -> None:
    df = read_kineto(write_trace(tmp_path / "rank0.json", new_names_events(), dist=NCCL)).events
    source = df.drop_duplicates("name").set_index("name")["op_source"].astype(object)
    assert source["record_param_comms"] == "metadata"
    assert source["c10d::allreduce_"] == "name"
    assert pd.isna(source["ProfilerStep#1"]) and pd.isna(source["cudaLaunchKernel"])


def test_agreement_rule() -> None:
    assert ops_agree("all_reduce", "all_reduce")
    assert ops_agree("send_recv", "all_to_all") and ops_agree("send_recv", "send")
    assert ops_agree("all_reduce", "barrier")
    assert not ops_agree("all_reduce", "reduce_scatter")
    assert not ops_agree("send_recv", "all_reduce")
    assert kernel_name_op(OLD_GENERIC + "(ncclDevComm*, unsigned long, ncclWork*)") == UNKNOWN_OP
    assert kernel_name_op("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)") == (
        UNKNOWN_OP
    )
