"""Find the trace files of one job and read them one rank at a time.

Why one at a time: a job's traces together can be far larger than memory, so callers get an
iterator and keep one rank's table while they reduce it. Duplicate ranks are checked before the
first full read, from the few KB at the front of every file: Kineto writes `distributedInfo`
before `traceEvents`, so its rank costs a partial decompression, not a parse. A file whose
front holds no rank (another writer's key order, no `distributedInfo`) falls back to the rank
in its file name, and failing that is checked when it is read: a duplicate found then still
raises, naming both files, but only after the ranks before it were yielded.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from torchscale.contracts.errors import TraceError, describe_os_error
from torchscale.offline.traces.kineto import rank_from_file_name, read_header, read_kineto
from torchscale.offline.traces.rank_trace import RankTrace

SNIFF_BYTES = 1 << 16  # enough for schemaVersion + deviceProperties + distributedInfo
_MARKERS = (b'"traceEvents"', b'"schemaVersion"')

Reader = Callable[[Path], RankTrace]


def find_traces(directory: Path) -> list[Path]:
    """Trace files in `directory` and its direct subdirectories (`*.json`, `*.json.gz`, which
    covers `*.pt.trace.json[.gz]`), sorted; other JSON (analysis.json, configs) is skipped by
    looking for `traceEvents`/`schemaVersion` in its first bytes. A trace file given instead of
    a directory is returned alone. An empty list when there are none (a caller may then look
    for other formats); TraceError for a missing directory or a file that is no trace."""
    if not directory.exists():
        raise TraceError(f"{directory}: no such directory")
    if directory.is_file():
        if _looks_like_trace(directory):
            return [directory]
        raise TraceError(f"{directory}: not a trace file (no traceEvents near its start)")
    if not directory.is_dir():
        raise TraceError(f"{directory}: not a directory")
    try:
        candidates = [
            p
            for pattern in ("*.json", "*.json.gz", "*/*.json", "*/*.json.gz")
            for p in directory.glob(pattern)
            if p.is_file()
        ]
    except OSError as exc:
        raise TraceError(f"{directory}: cannot list: {describe_os_error(exc)}") from None
    return sorted({p for p in candidates if _looks_like_trace(p)})


def _looks_like_trace(path: Path) -> bool:
    """First bytes mention traceEvents or schemaVersion. A `.gz` that cannot even be
    decompressed, or a file that cannot be read, counts as a trace, so that reading it
    reports exactly what is wrong instead of the file silently going missing."""
    try:
        with path.open("rb") as raw:
            head = raw.read(SNIFF_BYTES)
            if head[:2] == b"\x1f\x8b":
                raw.seek(0)
                with gzip.GzipFile(fileobj=raw) as unzipped:
                    head = unzipped.read(SNIFF_BYTES)
    except (EOFError, gzip.BadGzipFile, zlib.error):
        return path.name.endswith(".gz")
    except OSError:
        return True
    return any(marker in head for marker in _MARKERS)


def read_rank_traces(directory: Path, reader: Reader = read_kineto) -> Iterator[RankTrace]:
    """Every rank's trace, lowest rank first, read one at a time as the iterator advances.
    TraceError at once (before any full read) when the directory holds no traces or two
    files' headers or names claim the same rank; later, from the iterator, when a file cannot
    be read or a duplicate shows only once files are read."""
    paths = find_traces(directory)
    if not paths:
        raise TraceError(
            f"{directory}: no trace files (*.json or *.json.gz holding traceEvents) "
            "here or one level down"
        )
    cheap = {path: _cheap_rank(path) for path in paths}
    owner: dict[int, Path] = {}
    for path, rank in cheap.items():
        if rank is None:
            continue
        if rank in owner:
            raise _duplicate(rank, owner[rank], path)
        owner[rank] = path
    return _read_in_order(paths, cheap, reader)


def _read_in_order(
    paths: list[Path], cheap: dict[Path, int | None], reader: Reader
) -> Iterator[RankTrace]:
    order = sorted(paths, key=lambda p: (cheap[p] is None, cheap[p] or 0, str(p)))
    seen: dict[int, Path] = {}
    for path in order:
        trace = reader(path)
        if trace.rank in seen:
            raise _duplicate(trace.rank, seen[trace.rank], path)
        seen[trace.rank] = path
        yield trace


def _cheap_rank(path: Path) -> int | None:
    """The rank from the front of the file, else from its name; None when neither says."""
    header = read_header(path)
    info = header.get("distributedInfo") if header else None
    if isinstance(info, dict):
        rank = info.get("rank")
        if isinstance(rank, int) and not isinstance(rank, bool):
            return rank
    return rank_from_file_name(path)


def _duplicate(rank: int, first: Path, second: Path) -> TraceError:
    return TraceError(f"rank {rank} appears twice: {first} and {second}")
