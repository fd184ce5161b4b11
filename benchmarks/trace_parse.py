"""Which JSON parser should read Kineto traces? Speed and peak memory of each, on real files.

Every candidate does the same job: parse one trace and pull out, for each complete ("X")
event, name, category, ts, dur, tid, and the args the table needs (correlation id; the
collective metadata on collective events). Each runs in its own fresh process, so peak memory
is that process's max RSS growth over its size just before parsing (imports excluded). MB/s
counts uncompressed JSON bytes over CPU time (`process_time`, best of `--repeat` runs: the
machine is shared; wall time is printed too). `torchscale` is the chosen implementation, end
to end: `read_kineto`, which also classifies every event and builds the final DataFrame.

    python benchmarks/make_trace.py /tmp/big --ranks 1 --steps 300 --events-per-step 2500
    python benchmarks/trace_parse.py /tmp/big/rank0.trace.json \\
        /work/shared/traces/mtia_trace_single_rank/mtia_rank_0.json.gz [--parsers json,orjson]

Candidates: json (stdlib, baseline), orjson, msgspec-struct (typed Structs of the needed
fields over the whole document, `args` kept as msgspec.Raw and decoded only for the events that
need them), msgspec-raw-list (`traceEvents` as list[msgspec.Raw], each then decoded),
ijson (yajl2_c, streaming events as dicts from the decompressed stream), torchscale (msgspec
on streamed pieces of ~8 MB cut at event boundaries; see torchscale/offline/traces/kineto.py).
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

PARSERS = ("json", "orjson", "msgspec-struct", "msgspec-raw-list", "ijson", "torchscale")
ARG_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver"})
COLL_NAMES = frozenset({"record_param_comms"})


def _read_all(path: Path) -> bytes:
    with path.open("rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        with gzip.open(path, "rb") as g:
            return g.read()
    return path.read_bytes()


def _needs_args(name: str, cat: str) -> bool:
    return cat in ARG_CATS or name in COLL_NAMES or name.startswith("nccl")


class _Columns:
    """What every candidate produces: plain lists, one per needed field."""

    def __init__(self) -> None:
        self.name: list[Any] = []
        self.cat: list[Any] = []
        self.ts: list[Any] = []
        self.dur: list[Any] = []
        self.tid: list[Any] = []
        self.corr: list[Any] = []
        self.meta: list[Any] = []

    def add_dict(self, e: dict[str, Any]) -> None:
        if e.get("ph") != "X":
            return
        name, cat = e.get("name", ""), e.get("cat", "")
        self.name.append(name)
        self.cat.append(cat)
        self.ts.append(e.get("ts"))
        self.dur.append(e.get("dur"))
        self.tid.append(e.get("tid"))
        args = e.get("args") or {}
        self.corr.append(args.get("correlation"))
        if "Collective name" in args:
            self.meta.append((args.get("Collective name"), args.get("In msg nelems")))


def _dict_events(events: Iterable[dict[str, Any]]) -> int:
    cols = _Columns()
    for e in events:
        cols.add_dict(e)
    return len(cols.ts)


def parse_json(path: Path) -> tuple[int, int]:
    data = _read_all(path)
    doc = json.loads(data)
    return len(data), _dict_events(doc["traceEvents"])


def parse_orjson(path: Path) -> tuple[int, int]:
    import orjson

    data = _read_all(path)
    doc = orjson.loads(data)
    return len(data), _dict_events(doc["traceEvents"])


class _Args(msgspec.Struct, gc=False):
    correlation: Any = None
    coll_name: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")


class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    name: Any = ""
    cat: Any = ""
    ts: Any = None
    dur: Any = None
    tid: Any = None
    args: msgspec.Raw = msgspec.Raw(b"null")


class _Doc(msgspec.Struct):
    traceEvents: list[_Event]


class _RawDoc(msgspec.Struct):
    traceEvents: list[msgspec.Raw]


def parse_msgspec_struct(path: Path) -> tuple[int, int]:
    data = _read_all(path)
    doc = msgspec.json.decode(data, type=_Doc)
    args_dec = msgspec.json.Decoder(_Args)
    cols = _Columns()
    for e in doc.traceEvents:
        if e.ph != "X":
            continue
        cols.name.append(e.name)
        cols.cat.append(e.cat)
        cols.ts.append(e.ts)
        cols.dur.append(e.dur)
        cols.tid.append(e.tid)
        if _needs_args(e.name, e.cat):
            a = args_dec.decode(e.args)
            cols.corr.append(a.correlation)
            if a.coll_name is not None:
                cols.meta.append((a.coll_name, a.in_nelems))
        else:
            cols.corr.append(None)
    return len(data), len(cols.ts)


def parse_msgspec_raw_list(path: Path) -> tuple[int, int]:
    data = _read_all(path)
    doc = msgspec.json.decode(data, type=_RawDoc)
    event_dec = msgspec.json.Decoder(_Event)
    args_dec = msgspec.json.Decoder(_Args)
    cols = _Columns()
    for raw in doc.traceEvents:
        e = event_dec.decode(raw)
        if e.ph != "X":
            continue
        cols.name.append(e.name)
        cols.cat.append(e.cat)
        cols.ts.append(e.ts)
        cols.dur.append(e.dur)
        cols.tid.append(e.tid)
        if _needs_args(e.name, e.cat):
            a = args_dec.decode(e.args)
            cols.corr.append(a.correlation)
            if a.coll_name is not None:
                cols.meta.append((a.coll_name, a.in_nelems))
        else:
            cols.corr.append(None)
    return len(data), len(cols.ts)


class _Counting:
    """A read()-able stream that counts the bytes that pass through it."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.n = 0

    def read(self, size: int = -1) -> bytes:
        block: bytes = self.raw.read(size)
        self.n += len(block)
        return block


def parse_ijson(path: Path) -> tuple[int, int]:
    import ijson

    with path.open("rb") as f:
        magic = f.read(2)
    opener: Callable[[Path], Any] = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as raw:
        stream = _Counting(raw)
        n = _dict_events(ijson.items(stream, "traceEvents.item", use_float=True))
        return stream.n, n


def parse_torchscale(path: Path) -> tuple[int, int]:
    from torchscale.offline.traces.kineto import read_kineto

    trace = read_kineto(path)
    return trace.bytes_read, len(trace.events)


FUNCS: dict[str, Callable[[Path], tuple[int, int]]] = {
    "json": parse_json,
    "orjson": parse_orjson,
    "msgspec-struct": parse_msgspec_struct,
    "msgspec-raw-list": parse_msgspec_raw_list,
    "ijson": parse_ijson,
    "torchscale": parse_torchscale,
}


def _rss_kib() -> int:
    """Current resident set size (KiB), from /proc where there is one."""
    try:
        fields = Path("/proc/self/statm").read_text().split()
        import os

        return int(fields[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_one(parser: str, path: Path, repeat: int) -> dict[str, Any]:
    """In this (fresh) process: import, measure the baseline, parse `repeat` times. Speed is
    the best run (a shared machine only ever slows a run down); peak memory is the process's
    max RSS growth, which a second run of the same parse does not raise."""
    if parser == "torchscale":
        import torchscale.offline.traces.kineto  # noqa: F401  (imports are not parse time)
    for mod in ("msgspec", "orjson", "ijson", "pandas", "numpy"):
        __import__(mod)
    base = _rss_kib()
    best_wall = best_cpu = float("inf")
    nbytes = events = 0
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        nbytes, events = FUNCS[parser](path)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "bytes": nbytes,
        "events": events,
        "wall": best_wall,
        "cpu": best_cpu,
        "peak_kib": peak - base,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--parsers", default=",".join(PARSERS))
    ap.add_argument("--repeat", type=int, default=3, help="runs per parser; the best is shown")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one parser here
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.files[0], args.repeat)))
        return
    for path in args.files:
        rows = []
        for parser in args.parsers.split(","):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    parser,
                    "--repeat",
                    str(args.repeat),
                    str(path),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if out.returncode != 0:
                print(f"{parser}: failed: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            rows.append((parser, json.loads(out.stdout)))
        _print_table(path, rows)


def _print_table(path: Path, rows: list[tuple[str, dict[str, Any]]]) -> None:
    if not rows:
        return
    size = rows[0][1]["bytes"]
    base = dict(rows).get("json")
    print(
        f"\n{path}  ({size / 1e6:.1f} MB uncompressed, {path.stat().st_size / 1e6:.1f} MB on disk)"
    )
    print(
        f"{'parser':18s} {'MB/s cpu':>9s} {'MB/s wall':>10s} {'x json':>7s} "
        f"{'peak MB':>8s} {'peak/file':>9s} {'x json':>7s} {'events':>9s}"
    )
    for parser, r in rows:
        mbs = r["bytes"] / r["cpu"] / 1e6
        peak = r["peak_kib"] * 1024 / 1e6
        speed_x = f"{(base['cpu'] / r['cpu']):.2f}" if base else "-"
        mem_x = f"{(r['peak_kib'] / base['peak_kib']):.2f}" if base else "-"
        print(
            f"{parser:18s} {mbs:9.0f} {r['bytes'] / r['wall'] / 1e6:10.0f} {speed_x:>7s} "
            f"{peak:8.0f} {peak * 1e6 / r['bytes']:9.2f} {mem_x:>7s} {r['events']:9d}"
        )


if __name__ == "__main__":
    main()
