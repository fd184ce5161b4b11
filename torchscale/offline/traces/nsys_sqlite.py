"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`) into one RankTrace per worker.

One report holds every process nsys saw (torchrun's launcher, its workers, even unrelated system
processes in PROCESSES); the *workers* are the processes with torchscale NVTX ranges or marks,
`ProfilerStep#<n>` ranges, or CUDA kernels / runtime calls. Each becomes a `RankTrace` whose
`events` follow `traces/rank_trace.py` exactly.

What is read (only the columns needed; the stdlib sqlite3 module, read-only):
- EXPORT_META_DATA (META_DATA_EXPORT in newer nsys) first: the export's schema version. Only
  major version 3 (nsys 2022.4 writes 3.0.0) is known; another major, or a known table missing
  a column this reader needs, is a TraceError naming the version, never a wrong table.
- NVTX_EVENTS (+ StringIds): push/pop (eventType 59) and start/end (60) ranges, already paired
  by nsys, classified by `traces/classify.py` as host annotations, the rules of Kineto's
  record_function ranges, so both readers agree. Ranges never closed are left out and counted.
  Marks (eventType 34): `torchscale:rank=<r>` (optionally followed by ` world_size=<n>` and
  ` backend=<b>`) names the process's rank; without it ranks follow the process order (pid
  order, the order torchrun spawns local ranks in), rank_source "process_order", noted.
- CUPTI_ACTIVITY_KIND_KERNEL (demangled name, else short name): NCCL kernels
  (`ncclDevKernel_*`, `ncclKernel_*`, any case) -> "collective" with coll_op from the NVTX
  collective range (`nccl:<op>`, `c10d::<op>`, as `emit_nvtx` or record_function ranges write
  them) enclosing the runtime call that launched it (`traces/kernel_ops.py`), else from the
  kernel name; nsys keeps no "Collective name" args; other kernels -> "kernel" (classify.py
  again). tid is the stream, `correlation` the CUPTI correlation id. MEMCPY/MEMSET ->
  "memory", named `Memcpy HtoD` ... / `Memset`.
- CUPTI_ACTIVITY_KIND_RUNTIME: CUDA runtime calls -> "runtime" with their correlation id.
- OSRT_API: only blocking waits (OSRT_WAITS) on the worker's training thread (the one with the
  step ranges), between its first step's start and its last step's end, kept as kind "runtime"
  rows named `osrt:<call>`: on a CPU gloo run the only trace of the collectives (docs/profiling.md,
  "Nsight Systems"). The rest (mmap, read, gloo's own waits, sleeps) waits for no peer: dropped.

Times: nsys stores integer ns since the session start (TARGET_INFO_SESSION_START_TIME holds its
UTC epoch, kept as `base_time_ns`); the contract's `ts`/`dur` are float us on the rank's own
clock: ns / 1000. Workers of one report share one host clock; reports from different hosts do
not (see `analysis.trace.clock`).
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from torchscale.contracts.errors import TraceError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import RankSource
from torchscale.contracts.step_phases import OWN_WORK_PHASES, RANGE_PREFIX
from torchscale.contracts.wording.profile import note
from torchscale.offline.traces.classify import OP_SOURCES, EventClass, classify_event
from torchscale.offline.traces.kernel_ops import resolve_kernel_ops
from torchscale.offline.traces.rank_trace import COLL_OPS, KINDS, RankTrace

SUPPORTED_SCHEMA_MAJORS = (3,)
META_TABLES = ("EXPORT_META_DATA", "META_DATA_EXPORT")  # the second name: newer nsys releases

NVTX_MARK = 34  # push/pop ranges are 59, start/end 60 (written as literals in the SQL)

# globalTid / globalPid: (host id << 48) | (pid << 24) | tid, per nsys's serialized GlobalId.
# `globalTid >> 24` keys a process (host and pid), `& 0xFFFFFF` of that is the OS pid. The SQL
# below writes these numbers (24, 16777215) out as literals.
ID_BITS = 24
ID_MASK = 0xFFFFFF

# columns this reader needs, per table (a known-version table without them: TraceError)
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "StringIds": ("id", "value"),
    "NVTX_EVENTS": ("start", "end", "eventType", "text", "textId", "globalTid"),
    "CUPTI_ACTIVITY_KIND_KERNEL": (
        "start",
        "end",
        "deviceId",
        "streamId",
        "correlationId",
        "globalPid",
        "demangledName",
        "shortName",
    ),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end", "globalTid", "correlationId", "nameId"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": (
        "start",
        "end",
        "streamId",
        "correlationId",
        "globalPid",
        "copyKind",
    ),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("start", "end", "streamId", "correlationId", "globalPid"),
    "OSRT_API": ("start", "end", "globalTid", "nameId"),
    "PROCESSES": ("globalPid", "pid", "name"),
    "TARGET_INFO_SESSION_START_TIME": ("utcEpochNs",),
    "TARGET_INFO_GPU": ("id", "name"),
}

RANK_MARK = re.compile(rf"^{re.escape(RANGE_PREFIX)}rank=(\d+)\b(.*)$")
MARK_FIELD = re.compile(r"\b(world_size|backend)=([A-Za-z0-9_]+)")
STEP_NAME = re.compile(r"^ProfilerStep#\d+$")
# CUpti_ActivityMemcpyKind (the ENUM_CUDA_MEMCPY_OPER table can be empty in an export)
MEMCPY_KINDS = dict(
    enumerate(("HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"), 1)
)
# OS runtime calls that block the calling thread until something else happens
OSRT_WAITS = frozenset(
    {
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "pthread_cond_clockwait",
        "pthread_mutex_lock",
        "pthread_mutex_timedlock",
        "pthread_rwlock_rdlock",
        "pthread_rwlock_wrlock",
        "pthread_join",
        "sem_wait",
        "sem_timedwait",
        "sem_clockwait",
        "poll",
        "ppoll",
        "select",
        "pselect",
        "epoll_wait",
        "epoll_pwait",
        "recv",
        "recvfrom",
        "recvmsg",
        "accept",
        "accept4",
        "waitpid",
        "waitid",
        "wait",
    }
)
OSRT_PREFIX = "osrt:"

NVTX_CAT = "nvtx"
KERNEL_CAT = "kernel"
MEMORY_CATS = {True: "gpu_memcpy", False: "gpu_memset"}


# classify_event once per (name, category), cached per read: names repeat millions of times
_Classifier = Callable[[str, str], EventClass | None]


@dataclass
class _Columns:
    """Event rows of one rank, column by column (cheaper than a dict per row)."""

    name: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    start_ns: list[int] = field(default_factory=list)
    end_ns: list[int] = field(default_factory=list)
    tid: list[int] = field(default_factory=list)
    device_side: list[bool] = field(default_factory=list)
    correlation: list[int | None] = field(default_factory=list)
    step: list[int | None] = field(default_factory=list)
    phase: list[str | None] = field(default_factory=list)
    coll_op: list[str | None] = field(default_factory=list)
    op_source: list[str | None] = field(default_factory=list)

    def add(
        self,
        name: str,
        kind: str,
        start: int,
        end: int,
        tid: int,
        *,
        device_side: bool = False,
        correlation: int | None = None,
        step: int | None = None,
        phase: str | None = None,
        coll_op: str | None = None,
        op_source: str | None = None,
    ) -> None:
        self.name.append(name)
        self.kind.append(kind)
        self.start_ns.append(start)
        self.end_ns.append(end)
        self.tid.append(tid)
        self.device_side.append(device_side)
        self.correlation.append(correlation)
        self.step.append(step)
        self.phase.append(phase)
        self.coll_op.append(coll_op)
        self.op_source.append(op_source)

    def frame(self) -> pd.DataFrame:
        n = len(self.name)
        start = np.asarray(self.start_ns, dtype=np.int64)
        end = np.asarray(self.end_ns, dtype=np.int64)
        df = pd.DataFrame(
            {
                "name": pd.Categorical(self.name),
                "kind": pd.Categorical(self.kind, categories=list(KINDS)),
                "ts": start / 1000.0,
                "dur": (end - start) / 1000.0,
                "tid": np.asarray(self.tid, dtype=np.int64),
                "device_side": np.asarray(self.device_side, dtype=bool),
                "correlation": pd.array(self.correlation, dtype="Int64"),
                "step": pd.array(self.step, dtype="Int64"),
                "phase": pd.Categorical(self.phase, categories=list(OWN_WORK_PHASES)),
                "coll_op": pd.Categorical(self.coll_op, categories=list(COLL_OPS)),
                "op_source": pd.Categorical(self.op_source, categories=list(OP_SOURCES)),
                "pg": pd.Series([None] * n, dtype=object),
                "seq": pd.array([None] * n, dtype="Int64"),
                "nelems": pd.array([None] * n, dtype="Int64"),
                "dtype": pd.Series([None] * n, dtype=object),
                "group_size": pd.array([None] * n, dtype="Int64"),
            }
        )
        return df.sort_values("ts", kind="stable", ignore_index=True)


@dataclass
class _Worker:
    key: int  # globalTid >> 24: host and pid
    pid: int
    process_name: str = ""
    marks: list[tuple[int, str]] = field(default_factory=list)  # (start ns, text)
    rank: int | None = None
    rank_source: RankSource = "process_order"
    world_size: int | None = None
    backend: str | None = None
    notes: list[Finding] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"pid {self.pid}" + (f" ({self.process_name})" if self.process_name else "")


@dataclass(frozen=True)
class _Layout:
    schema_version: str
    product_version: str
    columns: dict[str, frozenset[str]]  # tables present -> their columns

    def has(self, table: str) -> bool:
        return table in self.columns


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    try:
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise TraceError(f"{path}: not an SQLite file ({exc})") from exc
    return con


def _layout(con: sqlite3.Connection, path: Path) -> _Layout:
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    meta_table = next((t for t in META_TABLES if t in tables), None)
    if meta_table is None:
        raise TraceError(
            f"{path}: not an Nsight Systems SQLite export (no {META_TABLES[0]} table); "
            "make one with `nsys export --type sqlite --lazy=false REPORT.nsys-rep`"
        )
    meta = dict(con.execute(f"SELECT name, value FROM {meta_table}").fetchall())  # noqa: S608
    version = str(meta.get("EXPORT_SCHEMA_VERSION") or "")
    product = str(meta.get("EXPORT_PRODUCT_VERSION") or "unknown")
    major_text = str(meta.get("EXPORT_SCHEMA_VERSION_MAJOR") or version.split(".")[0])
    if not major_text.isdigit():
        raise TraceError(f"{path}: the nsys export states no schema version ({meta_table})")
    if int(major_text) not in SUPPORTED_SCHEMA_MAJORS:
        known = ", ".join(f"{m}.x" for m in SUPPORTED_SCHEMA_MAJORS)
        raise TraceError(
            f"{path}: nsys SQLite schema version {version or major_text} (nsys {product}) is not "
            f"a layout torchscale knows (known: {known}, as nsys 2022.4 writes); "
            "export it with a supported nsys or update torchscale"
        )
    columns: dict[str, frozenset[str]] = {}
    for table, needed in REQUIRED_COLUMNS.items():
        if table not in tables:
            continue
        have = frozenset(r[1] for r in con.execute(f'PRAGMA table_info("{table}")'))
        missing = [c for c in needed if c not in have]
        if missing:
            raise TraceError(
                f"{path}: nsys export schema {version} (nsys {product}): table {table} lacks "
                f"column(s) {', '.join(missing)}; this layout is not one torchscale knows"
            )
        columns[table] = have
    if "StringIds" not in columns:
        raise TraceError(f"{path}: nsys export without a StringIds table")
    return _Layout(version, product, columns)


def _find_workers(con: sqlite3.Connection, layout: _Layout) -> dict[int, _Worker]:
    workers: dict[int, _Worker] = {}

    def worker(key: int) -> _Worker:
        if key not in workers:
            workers[key] = _Worker(key=key, pid=key & ID_MASK)
        return workers[key]

    if layout.has("NVTX_EVENTS"):
        rows = con.execute(
            # 34 mark, 59 push/pop, 60 start/end; text inline or registered (textId)
            "SELECT n.globalTid >> 24, n.eventType, n.start, COALESCE(n.text, s.value) "
            "FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "WHERE n.eventType IN (34, 59, 60) AND n.globalTid IS NOT NULL "
            # only the names that make a worker (not every aten:: range of emit_nvtx)
            "AND (COALESCE(n.text, s.value) LIKE 'torchscale:%' "
            "OR COALESCE(n.text, s.value) LIKE 'ProfilerStep#%')"
        )
        for key, event_type, start, text in rows:
            name = text or ""
            if event_type == NVTX_MARK:
                if RANK_MARK.match(name):
                    worker(key).marks.append((start, name))
            elif name.startswith(RANGE_PREFIX) or STEP_NAME.match(name):
                worker(key)
    for table, column in (
        ("CUPTI_ACTIVITY_KIND_KERNEL", "globalPid"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"),
    ):
        if layout.has(table):
            query = f"SELECT DISTINCT {column} >> 24 FROM {table} WHERE {column} IS NOT NULL"  # noqa: S608
            for (key,) in con.execute(query):
                worker(key)
    if workers and layout.has("PROCESSES"):
        for gpid, name in con.execute("SELECT globalPid, name FROM PROCESSES"):
            if gpid is not None and (gpid >> ID_BITS) in workers:
                workers[gpid >> ID_BITS].process_name = name or ""
    return workers


def _assign_ranks(workers: list[_Worker], path: Path) -> None:
    """Ranks from the `torchscale:rank=<r>` marks; the unmarked get the free numbers in pid
    order ("process_order"). Two processes claiming one rank: TraceError."""
    claimed: dict[int, _Worker] = {}
    for w in workers:
        if not w.marks:
            continue
        w.marks.sort()
        texts = [t for _, t in w.marks]
        match = RANK_MARK.match(texts[0])
        assert match is not None  # only matching marks are collected
        rank = int(match.group(1))
        for key, value in MARK_FIELD.findall(match.group(2)):
            if key == "world_size":
                w.world_size = int(value) if value.isdigit() else None
            else:
                w.backend = value
        others = {RANK_MARK.match(t).group(1) for t in texts[1:]} - {str(rank)}  # type: ignore[union-attr]
        if others:
            figures = {"process": w.label, "rank": rank, "others": sorted(others)}
            w.notes.append(note("trace.nsys_several_ranks", **figures))
        if rank in claimed:
            raise TraceError(
                f"{path}: {claimed[rank].label} and {w.label} both mark rank {rank}; "
                "one report must hold one run"
            )
        claimed[rank] = w
        w.rank = rank
        w.rank_source = "nvtx_mark"
        w.notes.append(note("trace.nsys_rank_mark", rank=rank, mark=texts[0], process=w.label))
    free = (r for r in range(len(workers) + len(claimed) + 1) if r not in claimed)
    for w in sorted((w for w in workers if w.rank is None), key=lambda w: w.pid):
        w.rank = next(free)
        w.rank_source = "process_order"
        w.notes.append(note("trace.nsys_process_order", process=w.label, rank=w.rank))


def _bad(start: int | None, end: int | None) -> bool:
    return start is None or end is None or end < start


@dataclass
class _Durations:
    """Passes the rows (start, end, ...) with a usable duration; counts the others."""

    bad: int = 0

    def usable(self, rows: Iterable[Any]) -> Iterator[Any]:
        for row in rows:
            if _bad(row[0], row[1]):
                self.bad += 1
            else:
                yield row


def _read_nvtx(
    con: sqlite3.Connection, w: _Worker, cols: _Columns, classifier: _Classifier
) -> tuple[int | None, tuple[int, int] | None]:
    """NVTX ranges of one process; returns (training thread, (first step start, last step end))."""
    unclosed = 0
    per_thread: dict[int, int] = defaultdict(int)
    step_span: list[int] = []
    rows = con.execute(
        "SELECT n.start, n.end, n.globalTid & 16777215, COALESCE(n.text, s.value) "
        "FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE n.eventType IN (59, 60) AND n.globalTid >> 24 = ?",
        (w.key,),
    )
    for start, end, tid, text in rows:
        name = text or ""
        cls = classifier(name, NVTX_CAT)
        if cls is None:
            continue
        if _bad(start, end):
            unclosed += 1
            continue
        cols.add(
            name,
            cls.kind,
            start,
            end,
            tid,
            step=cls.step,
            phase=cls.phase,
            coll_op=cls.coll_op,
            op_source=cls.op_source,
        )
        if cls.kind in ("step", "phase"):
            per_thread[tid] += 1
        if cls.kind == "step":
            step_span.extend((start, end))
    if unclosed:
        w.notes.append(note("trace.nsys_unclosed", count=unclosed))
    main = max(per_thread, key=lambda t: per_thread[t]) if per_thread else None
    span = (min(step_span), max(step_span)) if step_span else None
    return main, span


def _read_cuda(
    con: sqlite3.Connection, layout: _Layout, w: _Worker, cols: _Columns, classifier: _Classifier
) -> set[int]:
    """Kernels, memcpy/memset and runtime calls of one process; returns the device ids used."""
    devices: set[int] = set()
    checked = _Durations()
    if layout.has("CUPTI_ACTIVITY_KIND_KERNEL"):
        rows: Iterable[Any] = con.execute(
            "SELECT k.start, k.end, k.streamId, k.correlationId, k.deviceId, "
            "COALESCE(d.value, sh.value) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "LEFT JOIN StringIds d ON d.id = k.demangledName "
            "LEFT JOIN StringIds sh ON sh.id = k.shortName "
            "WHERE k.globalPid >> 24 = ?",
            (w.key,),
        )
        for start, end, stream, corr, device, text in checked.usable(rows):
            name = text or "unknown kernel"
            cls = classifier(name, KERNEL_CAT)
            if cls is None:
                continue
            cols.add(
                name,
                cls.kind,
                start,
                end,
                stream,
                device_side=True,
                correlation=corr,
                coll_op=cls.coll_op,
                op_source=cls.op_source,
            )
            devices.add(device)
    for table, is_memcpy in (
        ("CUPTI_ACTIVITY_KIND_MEMCPY", True),
        ("CUPTI_ACTIVITY_KIND_MEMSET", False),
    ):
        if not layout.has(table):
            continue
        extra = "copyKind" if is_memcpy else "0"
        rows = con.execute(
            f"SELECT start, end, streamId, correlationId, {extra} FROM {table} "  # noqa: S608
            "WHERE globalPid >> 24 = ?",
            (w.key,),
        )
        for start, end, stream, corr, copy_kind in checked.usable(rows):
            name = f"Memcpy {MEMCPY_KINDS.get(copy_kind, 'unknown')}" if is_memcpy else "Memset"
            cls = classifier(name, MEMORY_CATS[is_memcpy])
            kind = cls.kind if cls is not None else "memory"
            cols.add(name, kind, start, end, stream, device_side=True, correlation=corr)
    if layout.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        rows = con.execute(
            "SELECT r.start, r.end, r.globalTid & 16777215, r.correlationId, s.value "
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN StringIds s ON s.id = r.nameId "
            "WHERE r.globalTid >> 24 = ?",
            (w.key,),
        )
        for start, end, tid, corr, text in checked.usable(rows):
            cols.add(text or "unknown CUDA call", "runtime", start, end, tid, correlation=corr)
    if checked.bad:
        w.notes.append(note("trace.nsys_bad_events", count=checked.bad))
    return devices


def _read_osrt_waits(
    con: sqlite3.Connection, w: _Worker, main_tid: int, span: tuple[int, int], cols: _Columns
) -> int:
    """Blocking OS waits of the training thread inside the stepped window; returns rows kept."""
    global_tid = (w.key << ID_BITS) | main_tid
    rows = con.execute(
        "SELECT o.start, o.end, s.value FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId "
        "WHERE o.globalTid = ? AND o.end >= ? AND o.start <= ? ORDER BY o.start",
        (global_tid, span[0], span[1]),
    )
    kept = 0
    last_end = -1
    for start, end, name in rows:
        if name not in OSRT_WAITS or _bad(start, end) or end <= last_end:
            continue  # not a wait, or nested in the wait kept just before (e.g. a libc wrapper)
        cols.add(OSRT_PREFIX + name, "runtime", start, end, main_tid)
        last_end = end
        kept += 1
    return kept


def _session_start_ns(con: sqlite3.Connection, layout: _Layout) -> int | None:
    if not layout.has("TARGET_INFO_SESSION_START_TIME"):
        return None
    row = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1").fetchone()
    return int(row[0]) if row and row[0] is not None else None


def _gpu_names(con: sqlite3.Connection, layout: _Layout) -> dict[int, str]:
    if not layout.has("TARGET_INFO_GPU"):
        return {}
    return {int(i): str(n) for i, n in con.execute("SELECT id, name FROM TARGET_INFO_GPU") if n}


def read_nsys_sqlite(path: Path | str, *, osrt_waits: bool = True) -> list[RankTrace]:
    """One RankTrace per profiled worker process of an nsys SQLite export, sorted by rank.

    Raises TraceError (one line) for a file that is not an nsys export, an unknown schema
    version or layout, no worker process, or two processes marking the same rank. Anything
    odd but usable (missing rank marks, unclosed ranges, no kernels) is a note on the rank.
    `osrt_waits=False` leaves the OS runtime waits out.
    """
    path = Path(path)
    con = _connect(path)
    try:
        layout = _layout(con, path)
        found = _find_workers(con, layout)
        classifier: _Classifier = functools.cache(classify_event)
        if not found:
            raise TraceError(
                f"{path}: no profiled worker process in this nsys export (no 'torchscale:' or "
                "'ProfilerStep#' NVTX ranges and no CUDA kernels; was it captured with "
                "--trace=nvtx and the `nvtx` package < 0.2.12, or --trace=cuda?)"
            )
        workers = sorted(found.values(), key=lambda w: w.pid)
        _assign_ranks(workers, path)
        base_ns = _session_start_ns(con, layout)
        gpu_names = _gpu_names(con, layout)
        size = path.stat().st_size
        traces: list[RankTrace] = []
        for index, w in enumerate(workers):
            cols = _Columns()
            main_tid: int | None = None
            span: tuple[int, int] | None = None
            if layout.has("NVTX_EVENTS"):
                main_tid, span = _read_nvtx(con, w, cols, classifier)
            devices = _read_cuda(con, layout, w, cols, classifier)
            on_gpu = bool(devices) or "runtime" in cols.kind
            if not devices:
                w.notes.append(note("trace.nsys_no_kernels"))
            if osrt_waits and layout.has("OSRT_API"):
                if main_tid is not None and span is not None:
                    kept = _read_osrt_waits(con, w, main_tid, span, cols)
                    w.notes.append(note("trace.nsys_osrt_kept", count=kept, tid=main_tid))
                else:
                    w.notes.append(note("trace.nsys_osrt_left_out"))
            if not any(k == "step" for k in cols.kind):
                w.notes.append(note("trace.nsys_no_steps"))
            events = cols.frame()
            disagreement = resolve_kernel_ops(events)
            if disagreement is not None:
                w.notes.append(disagreement)
            assert w.rank is not None
            versions = {"schema": layout.schema_version, "version": layout.product_version}
            exported = note("trace.nsys_export", **versions, process=w.label)
            traces.append(
                RankTrace(
                    path=path,
                    rank=w.rank,
                    rank_source=w.rank_source,
                    events=events,
                    world_size=w.world_size,
                    backend=w.backend,
                    device_type="cuda" if on_gpu else "cpu",
                    device_names=[gpu_names.get(d, f"GPU {d}") for d in sorted(devices)],
                    base_time_ns=base_ns,
                    source_format="nsys",
                    # the file is parsed once for all ranks: its size is shared out among them
                    bytes_read=size // len(workers) + (size % len(workers) if index == 0 else 0),
                    notes=[exported, *w.notes],
                )
            )
        return sorted(traces, key=lambda t: t.rank)
    except sqlite3.DatabaseError as exc:
        raise TraceError(f"{path}: cannot read the nsys SQLite export: {exc}") from exc
    finally:
        con.close()
