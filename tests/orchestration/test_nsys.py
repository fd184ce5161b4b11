"""Nsight Systems: the SQLite reader on small exports built here (the real schema subset, as
nsys 2022.4.2.1 writes it), the argv/env builders, and one real 2-rank CPU capture end to end
(skipped, with the reason, where nsys or the `nvtx` package cannot be had)."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.processes import kill_mentioning
from torchscale.contracts.errors import LaunchError, TraceError
from torchscale.contracts.wording.profile import note
from torchscale.offline.traces.nsys_sqlite import read_nsys_sqlite
from torchscale.offline.traces.rank_trace import EVENT_COLUMNS, KINDS
from torchscale.orchestration.launch.torchrun import torchrun_command
from torchscale.orchestration.profiling import nsys as nsys_module
from torchscale.orchestration.profiling.nsys import (
    REDACTED,
    NsysInstall,
    expect_report,
    export_sqlite,
    find_nsys,
    nsys_profile_argv,
    nsys_unavailable_reason,
    parse_nsys_version,
    report_path,
    wrap_launch,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

# Tables and columns exactly as `nsys export --type sqlite --lazy=false` (2022.4.2.1) writes
# them (read back with PRAGMA table_info from a real capture; comments and unused tables left out)
SCHEMA = {
    "EXPORT_META_DATA": "name TEXT NOT NULL, value TEXT",
    "StringIds": "id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL",
    "PROCESSES": "globalPid INTEGER, pid INTEGER, name TEXT",
    "ThreadNames": "nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER",
    "NVTX_EVENTS": "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
    "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
    "endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, "
    "int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, "
    "floatValue REAL, jsonTextId INTEGER, jsonText TEXT",
    "OSRT_API": "start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, "
    "globalTid INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, "
    "nestingLevel INTEGER, callchainId INTEGER NOT NULL",
    "CUPTI_ACTIVITY_KIND_KERNEL": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
    "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, "
    "shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, "
    "registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, "
    "gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, "
    "blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, "
    "dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, "
    "localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, "
    "graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, "
    "nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER",
    "CUPTI_ACTIVITY_KIND_MEMCPY": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
    "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, "
    "copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, "
    "srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, "
    "migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER",
    "TARGET_INFO_SESSION_START_TIME": "utcEpochNs INTEGER, utcTime TEXT, localTime TEXT",
    "TARGET_INFO_SYSTEM_ENV": "globalVid INTEGER NOT NULL, devStateName TEXT NOT NULL, "
    "name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL",
}
META_3 = {
    "EXPORT_PRODUCT_NAME": "NVIDIA Nsight Systems",
    "EXPORT_PRODUCT_VERSION": "2022.4.2.1",
    "EXPORT_SCHEMA_VERSION": "3.0.0",
    "EXPORT_SCHEMA_VERSION_MAJOR": "3",
    "EXPORT_SCHEMA_VERSION_MINOR": "0",
    "EXPORT_SCHEMA_VERSION_MICRO": "0",
}
HOST = 1 << 48  # the host id bits nsys sets above pid << 24
SESSION_START_NS = 1_795_337_010_505_235_141
MS = 1_000_000  # ns


def gtid(pid: int, tid: int | None = None) -> int:
    return HOST | (pid << 24) | (pid if tid is None else tid)


def gpid(pid: int) -> int:
    return HOST | (pid << 24)


class Export:
    """A small nsys-shaped SQLite: strings interned in StringIds, NOT NULL columns defaulted."""

    def __init__(self, path: Path, meta: dict[str, str] | None = None) -> None:
        self.path = path
        self.con = sqlite3.connect(path)
        for table, columns in SCHEMA.items():
            self.con.execute(f"CREATE TABLE {table} ({columns})")
        self.not_null = {
            t: [c.split()[0] for c in cols.split(", ") if "NOT NULL" in c]
            for t, cols in SCHEMA.items()
        }
        self.strings: dict[str, int] = {}
        for name, value in (META_3 if meta is None else meta).items():
            self.insert("EXPORT_META_DATA", name=name, value=value)
        self.insert("TARGET_INFO_SESSION_START_TIME", utcEpochNs=SESSION_START_NS)

    def sid(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = len(self.strings) + 1
            self.insert("StringIds", id=self.strings[text], value=text)
        return self.strings[text]

    def insert(self, table: str, **values: object) -> None:
        row = {c: 0 for c in self.not_null[table]} | values
        names = ", ".join(f'"{k}"' for k in row)
        marks = ", ".join("?" for _ in row)
        self.con.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(row.values()))

    def process(self, pid: int, name: str = "python") -> None:
        self.insert("PROCESSES", globalPid=gpid(pid), pid=pid, name=name)

    def mark(self, pid: int, text: str, at: int) -> None:
        self.insert(
            "NVTX_EVENTS", start=at, eventType=34, textId=self.sid(text), globalTid=gtid(pid)
        )

    def push_pop(
        self, pid: int, text: str, start: int, end: int | None, tid: int | None = None
    ) -> None:
        self.insert(
            "NVTX_EVENTS",
            start=start,
            end=end,
            eventType=59,
            textId=self.sid(text),
            globalTid=gtid(pid, tid),
        )

    def start_end(self, pid: int, text: str, start: int, end: int, range_id: int = 1) -> None:
        # inline text (not registered): the reader must read both `text` and `textId`
        self.insert(
            "NVTX_EVENTS",
            start=start,
            end=end,
            eventType=60,
            rangeId=range_id,
            text=text,
            globalTid=gtid(pid),
        )

    def osrt(self, pid: int, name: str, start: int, end: int, tid: int | None = None) -> None:
        self.insert(
            "OSRT_API",
            start=start,
            end=end,
            eventClass=27,
            globalTid=gtid(pid, tid),
            nameId=self.sid(name),
            nestingLevel=0,
        )

    def kernel(self, pid: int, name: str, start: int, end: int, corr: int, stream: int = 7) -> None:
        self.insert(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            start=start,
            end=end,
            deviceId=0,
            streamId=stream,
            correlationId=corr,
            globalPid=gpid(pid),
            demangledName=self.sid(name),
            shortName=self.sid(name.split("(")[0]),
        )

    def runtime(self, pid: int, name: str, start: int, end: int, corr: int) -> None:
        self.insert(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            start=start,
            end=end,
            eventClass=1,
            globalTid=gtid(pid),
            correlationId=corr,
            nameId=self.sid(name),
        )

    def step(self, pid: int, n: int, start: int, backward_ms: float, wait_ms: float) -> int:
        """One training step on `pid`'s main thread: data 1 ms, forward 3 ms, backward, a
        blocking wait (the all_reduce), optimizer 2 ms; returns the step's end."""
        t = start
        data_end = t + 1 * MS
        fwd_end = data_end + 3 * MS
        bwd_end = fwd_end + int(backward_ms * MS)
        wait_end = bwd_end + int(wait_ms * MS)
        opt_end = wait_end + 2 * MS
        self.start_end(pid, f"ProfilerStep#{n}", t, opt_end, range_id=n + 1)
        self.push_pop(pid, "torchscale:data", t, data_end)
        self.push_pop(pid, "torchscale:forward", data_end, fwd_end)
        self.push_pop(pid, "torchscale:backward", fwd_end, bwd_end)
        self.push_pop(pid, "torchscale:optimizer", wait_end, opt_end)
        self.osrt(pid, "pthread_cond_wait", bwd_end + 10_000, wait_end - 10_000)
        return opt_end

    def close(self) -> Path:
        self.con.commit()
        self.con.close()
        return self.path


def two_rank_export(path: Path, *, marks: bool = True, delay_ms: float = 50.0) -> Path:
    """pids 200 (rank 1, slow backward) and 100 (rank 0); marks optional."""
    ex = Export(path)
    ex.process(100)
    ex.process(200)
    ex.process(50, "python")  # the torchrun launcher: no NVTX, not a worker
    ex.osrt(50, "epoll_wait", 0, 900 * MS)
    if marks:
        ex.mark(200, "torchscale:rank=1 world_size=2 backend=gloo", 5 * MS)
        ex.mark(100, "torchscale:rank=0 world_size=2 backend=gloo", 6 * MS)
    t0 = t1 = 10 * MS
    for n in range(3):
        # rank 1 is late by delay_ms in backward; rank 0 waits that long in the all_reduce
        end1 = ex.step(200, n, t1, backward_ms=5 + delay_ms, wait_ms=1)
        ex.push_pop(200, "torchscale:injected_delay", t1 + 5 * MS, t1 + int((5 + delay_ms) * MS))
        end0 = ex.step(100, n, t0, backward_ms=5, wait_ms=1 + delay_ms)
        t0, t1 = end0, end1
    return ex.close()


def by_rank(path: Path) -> dict[int, pd.DataFrame]:
    return {t.rank: t.events for t in read_nsys_sqlite(path)}


# ---------------------------------------------------------------------------------- reader


def test_reads_one_rank_trace_per_worker_with_the_contract_columns(tmp_path: Path) -> None:
    traces = read_nsys_sqlite(two_rank_export(tmp_path / "r.sqlite"))
    assert [t.rank for t in traces] == [0, 1]
    for t in traces:
        assert tuple(t.events.columns) == EVENT_COLUMNS
        assert set(t.events["kind"].astype(str)) <= set(KINDS)
        assert t.source_format == "nsys"
        assert t.device_type == "cpu"
        assert t.world_size == 2 and t.backend == "gloo"
        assert t.base_time_ns == SESSION_START_NS
        assert t.rank_source == "nvtx_mark"
        assert any(n.code == "trace.nsys_rank_mark" for n in t.notes)
        assert t.events["ts"].is_monotonic_increasing
        assert str(t.events["ts"].dtype) == "float64"
        assert str(t.events["correlation"].dtype) == "Int64"
    # rank 1 is pid 200: the mark wins over the pid order
    assert traces[1].notes[0].figure("process") == "pid 200 (python)"


def test_steps_phases_and_times_in_microseconds(tmp_path: Path) -> None:
    ev = by_rank(two_rank_export(tmp_path / "r.sqlite"))
    steps = ev[0][ev[0]["kind"] == "step"]
    assert list(steps["step"]) == [0, 1, 2]
    assert list(steps["name"].astype(str)) == ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
    assert steps["ts"].iloc[0] == pytest.approx(10_000.0)  # 10 ms after the session start, in us
    assert steps["dur"].iloc[0] == pytest.approx(1_000 + 3_000 + 5_000 + 51_000 + 2_000)
    phases = ev[1][ev[1]["kind"] == "phase"]
    assert set(phases["phase"].astype(str)) == {"data", "forward", "backward", "optimizer"}
    back = phases[phases["phase"] == "backward"]["dur"]
    assert back.tolist() == pytest.approx([55_000.0] * 3)
    delay = ev[1][ev[1]["name"] == "torchscale:injected_delay"]
    assert list(delay["kind"].astype(str)) == ["cpu_op"] * 3
    assert delay["dur"].tolist() == pytest.approx([50_000.0] * 3)
    assert (ev[0]["name"] == "torchscale:injected_delay").sum() == 0


def test_nested_push_pop_ranges_keep_their_own_extent(tmp_path: Path) -> None:
    ex = Export(tmp_path / "n.sqlite")
    ex.process(300)
    ex.mark(300, "torchscale:rank=0", 0)
    ex.start_end(300, "ProfilerStep#7", 0, 100 * MS)
    ex.push_pop(300, "torchscale:backward", 10 * MS, 90 * MS)
    ex.push_pop(300, "torchscale:injected_delay", 20 * MS, 70 * MS)  # nested in backward
    ex.push_pop(300, "aten::mm", 75 * MS, 80 * MS)  # nested too
    ex.push_pop(300, "Optimizer.step#SGD.step", 90 * MS, 95 * MS)  # PyTorch's own range
    ex.push_pop(300, "my user range", 0, 100 * MS)  # a user range: cpu_op, as in Kineto
    ex.push_pop(300, "torchscale:forward", 95 * MS, None)  # never popped
    (trace,) = read_nsys_sqlite(ex.close())
    ev = trace.events.set_index("name")
    assert ev.loc["ProfilerStep#7", "step"] == 7
    assert ev.loc["torchscale:backward", "dur"] == pytest.approx(80_000.0)
    assert ev.loc["torchscale:injected_delay", "ts"] == pytest.approx(20_000.0)
    assert ev.loc["torchscale:injected_delay", "dur"] == pytest.approx(50_000.0)
    assert ev.loc["aten::mm", "kind"] == "cpu_op"
    assert ev.loc["Optimizer.step#SGD.step", "phase"] == "optimizer"
    assert ev.loc["my user range", "kind"] == "cpu_op"
    assert "torchscale:forward" not in ev.index
    assert note("trace.nsys_unclosed", count=1) in trace.notes


def test_missing_rank_marks_fall_back_to_process_order(tmp_path: Path) -> None:
    traces = read_nsys_sqlite(two_rank_export(tmp_path / "r.sqlite", marks=False))
    assert [t.rank for t in traces] == [0, 1]
    assert all(t.rank_source == "process_order" for t in traces)
    assert [t.notes[0].figure("process") for t in traces] == [
        "pid 100 (python)",
        "pid 200 (python)",
    ]
    assert all(any(n.code == "trace.nsys_process_order" for n in t.notes) for t in traces)
    assert traces[0].world_size is None


def test_some_marks_missing_unmarked_get_the_free_ranks(tmp_path: Path) -> None:
    ex = Export(tmp_path / "m.sqlite")
    for pid in (10, 20, 30):
        ex.process(pid)
        ex.start_end(pid, "ProfilerStep#0", 0, 5 * MS)
    ex.mark(10, "torchscale:rank=1", 0)
    traces = read_nsys_sqlite(ex.close())
    got = {t.rank: (t.rank_source, t.notes[0].figure("process")) for t in traces}
    assert got == {
        1: ("nvtx_mark", "pid 10 (python)"),
        0: ("process_order", "pid 20 (python)"),
        2: ("process_order", "pid 30 (python)"),
    }


def test_two_processes_marking_one_rank_is_an_error(tmp_path: Path) -> None:
    ex = Export(tmp_path / "d.sqlite")
    for pid in (10, 20):
        ex.mark(pid, "torchscale:rank=0", 0)
    with pytest.raises(TraceError, match="both mark rank 0"):
        read_nsys_sqlite(ex.close())


def test_osrt_blocking_waits_of_the_training_thread_only(tmp_path: Path) -> None:
    ex = Export(tmp_path / "o.sqlite")
    ex.process(100)
    ex.mark(100, "torchscale:rank=0", 0)
    ex.start_end(100, "ProfilerStep#0", 10 * MS, 60 * MS)
    ex.push_pop(100, "torchscale:backward", 10 * MS, 20 * MS)
    ex.osrt(100, "pthread_cond_wait", 21 * MS, 50 * MS)  # kept: main thread, in the step
    ex.osrt(100, "pthread_cond_wait", 22 * MS, 49 * MS)  # nested in the one above: dropped
    ex.osrt(100, "pthread_cond_wait", 1 * MS, 5 * MS)  # before the first step: dropped
    ex.osrt(100, "mmap64", 30 * MS, 31 * MS)  # not a wait: dropped
    ex.osrt(100, "clock_nanosleep", 12 * MS, 18 * MS)  # a sleep is not a wait for peers
    ex.osrt(100, "pthread_cond_timedwait", 25 * MS, 45 * MS, tid=101)  # gloo thread: dropped
    ex.osrt(999, "poll", 10 * MS, 50 * MS)  # another process
    (trace,) = read_nsys_sqlite(ex.close())
    rt = trace.events[trace.events["kind"] == "runtime"]
    assert list(rt["name"].astype(str)) == ["osrt:pthread_cond_wait"]
    assert rt["ts"].iloc[0] == pytest.approx(21_000.0)
    assert rt["dur"].iloc[0] == pytest.approx(29_000.0)
    assert rt["tid"].iloc[0] == 100
    assert rt["correlation"].isna().all()
    (none,) = read_nsys_sqlite(ex.path, osrt_waits=False)
    assert (none.events["kind"] == "runtime").sum() == 0


def test_cuda_kernels_nccl_collectives_and_runtime(tmp_path: Path) -> None:
    ex = Export(tmp_path / "g.sqlite")
    ex.process(400)
    ex.mark(400, "torchscale:rank=0", 0)
    ex.kernel(
        400,
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        10 * MS,
        12 * MS,
        corr=5,
        stream=13,
    )
    ex.kernel(
        400, "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", 12 * MS, 13 * MS, corr=6
    )
    ex.kernel(400, "void at::native::vectorized_elementwise_kernel<4>(int)", 1 * MS, 2 * MS, corr=4)
    ex.kernel(400, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 14 * MS, 15 * MS, 7)
    ex.runtime(400, "cudaLaunchKernel_v7000", int(0.5 * MS), int(0.6 * MS), corr=4)
    ex.insert(
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        start=3 * MS,
        end=4 * MS,
        streamId=7,
        correlationId=9,
        globalPid=gpid(400),
        bytes=1024,
        copyKind=1,
    )
    (trace,) = read_nsys_sqlite(ex.close())
    ev = trace.events
    assert trace.device_type == "cuda"
    assert trace.device_names == ["GPU 0"]
    coll = ev[ev["kind"] == "collective"]
    assert list(coll["coll_op"].astype(str)) == ["all_reduce", "all_gather", "send_recv"]
    assert coll["device_side"].all()
    assert coll["tid"].tolist() == [13, 7, 7]
    assert coll["correlation"].tolist() == [5, 6, 7]
    kern = ev[ev["kind"] == "kernel"]
    assert kern["name"].astype(str).str.contains("vectorized_elementwise").all()
    run = ev[ev["kind"] == "runtime"]
    assert run["correlation"].tolist() == [4] and not run["device_side"].any()
    mem = ev[ev["kind"] == "memory"]
    assert mem["name"].astype(str).tolist() == ["Memcpy HtoD"]
    assert note("trace.nsys_no_kernels") not in trace.notes


def test_nccl_kernels_take_their_op_from_the_enclosing_nvtx_call(tmp_path: Path) -> None:
    """nsys has no "Collective name" args, but NVTX ranges of the collective calls (emit_nvtx,
    record_function) enclose the runtime call that launched each kernel."""
    ex = Export(tmp_path / "g.sqlite")
    ex.process(400)
    ex.mark(400, "torchscale:rank=0", 0)
    ex.push_pop(400, "nccl:_all_gather_base", 1 * MS, 3 * MS)
    ex.runtime(400, "cudaLaunchKernelExC_v11060", 2 * MS, int(2.1 * MS), corr=8)
    ex.kernel(400, "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 4 * MS, 5 * MS, 8)
    ex.push_pop(400, "nccl:all_reduce", 6 * MS, 8 * MS)
    ex.runtime(400, "cudaLaunchKernelExC_v11060", 7 * MS, int(7.1 * MS), corr=9)
    ex.kernel(400, "ncclDevKernel_Broadcast_RING_LL", 9 * MS, 10 * MS, corr=9)
    ex.kernel(400, "ncclDevKernel_Generic", 11 * MS, 12 * MS, corr=10)  # no launch row
    (trace,) = read_nsys_sqlite(ex.close())
    coll = trace.events[trace.events["kind"] == "collective"]
    assert list(zip(coll["coll_op"].astype(str), coll["op_source"].astype(str), strict=True)) == [
        ("all_gather", "metadata"),
        ("all_reduce", "metadata"),
        ("unknown", "name"),
    ]
    assert note("trace.kernel_name_disagrees", count=1, ops=[["broadcast", "all_reduce", 1]]) in (
        trace.notes
    )


def test_unknown_schema_version_is_a_trace_error(tmp_path: Path) -> None:
    meta = META_3 | {"EXPORT_SCHEMA_VERSION": "4.1.0", "EXPORT_SCHEMA_VERSION_MAJOR": "4"}
    ex = Export(tmp_path / "v4.sqlite", meta=meta)
    ex.mark(1, "torchscale:rank=0", 0)
    with pytest.raises(
        TraceError, match=r"schema version 4\.1\.0 .* not a layout torchscale knows"
    ):
        read_nsys_sqlite(ex.close())


def test_known_version_with_a_changed_table_is_a_trace_error(tmp_path: Path) -> None:
    path = tmp_path / "changed.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT)")
    con.execute("INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_SCHEMA_VERSION', '3.9.0')")
    con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    con.execute("CREATE TABLE NVTX_EVENTS (start INTEGER, finish INTEGER, eventType INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(TraceError, match="NVTX_EVENTS lacks column"):
        read_nsys_sqlite(path)


def test_newer_metadata_table_name_is_accepted(tmp_path: Path) -> None:
    """Newer nsys releases name the metadata table META_DATA_EXPORT; schema major 3 is read
    when every needed column is there."""
    ex = Export(tmp_path / "new.sqlite")
    ex.con.execute("ALTER TABLE EXPORT_META_DATA RENAME TO META_DATA_EXPORT")
    ex.con.execute("UPDATE META_DATA_EXPORT SET value='3.24.14' WHERE name='EXPORT_SCHEMA_VERSION'")
    ex.con.execute("DELETE FROM META_DATA_EXPORT WHERE name LIKE 'EXPORT_SCHEMA_VERSION_%'")
    ex.process(100)
    ex.mark(100, "torchscale:rank=0", 0)
    ex.start_end(100, "ProfilerStep#0", 0, MS)
    (trace,) = read_nsys_sqlite(ex.close())
    assert trace.rank == 0 and trace.notes[0].figure("schema") == "3.24.14"


@pytest.mark.parametrize("content", [b"", b"not a database at all, just text\n" * 40])
def test_not_an_nsys_export(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(content)
    with pytest.raises(TraceError) as err:
        read_nsys_sqlite(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_file_and_no_workers(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        read_nsys_sqlite(tmp_path / "absent.sqlite")
    ex = Export(tmp_path / "empty.sqlite")
    ex.process(50)
    ex.osrt(50, "epoll_wait", 0, MS)
    with pytest.raises(TraceError, match="no profiled worker process"):
        read_nsys_sqlite(ex.close())


# ---------------------------------------------------------------------- argv, env, install


def test_profile_argv_is_data_and_wraps_the_inner_command(tmp_path: Path) -> None:
    inner = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "-m", "w"]
    argv = nsys_profile_argv("/opt/nsys", inner, tmp_path / "cap")
    assert argv[:2] == ["/opt/nsys", "profile"]
    assert "--trace=nvtx,osrt" in argv  # CPU: the OS waits are all that shows of gloo
    assert {"--sample=none", "--cpuctxsw=none", "--force-overwrite=true", "--export=none"} <= set(
        argv
    )
    assert f"--output={tmp_path / 'cap'}" in argv
    assert argv[-len(inner) :] == inner
    gpu = nsys_profile_argv(
        "/opt/nsys",
        inner,
        tmp_path / "cap.nsys-rep",
        gpu=True,
        extra=["--cuda-memory-usage=true"],
    )
    assert "--trace=cuda,nvtx" in gpu  # GPUs: kernels show the collectives, no osrt
    assert f"--output={tmp_path / 'cap'}" in gpu  # the suffix nsys adds itself is stripped
    assert gpu.index("--cuda-memory-usage=true") < gpu.index(inner[0])
    assert report_path(tmp_path / "cap") == tmp_path / "cap.nsys-rep"
    with pytest.raises(ValueError, match="unknown trace"):
        nsys_profile_argv("/opt/nsys", inner, tmp_path / "cap", trace=["nvtx", "bogus"])


def test_wrap_launch_keeps_the_launch_and_sets_tmpdir(tmp_path: Path) -> None:
    launch = torchrun_command(
        "w",
        ["--x"],
        nproc=2,
        device="cpu",
        log_dir=tmp_path / "logs",
        base_env={"PATH": "/usr/bin"},
        omp_num_threads=1,
    )
    nsys = NsysInstall(Path("/opt/nsys"), "2022.4.2.1", "PATH")
    wrapped = wrap_launch(launch, nsys, tmp_path / "cap", tmp_dir=tmp_path / "t")
    assert wrapped.argv[-len(launch.argv) :] == launch.argv
    assert wrapped.argv[0] == "/opt/nsys"
    assert wrapped.env["TMPDIR"] == str(tmp_path / "t")
    assert wrapped.env_overrides["TMPDIR"] == str(tmp_path / "t")
    assert (tmp_path / "t").is_dir()  # nsys fails ("Agent launcher failed.") without it
    assert wrapped.env["OMP_NUM_THREADS"] == "1"
    assert (wrapped.nproc, wrapped.log_dir) == (launch.nproc, launch.log_dir)


@pytest.mark.slow  # starts an nsys command
def test_find_nsys_order_and_errors(tmp_path: Path) -> None:
    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2099.1.2.3-abc'\n")
    fake.chmod(0o755)
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho oops >&2\nexit 3\n")
    broken.chmod(0o755)
    _check_find_nsys_order_and_errors(tmp_path)


def _check_find_nsys_order_and_errors(
    tmp_path: Path, before_nothing: Callable[[dict[str, str]], None] = lambda env: None
) -> None:
    """Checks find_nsys's PATH, CI cache, explicit order, its errors and its nothing-found note."""
    fake, broken = tmp_path / "nsys", tmp_path / "broken"
    empty_root = tmp_path / "noroot"
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "TORCHSCALE_NSYS_ROOT": str(empty_root)}
    found = find_nsys(env)
    assert found is not None and found.source == "PATH" and found.version == "2099.1.2.3"
    # the CI cache, when nothing is on PATH
    (empty_root / "bin").mkdir(parents=True)
    (empty_root / "bin" / "nsys").symlink_to(fake)
    cached = find_nsys({**env, "PATH": "/nonexistent"})
    assert cached is not None and cached.source == "CI cache"
    # explicit beats both; a broken explicit one is an error, not a fallback
    explicit = find_nsys({**env, "TORCHSCALE_NSYS": str(empty_root)})
    assert explicit is not None and explicit.source == "TORCHSCALE_NSYS"
    with pytest.raises(LaunchError, match="--version failed: oops"):
        find_nsys({**env, "TORCHSCALE_NSYS": str(broken)})
    with pytest.raises(LaunchError, match="no such file"):
        find_nsys({**env, "TORCHSCALE_NSYS": str(tmp_path / "absent")})
    before_nothing(env)
    # nothing anywhere: None, and the reason names what install_nsys.sh wrote
    (empty_root / "bin" / "nsys").unlink()
    (empty_root / "UNAVAILABLE").write_text("apt-get update failed: no network\n")
    nothing = {**env, "PATH": "/nonexistent"}
    assert find_nsys(nothing) is None
    assert "no network" in nsys_unavailable_reason(nothing)


def test_find_nsys_order_and_errors_read_from_each_version_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same order and errors, each nsys's `--version` answered in-process (the one call
    that runs it, nsys_version's subprocess.run): what each executable would print."""
    answers = {"nsys": (0, "NVIDIA Nsight Systems version 2099.1.2.3-abc\n", "")}
    answers["broken"] = (3, "", "oops\n")
    asked: list[str] = []

    def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        name = Path(argv[0]).resolve().name  # the CI cache's nsys is a link to the fake
        asked.append(name)
        returncode, stdout, stderr = answers[name]
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)

    only_here = SimpleNamespace(run=run, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(nsys_module, "subprocess", only_here)
    for name in answers:  # executables for shutil.which; never run
        (tmp_path / name).write_text("")
        (tmp_path / name).chmod(0o755)

    def broken_on_path(env: dict[str, str]) -> None:
        # a broken nsys on PATH is passed over for the CI cache's, never an error
        answers["nsys"], answers["cached"] = answers["broken"], answers["nsys"]
        link = Path(env["TORCHSCALE_NSYS_ROOT"]) / "bin" / "nsys"
        link.unlink()
        link.symlink_to(tmp_path / "cached")
        (tmp_path / "cached").write_text("")
        asked.clear()
        passed_over = find_nsys(env)
        assert passed_over is not None and passed_over.source == "CI cache"
        assert asked == ["nsys", "cached"]

    _check_find_nsys_order_and_errors(tmp_path, broken_on_path)


def test_parse_version_and_missing_report(tmp_path: Path) -> None:
    assert parse_nsys_version("NVIDIA Nsight Systems version 2022.4.2.1-df9881f") == "2022.4.2.1"
    assert parse_nsys_version("nothing here") is None
    with pytest.raises(LaunchError, match="wrote no report"):
        expect_report(tmp_path / "cap")
    (tmp_path / "cap.qdstrm").write_bytes(b"x")
    with pytest.raises(LaunchError, match="importer"):
        expect_report(tmp_path / "cap")
    with pytest.raises(TraceError, match="no Nsight Systems report"):
        export_sqlite("/opt/nsys", tmp_path / "absent.nsys-rep")


@pytest.mark.slow  # starts an nsys command
def test_install_script_is_valid_bash() -> None:
    script = REPO_ROOT / ".ci" / "install_nsys.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert "install_nsys.sh" in (REPO_ROOT / ".ci" / "run").read_text()


def test_the_ci_run_installs_nsys() -> None:
    assert (REPO_ROOT / ".ci" / "install_nsys.sh").is_file()
    assert "install_nsys.sh" in (REPO_ROOT / ".ci" / "run").read_text()


# ----------------------------------------------------------------------- real end to end


def nvtx_problem() -> str | None:
    try:
        version = importlib.metadata.version("nvtx")
    except importlib.metadata.PackageNotFoundError:
        return "the `nvtx` package is not installed (pip install 'nvtx<0.2.12')"
    parts = tuple(int(p) for p in version.split(".")[:3] if p.isdigit())
    if parts >= (0, 2, 12):
        return f"nvtx {version} records nothing under nsys 2022.4 (pip install 'nvtx<0.2.12')"
    return None


def _nsys_capture(nsys: Path, where: Path, steps: int, delay_ms: float) -> tuple[int, str, Path]:
    """tests.nsys_worker on 2 CPU ranks under `nsys profile` (the whole run: this worker is
    not torchscale's and fires no capture trigger): (exit code, its log, `where`)."""
    where.mkdir(parents=True, exist_ok=True)
    base_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    launch = torchrun_command(
        "tests.nsys_worker",
        ["--steps", str(steps), "--slow-rank", "1", "--delay-ms", str(delay_ms)],
        nproc=2,
        device="cpu",
        log_dir=where / "logs",
        base_env=base_env,
        omp_num_threads=1,
    )
    wrapped = wrap_launch(launch, nsys, where / "capture", capture="none")
    log = where / "nsys.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            wrapped.argv,
            env=wrapped.env,
            cwd=where,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"nsys profile did not finish in 240 s:\n{log.read_text()[-3000:]}")
        finally:
            kill_mentioning(str(where))
    return rc, log.read_text(errors="replace"), where


@pytest.mark.slow  # ~15-25 s; test_profile_run's nsys run covers the same path by the CLI
def test_real_two_rank_cpu_capture_end_to_end(tmp_path: Path) -> None:
    nsys = find_nsys()
    if nsys is None:
        pytest.skip(nsys_unavailable_reason())
    problem = nvtx_problem()
    if problem:
        pytest.skip(problem)
    steps, delay_ms = 6, 50.0
    rc, text, where = _nsys_capture(nsys, tmp_path, steps, delay_ms)
    if rc != 0 and "SIGABRT" in text:
        # nsys 2022.4's injection aborted a CPU rank once in 17 runs here (a fresh-clone CI,
        # 2026-11-26; 16 reruns passed): once more before judging, the first log kept beside
        rc, text, where = _nsys_capture(nsys, tmp_path / "again", steps, delay_ms)
    assert rc == 0, f"{text[:3000]}\n...\n{text[-3000:]}"
    rep = expect_report(where / "capture")
    db = export_sqlite(nsys, rep)

    con = sqlite3.connect(db)
    env_row = con.execute(
        "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='DeviceEnvironment'"
    ).fetchone()
    kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    assert env_row == (REDACTED,)
    assert kernels == 0  # CPU: nsys sees no collectives as kernels

    traces = read_nsys_sqlite(db)
    assert [t.rank for t in traces] == [0, 1]
    assert all(t.rank_source == "nvtx_mark" and t.device_type == "cpu" for t in traces)
    per_rank: dict[int, pd.DataFrame] = {}
    for t in traces:
        ev = t.events
        assert tuple(ev.columns) == EVENT_COLUMNS
        assert sorted(ev.loc[ev["kind"] == "step", "step"].tolist()) == list(range(steps))
        phases = ev[ev["kind"] == "phase"]
        assert phases.groupby("phase", observed=True).size().to_dict() == {
            p: steps for p in ("data", "forward", "backward", "optimizer")
        }
        assert (ev["kind"] == "collective").sum() == 0
        per_rank[t.rank] = ev

    def backward_ms(ev: pd.DataFrame) -> pd.Series:
        b = ev[(ev["kind"] == "phase") & (ev["phase"] == "backward")]
        return b["dur"].reset_index(drop=True).iloc[1:] / 1000.0  # step 0 warms up

    gap = (backward_ms(per_rank[1]) - backward_ms(per_rank[0])).median()
    assert 0.8 * delay_ms <= gap <= 1.6 * delay_ms, gap
    delay = per_rank[1][per_rank[1]["name"] == "torchscale:injected_delay"]
    assert len(delay) == steps and (delay["kind"] == "cpu_op").all()
    assert delay["dur"].median() / 1000.0 == pytest.approx(delay_ms, rel=0.3)
    assert (per_rank[0]["name"] == "torchscale:injected_delay").sum() == 0

    # OSRT: the fast rank's training thread blocks in the all_reduce while the slow rank
    # finishes its backward pass: per step (step 0 left out: start-up skew) its waits are
    # ~delay_ms longer than the slow rank's
    def wait_ms_per_step(ev: pd.DataFrame) -> float:
        waits = ev[(ev["kind"] == "runtime") & ev["name"].astype(str).str.startswith("osrt:")]
        per_step = []
        for _, step in ev[(ev["kind"] == "step") & (ev["step"] > 0)].iterrows():
            inside = waits[(waits["ts"] >= step["ts"]) & (waits["ts"] < step["ts"] + step["dur"])]
            per_step.append(float(inside["dur"].sum()) / 1000.0)
        return float(pd.Series(per_step).median())

    fast, slow = wait_ms_per_step(per_rank[0]), wait_ms_per_step(per_rank[1])
    assert fast - slow > 0.6 * delay_ms, (fast, slow)
