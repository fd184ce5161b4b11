"""Fleet view: which node or GPU of an allocation is worse than its peers (`fleet_outliers`, on
a robust scale, median and MAD, because one bad node must not move the yardstick it is judged
by, as it would move a mean and a standard deviation), and which inter-node link or node NIC is
slow (`find_slow_link`, by group testing: O(log N) collective runs over groups of nodes instead
of N(N-1)/2 pairs). Pure functions over measurements (docs/validate.md, "Fleet view").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import pandas as pd

from torchscale.contracts.errors import UsageError
from torchscale.contracts.wording.spell import format_value, plain_figure, robust_z

# MAD x 1.4826 estimates the standard deviation of a normal sample: the "robust sd".
MAD_TO_SD = 1.4826
OUTLIER_K = 3.5  # robust z beyond which a value is an outlier (Iglewicz and Hoaglin)
# A uniform fleet has a tiny MAD: without a floor, 0.1 % differences would be 3.5 robust sds.
# Below 5 % of the median a difference does not matter to a training job.
MIN_RELATIVE_GAP = 0.05
MIN_FLEET_NODES = 3  # a median of 2 values is their mean: no majority to compare with

VERDICT_OUTLIER = "outlier"
VERDICT_OK = "ok"
VERDICT_FEW_NODES = f"not judged: fewer than {MIN_FLEET_NODES} nodes"
VERDICT_NO_VALUE = "not judged: no value"

_INPUT_COLUMNS = ("node", "gpu", "check", "value", "higher_is_better")
_JUDGEMENT = ("fleet_median", "relative_gap", "robust_z", "verdict", "evidence")
FLEET_COLUMNS = [*_INPUT_COLUMNS[:4], *_JUDGEMENT]  # node, gpu, check, value, then the judgement


def _gpu(gpu: object) -> object:
    """The GPU index as given, None for a node-level row; a whole float (pandas turns a column
    of ints with nulls into floats) back to an int."""
    if gpu is None or pd.isna(gpu):
        return None
    if isinstance(gpu, float) and gpu.is_integer():
        return int(gpu)
    return gpu


def fleet_outliers(
    table: pd.DataFrame, k: float = OUTLIER_K, min_relative: float = MIN_RELATIVE_GAP
) -> pd.DataFrame:
    """Judge every row of `table` (columns node, gpu, check, value, higher_is_better; gpu is
    null for a node-level figure) against the fleet median of its check: an outlier when worse
    than the median by more than max(k robust sds, min_relative x |median|); the rule and why
    each term: docs/validate.md, "Fleet view". Returns one row per input row with the columns
    of FLEET_COLUMNS, in the input's order with index 0..n-1 (relative_gap and robust_z
    signed: value minus median)."""
    missing = [c for c in _INPUT_COLUMNS if c not in table.columns]
    if missing:
        raise UsageError(f"fleet table lacks the column(s) {', '.join(missing)}")
    if not (k > 0 and min_relative >= 0):
        raise UsageError("k must be > 0 and min_relative >= 0")
    table = table.reset_index(drop=True)
    records: list[dict[str, object]] = []
    positions: list[int] = []
    for check, rows in table.groupby("check", sort=True):
        directions = set(rows["higher_is_better"].astype(bool))
        if len(directions) != 1:
            raise UsageError(f"check {check}: higher_is_better differs between rows")
        higher_is_better = directions.pop()
        values = pd.to_numeric(rows["value"], errors="coerce")
        measured = values[values.notna() & values.map(math.isfinite)]
        n_nodes = rows.loc[measured.index, "node"].nunique()
        median = float(measured.median()) if len(measured) else math.nan
        robust_sd = float((measured - median).abs().median() * MAD_TO_SD) if len(measured) else 0.0
        limit = max(k * robust_sd, min_relative * abs(median)) if len(measured) else math.nan
        for index, row in rows.iterrows():
            positions.append(int(index))
            value = values.loc[index]
            gpu = _gpu(row["gpu"])
            where = f"{row['node']}" if gpu is None else f"{row['node']} GPU {gpu}"
            record: dict[str, object] = {
                "node": row["node"],
                "gpu": gpu,
                "check": check,
                "value": float(value),
                "fleet_median": median,
                "relative_gap": math.nan,
                "robust_z": math.nan,
            }
            records.append(record)
            if index not in measured.index:
                record.update(verdict=VERDICT_NO_VALUE, evidence=f"{where}: {check} has no value")
                continue
            if n_nodes < MIN_FLEET_NODES:
                few = f"{where}: {check} {plain_figure(value)}, measured on {n_nodes} node(s) only"
                record.update(verdict=VERDICT_FEW_NODES, evidence=few)
                continue
            delta = float(value) - median
            relative = delta / abs(median) if median != 0 else math.nan
            infinite = math.copysign(math.inf, delta) if delta != 0 else 0.0  # MAD 0
            z = delta / robust_sd if robust_sd > 0 else infinite
            worse_by = -delta if higher_is_better else delta
            record["relative_gap"] = relative
            record["robust_z"] = z
            record["verdict"] = VERDICT_OUTLIER if worse_by > limit else VERDICT_OK
            rel_text = format_value(relative, "change_pct") if math.isfinite(relative) else "n/a"
            record["evidence"] = (
                f"{where}: {check} {plain_figure(value)} vs fleet median {plain_figure(median)} "
                f"({rel_text}, robust z {robust_z(z)})"
            )
    result = pd.DataFrame.from_records(records, columns=FLEET_COLUMNS, index=positions)
    return result.sort_index()


# ---------------------------------------------------------------------------------------------
# slow-link search

SLOW_LINK_THRESHOLD = 0.2  # a group below the expected busbw by more than 20 % is slow


@dataclass(frozen=True)
class GroupMeasurement:
    """One collective run over `nodes`: its bus bandwidth and whether it was judged slow."""

    nodes: tuple[str, ...]
    busbw: float
    slow: bool


@dataclass
class SlowLinkResult:
    """What `find_slow_link` found: `suspect` is the pair (kind "link") or the one node (kind
    "node") to take out of the allocation, None when no group was slow; `measured` lists every
    group run, in order, as the evidence."""

    suspect: tuple[str, ...] | None
    kind: Literal["link", "node"] | None
    expected_busbw: float
    measured: list[GroupMeasurement] = field(default_factory=list)
    note: str = ""

    @property
    def measurements(self) -> int:
        return len(self.measured)


def max_slow_link_measurements(n_nodes: int) -> int:
    """The most collective runs `find_slow_link` makes for `n_nodes` nodes, with or without a
    reference busbw: 2 x ceil(log2 N) + 1 (7 for 8 nodes, 9 for 16, 11 for 32), against
    N(N-1)/2 runs to test every pair. Each halving costs at most 2 runs (both halves), the
    tail at most 3 (the pairs of a group of 3, the two checks of a slow pair with a third node,
    or the whole allocation before a search across the halves)."""
    if n_nodes < 2:
        raise UsageError("a link needs at least 2 nodes")
    return 2 * math.ceil(math.log2(n_nodes)) + 1


class _Search:
    """The state of one search: the measurements so far and the busbw a healthy group has."""

    def __init__(
        self, nodes: Sequence[str], measure: Callable[[Sequence[str]], float], threshold: float
    ) -> None:
        self.nodes = list(nodes)
        self.measure_fn = measure
        self.threshold = threshold
        self.expected = math.nan
        self.measured: list[GroupMeasurement] = []

    def measure(self, group: Sequence[str]) -> float:
        busbw = float(self.measure_fn(tuple(group)))
        if not math.isfinite(busbw) or busbw < 0:
            raise ValueError(f"measure returned {busbw} for {list(group)}")
        self.measured.append(GroupMeasurement(tuple(group), busbw, False))
        return busbw

    def is_slow(self, busbw: float) -> bool:
        return busbw < self.expected * (1 - self.threshold)

    def expect(self, busbw: float) -> None:
        """Take `busbw` as a healthy group's and judge every measurement so far against it."""
        self.expected = busbw
        self.measured = [replace(m, slow=self.is_slow(m.busbw)) for m in self.measured]

    def run(self, group: Sequence[str]) -> bool:
        """Measure `group`, judge it against the expected busbw and record the verdict."""
        busbw = self.measure(group)
        self.measured[-1] = replace(self.measured[-1], slow=self.is_slow(busbw))
        return self.measured[-1].slow

    def result(
        self, suspect: tuple[str, ...] | None, kind: Literal["link", "node"] | None, note: str
    ) -> SlowLinkResult:
        return SlowLinkResult(suspect, kind, self.expected, list(self.measured), note)

    def within(self, group: list[str]) -> SlowLinkResult:
        """`group` is known slow: the slow link has both ends in it, or the slow node is in it.
        Halve it while both halves keep >= 2 nodes; at 2-3 nodes, measure its pairs."""
        while len(group) >= 4:
            half_a, half_b = group[: len(group) // 2], group[len(group) // 2 :]
            if self.run(half_a):
                group = half_a
            elif self.run(half_b):
                group = half_b
            else:  # neither half is slow, the whole is: the link crosses the halves
                return self.across(half_a, half_b)
        if len(group) == 3:
            return self.triple(group)
        return self.pair(group[0], group[1])

    def across(self, side_a: list[str], side_b: list[str]) -> SlowLinkResult:
        """The slow link has one end in each side, and neither side alone is slow (so it is a
        link, not a node): binary-search each end (docs/validate.md, "Fleet view"), one run
        per halving: ceil(log2 |A|) + ceil(log2 |B|) runs."""
        while len(side_a) > 1:
            half = side_a[: len(side_a) // 2]
            side_a = half if self.run(half + side_b) else side_a[len(side_a) // 2 :]
        while len(side_b) > 1:
            half = side_b[: len(side_b) // 2]
            side_b = half if self.run(side_a + half) else side_b[len(side_b) // 2 :]
        why = "the halves are healthy on their own, so the slow path crosses them: a link"
        return self.result((side_a[0], side_b[0]), "link", why)

    def triple(self, group: list[str]) -> SlowLinkResult:
        """A slow group of 3: measure its 3 pairs. One slow pair is a link; two slow pairs
        sharing a node say that node's NIC is slow."""
        pairs = [(group[0], group[1]), (group[0], group[2]), (group[1], group[2])]
        slow = [p for p in pairs if self.run(p)]
        if len(slow) == 1:
            return self.result(slow[0], "link", "one slow pair in a slow group of 3")
        if len(slow) == 2:
            node = (set(slow[0]) & set(slow[1])).pop()
            return self.result((node,), "node", "both pairs through this node are slow")
        if not slow:
            return self.result(
                tuple(group), None, "the group of 3 is slow but none of its pairs: not one link"
            )
        return self.result(tuple(group), None, "all 3 pairs are slow: more than one fault")

    def pair(self, a: str, b: str) -> SlowLinkResult:
        """A slow pair: the link or one end's NIC. Run each end with a third node (2 runs):
        the end that is slow with a third node too is the slow node; neither, the link."""
        others = [n for n in self.nodes if n not in (a, b)]
        if not others:
            return self.result((a, b), "link", "2 nodes: a slow link cannot be told from a NIC")
        third = others[0]
        a_slow = self.run((a, third))
        b_slow = self.run((b, third))
        if a_slow and not b_slow:
            return self.result((a,), "node", f"{a} is slow with {b} and with {third}")
        if b_slow and not a_slow:
            return self.result((b,), "node", f"{b} is slow with {a} and with {third}")
        if not (a_slow or b_slow):
            return self.result((a, b), "link", f"{a} and {b} are each healthy with {third}")
        return self.result((a, b), None, "both ends are slow with a third node: several faults")


def find_slow_link(
    nodes: Sequence[str],
    measure: Callable[[Sequence[str]], float],
    reference_busbw: float | None = None,
    threshold: float = SLOW_LINK_THRESHOLD,
) -> SlowLinkResult:
    """Find one slow inter-node link, or one slow node (every link through it slow), by
    measuring the bus bandwidth of groups of nodes instead of every pair (the search and its
    cost: docs/validate.md, "Slow link"). `measure(group)` runs one collective (all_reduce)
    over `group` and returns its busbw; a group is slow when its busbw is below the expected
    one by more than `threshold`: `reference_busbw` when given (e.g. the SKU's figure), else
    the better of the two first halves (a healthy group's busbw does not depend on its size).
    One fault at a time is assumed."""
    nodes = list(nodes)
    if len(nodes) < 2:
        raise UsageError(f"a slow-link search needs at least 2 nodes, got {len(nodes)}")
    if len(set(nodes)) != len(nodes):
        raise UsageError("the node list names a node more than once")
    if not 0 < threshold < 1:
        raise UsageError(f"threshold must be between 0 and 1, got {threshold}")
    if reference_busbw is not None and not (math.isfinite(reference_busbw) and reference_busbw > 0):
        raise UsageError(f"reference busbw must be positive, got {reference_busbw}")
    search = _Search(nodes, measure, threshold)
    if reference_busbw is not None:
        search.expected = reference_busbw
        if not search.run(nodes):
            return search.result(None, None, "the whole allocation reaches the expected busbw")
        return search.within(nodes)
    if len(nodes) == 2:
        raise UsageError("2 nodes need a reference busbw: there is no other group to compare")
    if len(nodes) == 3:
        pairs = [(nodes[0], nodes[1]), (nodes[0], nodes[2]), (nodes[1], nodes[2])]
        search.expect(max(search.measure(p) for p in pairs))
        slow = [m.nodes for m in search.measured if m.slow]
        if not slow:
            return search.result(None, None, "the 3 pairs have the same busbw")
        if len(slow) == 1:
            return search.result(slow[0], "link", "one pair is slower than the other two")
        node = (set(slow[0]) & set(slow[1])).pop()
        return search.result((node,), "node", "both pairs through this node are slow")
    half_a, half_b = nodes[: len(nodes) // 2], nodes[len(nodes) // 2 :]
    search.expect(max(search.measure(half_a), search.measure(half_b)))
    if search.measured[0].slow:
        return search.within(half_a)
    if search.measured[1].slow:
        return search.within(half_b)
    if not search.run(nodes):
        return search.result(None, None, "both halves and the whole reach the same busbw")
    return search.across(half_a, half_b)
