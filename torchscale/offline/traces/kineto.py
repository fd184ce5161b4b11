"""Read one rank's torch.profiler (Kineto) trace, `.json` or `.json.gz`, into a `RankTrace`.

Traces reach hundreds of MB per rank, so the file is streamed: decompressed block by block,
cut at event boundaries into pieces of about 8 MB, each decoded by msgspec into typed structs
of only the needed fields (every other key skipped in C), then numpy columns: the only design
measured at >= 100 MB/s per core with peak memory <= 1.5x the file (docs/profiling.md, "Speed
and memory"; benchmarks/trace_parse.py). Events are classified once per (name, category).

A cut is only a guess (`}` then `,` then `{`, whitespace between); a wrong one (inside a
string, or inside an event) always leaves the piece malformed, msgspec rejects it, and an
earlier cut is tried, so the result never depends on how the file was formatted.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import msgspec
import numpy as np
import pandas as pd

from torchscale.contracts.errors import TraceError, describe_os_error
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import RankSource
from torchscale.contracts.step_phases import OWN_WORK_PHASES, RANGE_PREFIX
from torchscale.contracts.wording.profile import note
from torchscale.offline.traces.classify import OP_SOURCES, EventClass, classify_event
from torchscale.offline.traces.kernel_ops import resolve_kernel_ops
from torchscale.offline.traces.rank_trace import COLL_OPS, EVENT_COLUMNS, KINDS, RankTrace

CHUNK = 1 << 23  # bytes of events decoded at once (the reused buffer's size)
MAX_DUR_US = 86_400e6  # a day: longer is a corrupt record (CUPTI's "236 years")
_MISSING = np.iinfo(np.int64).min  # stands for "no value" in int64 columns until the end
_WS = b" \t\r\n"
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_NUMBER = re.compile(r"\d+")
_COLLECTIVE_KINDS = frozenset({"collective", "collective_call"})
_PART_COLUMNS = ("pair", "ts", "dur", "tid", "correlation")
_RANK_IN_NAME = (
    re.compile(r"rank[-_.]?(\d+)", re.IGNORECASE),
    re.compile(r"[-_.](\d+)(?:\.pt)?(?:\.trace)?\.json(?:\.gz)?$", re.IGNORECASE),
)


class _Args(msgspec.Struct, gc=False):
    """The only args the table uses; msgspec skips every other key without building it."""

    correlation: Any = _MISSING  # an int default keeps the column's fast path (no None)
    coll_name: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    dtype: Any = None
    group_size: Any = msgspec.field(default=None, name="Group size")
    pg_name: Any = msgspec.field(default=None, name="Process Group Name")
    pg_id: Any = msgspec.field(default=None, name="Process Group ID")
    seq: Any = msgspec.field(default=None, name="Seq")


class _Event(msgspec.Struct, gc=False):
    """One trace event, only the fields the table uses. `Any` where files disagree on types
    (ints in old files, floats in new ones, strings in the profiler's own span rows)."""

    ph: Any = None
    name: Any = ""
    cat: Any = ""
    ts: Any = None
    dur: Any = None
    tid: Any = None
    args: _Args | None = None


class _Header(msgspec.Struct):
    """The document's own keys (whether written before or after `traceEvents`)."""

    distributedInfo: Any = None
    deviceProperties: Any = None
    baseTimeNanoseconds: Any = None
    schemaVersion: Any = None


_HEADER_KEYS = tuple(_Header.__struct_fields__)


class _Tail(_Header):
    traceEvents: list[_Event] = msgspec.field(default_factory=list)


_CHUNK_DECODER = msgspec.json.Decoder(list[_Event])
_HEADER_DECODER = msgspec.json.Decoder(_Header)
_TAIL_DECODER = msgspec.json.Decoder(_Tail)


def read_kineto(path: Path, *, rank_hint: int | None = None) -> RankTrace:
    """Read one Kineto trace file; TraceError (one line) when it is not a usable trace.

    `rank_hint` is the rank a caller knows from elsewhere; used when the file has no
    `distributedInfo.rank` (before falling back to a rank in the file name).
    """
    table = _Table()
    header, nbytes = _scan(path, table)
    events, bad = table.frame()
    notes: list[Finding] = []
    rank, source = _rank(path, header, rank_hint, notes)
    info = header.distributedInfo if isinstance(header.distributedInfo, dict) else {}
    if bad:
        notes.append(note("trace.dropped_events", count=bad))
    disagreement = resolve_kernel_ops(events)
    if disagreement is not None:
        notes.append(disagreement)
    kinds = events["kind"]
    if not (kinds == "step").any():
        notes.append(note("trace.no_step_ranges"))
    if not kinds.isin(["collective", "collective_call"]).any():
        notes.append(note("trace.no_collectives"))
    backend = info.get("backend")
    devices = header.deviceProperties if isinstance(header.deviceProperties, list) else []
    return RankTrace(
        path=path,
        rank=rank,
        rank_source=source,
        events=events,
        world_size=_int_or_none(info.get("world_size")),
        backend=backend if isinstance(backend, str) else None,
        device_type=_device_type(backend, devices, bool(events["device_side"].any()), table),
        device_names=[str(d["name"]) for d in devices if isinstance(d, dict) and "name" in d],
        base_time_ns=_int_or_none(header.baseTimeNanoseconds),
        process_groups=[g for g in info.get("pg_config") or [] if isinstance(g, dict)],
        source_format="kineto",
        bytes_read=nbytes,
        notes=notes,
    )


def read_header(path: Path, *, limit: int = 1 << 20) -> dict[str, Any] | None:
    """The document keys written before `traceEvents` (Kineto writes `distributedInfo` there),
    from at most `limit` decompressed bytes; None when they are not found that early."""
    buf = b""
    with _open(path) as stream:
        while len(buf) < limit:
            block = _read(stream, path, 1 << 16)
            if not block:
                return None
            searched = max(0, len(buf) - 32)
            buf += block
            found = _find_header(buf, searched)
            if found is not None:
                return {k: getattr(found[0], k) for k in _HEADER_KEYS if k != "schemaVersion"}
    return None


# -- streaming -------------------------------------------------------------------------------


def _open(path: Path) -> IO[bytes]:
    """The file's decompressed byte stream; gzip recognised by its magic bytes, not its name."""
    try:
        raw = path.open("rb")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {describe_os_error(exc)}") from None
    if raw.peek(2)[:2] == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    return raw


@contextlib.contextmanager
def _read_errors(path: Path) -> Iterator[None]:
    """Decompression and I/O errors of a read as one-line TraceErrors naming the file."""
    try:
        yield
    except EOFError:
        raise TraceError(
            f"{path}: truncated gzip file (the compressed stream ends early)"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise TraceError(f"{path}: corrupt gzip data ({exc})") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {describe_os_error(exc)}") from None


def _read(stream: IO[bytes], path: Path, size: int) -> bytes:
    """Up to `size` decompressed bytes."""
    with _read_errors(path):
        return stream.read(size)


def _read_into(stream: IO[bytes], path: Path, buf: bytearray, start: int) -> int:
    """Fill buf[start:] from the stream (no new buffer per block); bytes read, 0 at the end."""
    with memoryview(buf) as view, view[start:] as target, _read_errors(path):
        return stream.readinto(target)  # type: ignore[attr-defined,no-any-return]


def _find_header(buf: bytes, start: int) -> tuple[_Header, int] | None:
    """The keys before `"traceEvents": [` and the offset just after that `[`, once in `buf`."""
    for m in _EVENTS_KEY.finditer(buf, start):
        try:
            header = _HEADER_DECODER.decode(buf[: m.start()] + b'"traceEvents": []}')
        except msgspec.DecodeError:
            continue  # the key text sat inside a string or a nested object
        return header, m.end()
    return None


def _scan(path: Path, table: _Table) -> tuple[_Header, int]:
    """Stream the file into `table`; return the document keys and the bytes parsed.

    Events live in one reused buffer: byte 0 is spare, data is buf[1:filled]. A piece is
    decoded in place, its `[` and `]` written over the separator bytes around it for the
    decode and put back after, so no piece is ever copied."""
    with _open(path) as stream:
        head = b""
        found: tuple[_Header, int] | None = None
        while found is None:
            block = _read(stream, path, 1 << 16)
            if not block:
                raise _no_events_error(path, head)
            searched = max(0, len(head) - 32)
            head += block
            found = _find_header(head, searched)
        nbytes = len(head)
        header, offset = found
        rest = head[offset:]
        del head
        buf = bytearray(max(CHUNK, len(rest)) + 2)
        buf[1 : 1 + len(rest)] = rest
        filled = 1 + len(rest)
        del rest
        while True:
            while filled < len(buf):
                n = _read_into(stream, path, buf, filled)
                if not n:
                    break
                filled += n
                nbytes += n
            if filled < len(buf):  # the end of the file
                break
            used = _decode_piece(buf, filled, table)
            if used:
                remainder = buf[used:filled]
                buf[1 : 1 + len(remainder)] = remainder
                filled = 1 + len(remainder)
            else:  # no clean cut yet (odd layout or a broken piece): take in more bytes
                buf.extend(bytes(len(buf)))
    tail = _decode_tail(path, buf, filled, nbytes - filled + 1)
    table.add(tail.traceEvents)
    # keys from before `traceEvents`, completed by those written after it
    merged = (getattr(header if getattr(header, k) is not None else tail, k) for k in _HEADER_KEYS)
    return _Header(*merged), nbytes


def _decode_piece(buf: bytearray, filled: int, table: _Table, tries: int = 8) -> int:
    """Decode the events at the front of buf[1:filled] up to a clean cut; that cut's offset,
    0 if there is none yet."""
    start = _after_separator(buf, 1, filled)
    hi = filled
    for _ in range(tries):
        cut = _last_cut(buf, start, hi, filled)
        if cut < 0:
            return 0
        before, after = buf[start - 1], buf[cut]
        buf[start - 1], buf[cut] = 0x5B, 0x5D  # "[" and "]" around the piece
        try:
            with memoryview(buf) as view, view[start - 1 : cut + 1] as piece:
                events = _decode_events(piece)
        except msgspec.DecodeError:
            hi = cut - 1
            continue
        finally:
            buf[start - 1], buf[cut] = before, after
        table.add(events)
        return cut
    return 0


def _after_separator(buf: bytes | bytearray, start: int, end: int) -> int:
    """Offset past the whitespace and the one comma that follow the previous piece."""
    start = _skip_ws(buf, start, end)
    return start + 1 if start < end and buf[start] == 0x2C else start


def _last_cut(buf: bytes | bytearray, lo: int, hi: int, end: int) -> int:
    """Offset just after the last `}` in buf[lo:hi] that `,` and `{` follow (whitespace
    between) before `end`; -1 if none. Requiring the `{` skips most false candidates, such as
    the `}, ` inside C++ kernel names (`{lambda(float)#1}, at::detail::Array<...>`)."""
    while True:
        i = buf.rfind(b"}", lo, hi)
        if i < 0:
            return -1
        j = _skip_ws(buf, i + 1, end)
        if j < end and buf[j] == 0x2C:
            k = _skip_ws(buf, j + 1, end)
            if k < end and buf[k] == 0x7B:
                return i + 1
        hi = i


def _skip_ws(buf: bytes | bytearray, i: int, end: int) -> int:
    while i < end and buf[i] in _WS:
        i += 1
    return i


def _decode_events(piece: bytes | memoryview) -> list[_Event]:
    """Typed decode. A piece whose types surprise the structs is decoded generically, and
    one with non-standard numbers (NaN, Infinity, 1e999, as Python's json writes them) by
    Python's json (numbers beyond float range arrive as a ValidationError); DecodeError only
    when the piece is not JSON at all."""
    try:
        return _CHUNK_DECODER.decode(piece)
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError:
        if not _nonstandard(piece):
            raise
    return [_event_from(obj) for obj in _decode_any(piece)]


def _nonstandard(doc: bytes | memoryview) -> bool:
    """NaN or Infinity literals (Python's json writes them; JSON has none). Substring
    search, not a regex: this runs on every rejected cut, over megabytes."""
    raw = doc if isinstance(doc, bytes) else bytes(doc)
    return b"NaN" in raw or b"Infinity" in raw


def _decode_any(doc: bytes | memoryview) -> Any:
    try:
        return msgspec.json.decode(doc)
    except msgspec.DecodeError:
        try:
            return json.loads(bytes(doc))
        except (ValueError, RecursionError) as exc:
            raise msgspec.DecodeError(str(exc)) from None


def _decode_tail(path: Path, buf: bytearray, filled: int, offset: int) -> _Tail:
    """The last events and the keys written after `traceEvents`, decoded as one object."""
    start = _after_separator(buf, 1, filled)
    with memoryview(buf) as view, view[start:filled] as part:
        doc = b"".join((b'{"traceEvents":[', part))
    offset += start - 1 - len(b'{"traceEvents":[')
    try:
        return _TAIL_DECODER.decode(doc)
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError as exc:
        if not _nonstandard(doc):
            raise _json_error(path, exc, offset) from None
    try:
        obj = _decode_any(doc)
    except msgspec.DecodeError as exc:
        raise _json_error(path, exc, offset) from None
    events = obj.get("traceEvents") if isinstance(obj, dict) else None
    tail = _Tail(traceEvents=[_event_from(e) for e in events or []])
    for key in _HEADER_KEYS:
        if isinstance(obj, dict) and key in obj:
            setattr(tail, key, obj[key])
    return tail


def _event_from(obj: Any) -> _Event:
    """Slow path for an event whose field types the structs do not expect."""
    if not isinstance(obj, dict):
        return _Event()
    raw = obj.get("args")
    args = None
    if isinstance(raw, dict):  # each field under the key the file writes it as
        args = _Args(*(raw.get(key) for key in _Args.__struct_encode_fields__))
    present = {k: obj[k] for k in ("ph", "name", "cat", "ts", "dur", "tid") if k in obj}
    return _Event(**present, args=args)  # an absent key: the field's default


def _no_events_error(path: Path, buf: bytes) -> TraceError:
    """Why a document without a `traceEvents` array is not a trace, in one line."""
    if not buf.strip():
        return TraceError(f"{path}: empty file, not a trace")
    try:
        obj = msgspec.json.decode(buf)
    except msgspec.DecodeError as exc:
        return _json_error(path, exc, 0)
    if isinstance(obj, dict) and "traceEvents" in obj:
        return TraceError(f"{path}: not a trace: 'traceEvents' is not a list")
    return TraceError(f"{path}: not a trace: no 'traceEvents' list")


def _json_error(path: Path, exc: msgspec.DecodeError, offset: int) -> TraceError:
    """'invalid JSON near byte N' with N in the (uncompressed) file, or 'truncated'."""
    text = str(exc)
    if "truncated" in text:
        return TraceError(f"{path}: invalid JSON: the document ends early (truncated file?)")
    m = re.search(r"\(byte (\d+)\)", text)
    where = f" near byte {max(0, offset + int(m.group(1)))}" if m else ""
    reason = re.sub(r"\s*\(byte \d+\)", "", text)
    return TraceError(f"{path}: invalid JSON{where}: {reason}")


# -- building the table ----------------------------------------------------------------------


class _Table:
    """Accumulates numpy columns piece by piece. Rows point to a "pair" (name and category as
    written, plus "Collective name" where that decides): one dict lookup per event, and
    classification once per pair instead of once per event."""

    def __init__(self) -> None:
        self.names: list[str] = []  # the name categories, unique
        self.name_ids: dict[str, int] = {}
        self.cats: set[str] = set()
        self.pair_ids: dict[tuple[Any, ...], int] = {}
        self.pair_name: list[int] = []  # pair -> name code
        self.pair_cat: list[str] = []
        self.pair_cls: list[EventClass | None] = []
        self.kept = np.zeros(0, dtype=bool)  # pair -> the table keeps it
        self.coll = np.zeros(0, dtype=bool)  # pair -> collective or collective_call
        self.parts: dict[str, list[np.ndarray]] = {c: [] for c in _PART_COLUMNS}
        self.n = 0
        self.bad = 0
        self.meta: list[tuple[int, Any, Any, Any, Any, Any]] = []  # row, pg, seq, n, dtype, size

    def add(self, events: list[_Event]) -> None:
        xs = [e for e in events if e.ph == "X"]
        if not xs:
            return
        pair = self._pairs([(e.name, e.cat) for e in xs])
        kept = self.kept[pair]
        ts = _floats([e.ts for e in xs])
        dur = _floats([e.dur for e in xs])
        good = np.isfinite(ts) & (dur >= 0) & (dur <= MAX_DUR_US)
        self.bad += int(np.count_nonzero(kept & ~good))
        keep = kept & good
        self._collective_args(xs, pair, keep)
        tid = _tids([e.tid for e in xs])
        corr = _ints([_MISSING if e.args is None else e.args.correlation for e in xs], _MISSING)
        for column, values in zip(_PART_COLUMNS, (pair, ts, dur, tid, corr), strict=True):
            self.parts[column].append(values[keep])
        self.n += int(np.count_nonzero(keep))

    def _pairs(self, keys: list[tuple[Any, Any]]) -> np.ndarray:
        get = self.pair_ids.get
        try:
            ids = list(map(get, keys))
        except TypeError:  # an unhashable name or category (a list...): use its text
            keys = [(_text(n), _text(c)) for n, c in keys]
            ids = list(map(get, keys))
        if None in ids:  # new pairs, registered in order of appearance (stable categories)
            for key in dict.fromkeys(keys):
                if key not in self.pair_ids:
                    self._register(key)
            self._refresh()
            ids = list(map(get, keys))
        return np.array(ids, dtype=np.int32)

    def _register(self, key: tuple[Any, ...]) -> int:
        name, cat = _text(key[0]), _text(key[1])
        args = {"Collective name": key[2]} if len(key) > 2 else None
        code = self.name_ids.get(name)
        if code is None:
            code = self.name_ids[name] = len(self.names)
            self.names.append(name)
        self.cats.add(cat)
        self.pair_ids[key] = len(self.pair_name)
        self.pair_name.append(code)
        self.pair_cat.append(cat)
        self.pair_cls.append(classify_event(name, cat, args))
        return len(self.pair_name) - 1

    def _refresh(self) -> None:
        self.kept = np.array([c is not None for c in self.pair_cls], dtype=bool)
        self.coll = np.array(
            [c is not None and c.kind in _COLLECTIVE_KINDS for c in self.pair_cls], dtype=bool
        )

    def _collective_args(self, xs: list[_Event], pair: np.ndarray, keep: np.ndarray) -> None:
        """Metadata of collective rows, and their pair again where "Collective name" decides
        (record_param_comms, generic kernels). Only these few rows are touched one by one."""
        rows = np.flatnonzero(self.coll[pair] & keep)
        if not len(rows):
            return
        new_index = np.cumsum(keep) - 1 + self.n
        for i in rows.tolist():
            a = xs[i].args
            if a is None:
                continue
            if isinstance(a.coll_name, str) and a.coll_name:
                p = int(pair[i])
                key = (self.names[self.pair_name[p]], self.pair_cat[p], a.coll_name)
                p = self.pair_ids.get(key, -1)
                if p < 0:
                    p = self._register(key)
                    self._refresh()
                pair[i] = p
                if not self.coll[p]:
                    continue
            pg = a.pg_name if a.pg_name is not None else a.pg_id
            if pg is None and a.seq is None and a.in_nelems is None and a.dtype is None:
                continue
            self.meta.append((int(new_index[i]), pg, a.seq, a.in_nelems, a.dtype, a.group_size))

    def frame(self) -> tuple[pd.DataFrame, int]:
        """The events DataFrame (columns and dtypes of rank_trace.py) and the bad-event count.
        Pieces are joined one column at a time and let go at once, to keep the peak low."""
        cols = {}
        for column, dtype in zip(
            _PART_COLUMNS, (np.int32, np.float64, np.float64, np.int64, np.int64), strict=True
        ):
            parts = self.parts.pop(column)
            cols[column] = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
            del parts
        pair = cols.pop("pair")
        table = _class_table(self.pair_cls, [self.names[c] for c in self.pair_name])
        names = pd.Categorical.from_codes(
            np.array(self.pair_name, dtype=np.int32)[pair],
            categories=pd.Index(self.names, dtype=object),
        )
        frame = {
            "name": names.remove_unused_categories(),
            "kind": pd.Categorical.from_codes(table["kind"][pair], categories=list(KINDS)),
            "ts": cols.pop("ts"),
            "dur": cols.pop("dur"),
            "tid": cols.pop("tid"),
            "device_side": table["device_side"][pair],
            "correlation": _nullable(cols.pop("correlation")),
            "step": _nullable(table["step"][pair]),
            "phase": pd.Categorical.from_codes(
                table["phase"][pair], categories=list(OWN_WORK_PHASES)
            ),
            "coll_op": pd.Categorical.from_codes(table["coll_op"][pair], categories=list(COLL_OPS)),
            "op_source": pd.Categorical.from_codes(
                table["op_source"][pair], categories=list(OP_SOURCES)
            ),
        }
        del pair
        frame.update(self._meta_columns(len(frame["ts"])))
        return pd.DataFrame({c: frame[c] for c in EVENT_COLUMNS}, copy=False), self.bad

    def _meta_columns(self, n: int) -> dict[str, Any]:
        pg = np.full(n, None, dtype=object)
        dtype = np.full(n, None, dtype=object)
        ints = {k: np.full(n, _MISSING, dtype=np.int64) for k in ("seq", "nelems", "group_size")}
        for row, g, seq, nelems, dt, size in self.meta:
            if g is not None:
                pg[row] = str(g)
            if dt is not None:
                dtype[row] = str(dt)
            for key, value in (("seq", seq), ("nelems", nelems), ("group_size", size)):
                ints[key][row] = _one_int(value)
        return {  # a Series of dtype object, or pandas 3 would infer its `str` dtype
            "pg": pd.Series(pg, dtype=object, copy=False),
            "dtype": pd.Series(dtype, dtype=object, copy=False),
            **{k: _nullable(v) for k, v in ints.items()},
        }


def _class_table(classes: list[EventClass | None], names: list[str]) -> dict[str, np.ndarray]:
    """Per-pair arrays. Where torchscale's own phase ranges exist, PyTorch's ranges that mean
    the same phase become plain host ops: one phase source, no double counting."""
    own = any(
        c is not None and c.kind == "phase" and name.startswith(RANGE_PREFIX)
        for c, name in zip(classes, names, strict=True)
    )
    kind_code = {k: i for i, k in enumerate(KINDS)}
    phase_code: dict[str, int] = {p: i for i, p in enumerate(OWN_WORK_PHASES)}
    coll_code = {o: i for i, o in enumerate(COLL_OPS)}
    source_code = {s: i for i, s in enumerate(OP_SOURCES)}
    n = len(classes)
    out: dict[str, np.ndarray] = {
        "kind": np.zeros(n, np.int8),
        "phase": np.full(n, -1, np.int8),
        "coll_op": np.full(n, -1, np.int8),
        "op_source": np.full(n, -1, np.int8),
        "step": np.full(n, _MISSING, np.int64),
        "device_side": np.zeros(n, bool),
    }
    for i, (c, name) in enumerate(zip(classes, names, strict=True)):
        if c is None:
            continue
        if c.kind == "phase" and own and not name.startswith(RANGE_PREFIX):
            c = EventClass("cpu_op")
        out["kind"][i] = kind_code[c.kind]
        out["phase"][i] = phase_code.get(c.phase, -1) if c.phase else -1
        out["coll_op"][i] = coll_code.get(c.coll_op, -1) if c.coll_op else -1
        out["op_source"][i] = source_code.get(c.op_source, -1) if c.op_source else -1
        out["step"][i] = c.step if c.step is not None else _MISSING
        out["device_side"][i] = c.device_side
    return out


# -- small conversions -----------------------------------------------------------------------


def _text(value: Any) -> str:
    """A name or category as text: strings as written, None as "", anything else by str()."""
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _floats(values: list[Any]) -> np.ndarray:
    """float64 column; None and non-numbers become NaN (and are then dropped as bad)."""
    try:
        return np.fromiter(values, dtype=np.float64, count=len(values))
    except (TypeError, ValueError):
        return np.array([_one_float(v) for v in values], dtype=np.float64)


def _one_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _ints(values: list[Any], missing: int) -> np.ndarray:
    """int64 column; anything that is not an integer becomes `missing`."""
    try:  # fast when every value is an int; None or a string fails at once
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    clean = [v if type(v) is int and -(2**63) < v < 2**63 else missing for v in values]
    return np.array(clean, dtype=np.int64)


def _tids(values: list[Any]) -> np.ndarray:
    """Thread or stream ids; old traces wrote GPU streams as text ("stream 7"): its number.
    Text without a number (the profiler's own "PyTorch Profiler" rows) becomes -1."""
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    out = []
    for v in values:
        if type(v) is not int and isinstance(v, str):
            m = _NUMBER.search(v)
            v = int(m.group()) if m else -1
        out.append(v if type(v) is int and -(2**63) < v < 2**63 else -1)
    return np.array(out, dtype=np.int64)


def _one_int(value: Any) -> int:
    if isinstance(value, bool):
        return _MISSING
    if isinstance(value, int):
        return value if -(2**63) < value < 2**63 else _MISSING
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return _MISSING


def _nullable(values: np.ndarray) -> pd.arrays.IntegerArray:
    """Int64 (nullable) from an int64 array using _MISSING for "no value"."""
    mask = values == _MISSING
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)


def _int_or_none(value: Any) -> int | None:
    result = _one_int(value)
    return None if result == _MISSING else result


# -- what the file says about itself ---------------------------------------------------------


def rank_from_file_name(path: Path) -> int | None:
    """A rank written in a trace's file name (`rank3`, `rank-3`, `rank_3`, `..._3.json`)."""
    for pattern in _RANK_IN_NAME:
        m = pattern.search(path.name)
        if m:
            return int(m.group(1))
    return None


def _rank(
    path: Path, header: _Header, hint: int | None, notes: list[Finding]
) -> tuple[int, RankSource]:
    info = header.distributedInfo
    rank = _int_or_none(info.get("rank")) if isinstance(info, dict) else None
    if rank is not None:
        if hint is not None and hint != rank:
            notes.append(note("trace.rank_disagrees", rank=rank, expected=hint))
        return rank, "distributedInfo"
    field = "distributedInfo" if not isinstance(info, dict) else "distributedInfo.rank"
    if hint is not None:
        notes.append(note("trace.rank_given", field=field, rank=hint))
        return hint, "given"
    rank = rank_from_file_name(path)
    if rank is None:
        raise TraceError(
            f"{path}: no rank: the trace has no {field} and the file name holds no rank "
            "(name it rank<N>.json)"
        )
    notes.append(note("trace.rank_from_file_name", field=field, rank=rank))
    return rank, "file_name"


def _device_type(backend: Any, devices: list[Any], device_events: bool, table: _Table) -> str:
    """'cuda', 'cpu' or another accelerator named by the backend string (`mtia:hccl,...`).

    `cuda:gloo` in a backend string only says the group could take CUDA tensors (gloo's
    default is "cpu:gloo,cuda:gloo" on any machine), so CUDA needs more: device events,
    device properties, or NCCL/RCCL."""
    pairs = []
    if isinstance(backend, str):
        for part in backend.lower().split(","):
            device, _, name = part.strip().rpartition(":")
            pairs.append((device, name))
    accelerators = [d for d, _ in pairs if d not in ("cpu", "cuda", "")]
    if accelerators:
        return accelerators[0]
    if any(c.startswith("mtia") for c in table.cats):
        return "mtia"
    if device_events or devices or any(name in ("nccl", "rccl") for _, name in pairs):
        return "cuda"
    return "cpu"
