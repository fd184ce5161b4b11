"""Interval arithmetic on numpy arrays, shared by the trace analyses.

Everything here is vectorised (sort + cumulative max, searchsorted): a million intervals merge in
tens of milliseconds, where a Python loop over events would take seconds. An `Intervals` value is
always *merged*: sorted, disjoint, non-empty intervals, so that lengths inside any window come
from a cumulative sum and two binary searches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Intervals:
    """Merged half-open intervals [starts[i], ends[i]): sorted, disjoint, each non-empty."""

    starts: FloatArray
    ends: FloatArray

    @property
    def count(self) -> int:
        """Number of intervals (not their length)."""
        return int(self.starts.size)

    def total(self) -> float:
        """Covered length."""
        return float(np.sum(self.ends - self.starts))

    def within(self, lo: npt.ArrayLike, hi: npt.ArrayLike) -> FloatArray:
        """Covered length inside each window [lo[i], hi[i]) (vectorised over windows)."""
        lo_a = np.asarray(lo, dtype=np.float64)
        hi_a = np.maximum(np.asarray(hi, dtype=np.float64), lo_a)
        return _covered_before(self, hi_a) - _covered_before(self, lo_a)


EMPTY = Intervals(np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64))


def merge(starts: npt.ArrayLike, ends: npt.ArrayLike) -> Intervals:
    """Union of possibly overlapping or nested intervals; empty and NaN ones are dropped.

    Sort by start, then a running maximum of ends: a new run begins where a start lies beyond
    every earlier end. Touching intervals ([0, 1) and [1, 2)) merge."""
    s = np.asarray(starts, dtype=np.float64).ravel()
    e = np.asarray(ends, dtype=np.float64).ravel()
    keep = e > s  # also drops NaN
    s, e = s[keep], e[keep]
    if s.size == 0:
        return EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return Intervals(s[first], run_end[last])


def from_frame(frame: pd.DataFrame, start: str = "ts", dur: str = "dur") -> Intervals:
    """Merged intervals of a table with a start and a duration column."""
    if frame.empty:
        return EMPTY
    ts = frame[start].to_numpy(dtype=np.float64, na_value=np.nan)
    d = frame[dur].to_numpy(dtype=np.float64, na_value=np.nan)
    return merge(ts, ts + d)


def _covered_before(iv: Intervals, t: FloatArray) -> FloatArray:
    """F(t) = covered length of (-inf, t): cumulative length of whole intervals before t plus
    the covered part of the one containing t."""
    if not iv.count:
        return np.zeros_like(t, dtype=np.float64)
    cum = np.concatenate(([0.0], np.cumsum(iv.ends - iv.starts)))
    k = np.searchsorted(iv.starts, t, side="right") - 1
    kk = np.clip(k, 0, None)
    inside = np.minimum(t, iv.ends[kk]) - iv.starts[kk]
    return np.where(k >= 0, cum[kk] + inside, 0.0)


def contains(iv: Intervals, points: FloatArray) -> BoolArray:
    """Whether each point lies inside the intervals (half-open)."""
    return window_index(iv.starts, iv.ends, points) >= 0


def combine(sets: Sequence[Intervals], keep: Callable[..., Any]) -> Intervals:
    """Boolean algebra on interval sets: cut the line at every endpoint, evaluate
    `keep(covered_0, covered_1, ...)` (boolean arrays, one per set) on each elementary segment,
    merge the kept segments. E.g. `combine([a, b], lambda x, y: x & ~y)` is a minus b."""
    ends = [np.concatenate((iv.starts, iv.ends)) for iv in sets if iv.count]
    if not ends:
        return EMPTY
    points = np.unique(np.concatenate(ends))
    if points.size < 2:
        return EMPTY
    left = points[:-1]
    mask = np.asarray(keep(*(contains(iv, left) for iv in sets)), dtype=bool)
    return merge(left[mask], points[1:][mask])


def union(*sets: Intervals) -> Intervals:
    """Union of merged sets."""
    parts = [iv for iv in sets if iv.count]
    if not parts:
        return EMPTY
    if len(parts) == 1:
        return parts[0]
    return merge(
        np.concatenate([iv.starts for iv in parts]), np.concatenate([iv.ends for iv in parts])
    )


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """a and b."""
    if not a.count or not b.count:
        return EMPTY
    return combine([a, b], lambda x, y: x & y)


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """a minus b."""
    if not a.count or not b.count:
        return a
    return combine([a, b], lambda x, y: x & ~y)


def grouped_union_length(frame: pd.DataFrame, keys: list[str], start: str, end: str) -> pd.Series:
    """Union length of [start, end) per group of `keys` (a Series indexed by the keys).

    Vectorised: sorted by (keys, start), each interval adds max(0, end - max(start, M)) where M
    is the largest end seen earlier in its group. Used on the small cross-rank tables, where
    concurrent collectives (gloo runs buckets on two threads) must not count twice."""
    if frame.empty:  # keep the key names, so that callers can reset_index and merge
        index = pd.MultiIndex.from_arrays([frame[k].iloc[0:0] for k in keys], names=keys)
        return pd.Series(np.empty(0), index=index if len(keys) > 1 else index.levels[0])
    d = frame[[*keys, start, end]].sort_values([*keys, start], kind="stable")
    running = d.groupby(keys, sort=False)[end].cummax()
    prev = running.groupby([d[k] for k in keys], sort=False).shift(1)
    s = d[start].to_numpy(dtype=np.float64)
    e = d[end].to_numpy(dtype=np.float64)
    p = prev.to_numpy(dtype=np.float64, na_value=-np.inf)
    d = d.assign(_add=np.maximum(0.0, e - np.maximum(s, p)))
    return d.groupby(keys, sort=True)["_add"].sum()


def window_index(starts: FloatArray, ends: FloatArray, points: FloatArray) -> npt.NDArray[np.int64]:
    """Index of the window [starts[i], ends[i]) holding each point, -1 where none does.
    Windows must be sorted and disjoint (profiler steps are)."""
    if starts.size == 0:
        return np.full(points.shape, -1, dtype=np.int64)
    k = np.searchsorted(starts, points, side="right") - 1
    kk = np.clip(k, 0, None)
    ok = (k >= 0) & (points < ends[kk])
    return np.where(ok, k, -1).astype(np.int64)


def clip_pieces(
    iv: Intervals, lo: npt.ArrayLike, hi: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int64]]:
    """The pieces of `iv` inside each query [lo[i], hi[i]), vectorised: returns (piece starts,
    piece ends, index i of the query each piece belongs to). Lets a caller intersect many small
    intervals with one set and still merge the pieces per group afterwards."""
    lo_a = np.asarray(lo, dtype=np.float64)
    hi_a = np.asarray(hi, dtype=np.float64)
    if not iv.count or lo_a.size == 0:
        empty = np.empty(0, dtype=np.float64)
        return empty, empty, np.empty(0, dtype=np.int64)
    first = np.searchsorted(iv.ends, lo_a, side="right")  # first interval ending after lo
    stop = np.searchsorted(iv.starts, hi_a, side="left")  # intervals starting before hi
    counts = np.maximum(stop - first, 0)
    owner = np.repeat(np.arange(lo_a.size, dtype=np.int64), counts)
    offsets = np.cumsum(counts) - counts
    idx = first[owner] + (np.arange(owner.size) - offsets[owner])
    p_lo = np.maximum(iv.starts[idx], lo_a[owner])
    p_hi = np.minimum(iv.ends[idx], hi_a[owner])
    keep = p_hi > p_lo
    return p_lo[keep], p_hi[keep], owner[keep]


def grouped_merge(frame: pd.DataFrame, keys: list[str], start: str, end: str) -> pd.DataFrame:
    """Union of [start, end) per group of `keys`, as merged rows (keys..., start, end),
    vectorised: sorted by (keys, start), a new run begins at a group change or where a start
    lies beyond every earlier end of its group."""
    if frame.empty:
        return frame[[*keys, start, end]].iloc[0:0]
    d = frame[[*keys, start, end]].sort_values([*keys, start], kind="stable")
    d = d[d[end] > d[start]]
    if d.empty:
        return d
    running = d.groupby(keys, sort=False)[end].cummax()
    prev = running.groupby([d[k] for k in keys], sort=False).shift(1)
    new_run = prev.isna().to_numpy() | (
        d[start].to_numpy() > prev.to_numpy(np.float64, na_value=-np.inf)
    )
    run = np.cumsum(new_run)
    out = (
        d.assign(_run=run)
        .groupby("_run", sort=True)
        .agg(**{k: (k, "first") for k in keys}, **{start: (start, "min"), end: (end, "max")})
    )
    return out.reset_index(drop=True)


def slices_union(
    starts: FloatArray,
    ends: FloatArray,
    first: npt.NDArray[np.int64],
    stop: npt.NDArray[np.int64],
    groups: npt.NDArray[np.int64] | None = None,
) -> FloatArray:
    """Union length of the intervals (starts[j], ends[j]) for j in first[i]:stop[i], per slice
    i, or per `groups[i]` (ids 0..G-1) when given; vectorised, slices may overlap."""
    size = first.size if groups is None else (int(groups.max()) + 1 if groups.size else 0)
    counts = np.maximum(stop - first, 0)
    if int(counts.sum()) == 0:
        return np.zeros(size)
    owner = np.repeat(np.arange(first.size, dtype=np.int64), counts)
    offsets = np.cumsum(counts) - counts
    idx = first[owner] + (np.arange(owner.size) - offsets[owner])
    label = owner if groups is None else groups[owner]
    frame = pd.DataFrame({"g": label, "s": starts[idx], "e": ends[idx]})
    lengths = grouped_union_length(frame, ["g"], "s", "e")
    out = np.zeros(size)
    out[lengths.index.to_numpy(dtype=np.int64)] = lengths.to_numpy(dtype=np.float64)
    return out
