"""What may be ranked, and is the first of a ranking clearly ahead of the second? Pure
functions, no I/O.

Every surface that ranks or compares configurations (the report's best, headline, summary,
strategies and GPU tables, the workload level's compiled/eager) takes its cells through
`comparable`: FSDP on one device shards nothing (`shards_nothing`), so its speed and memory
are FSDP2's machinery over a whole model, not FSDP's, and it is never ranked or compared.

A "best configuration" read off the highest median can change from one run of a sweep to the
next when the top two are inside each other's noise (the summary's best changed between two
runs of the same config). `lead` says by how much the first is ahead, as the ratio of their
medians with its 95 % interval (`uncertainty.ratio_of_medians`: a percentile bootstrap from 4
figures a side, Welch's t on the log ratio below that), and `judge_lead` judges it by that
interval alone, as a finding: clear where the whole interval lies above 0 and is no wider
than the lead; ahead but unsized where it lies above 0 yet is wider than the lead (the order
holds, its size is unknown); within noise where it reaches 0. One figure a side has no
interval: its spread is unknown, never clear.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.figures import too_wide
from torchscale.offline.analysis.numbers import finite, parse_repeats
from torchscale.offline.analysis.regressions import RUN_COLUMN, RUNS_SUFFIX
from torchscale.offline.analysis.uncertainty import ratio_method, ratio_of_medians


def shards_nothing(strategy: Any, world_size: Any) -> bool:
    """FSDP on one device: nothing to shard, so it measures FSDP2's per-unit machinery over a
    whole model. The one rule by which a cell is left out of every ranking and comparison."""
    world = finite(world_size)
    return strategy == "fsdp" and world is not None and round(world) == 1


def row_shards_nothing(row: Mapping[str, Any]) -> bool:
    """`shards_nothing` of a cells-table row."""
    return shards_nothing(row.get("strategy"), row.get("world_size"))


FSDP_ON_ONE = "ranking.fsdp_on_one"


def fsdp_on_one(cells: int = 1) -> Finding:
    """The finding of `cells` cells left out of rankings and comparisons as FSDP on one device."""
    return Finding(code=FSDP_ON_ONE, figures={"cells": cells})


def shares_gpu(ranks_per_gpu: Any) -> bool:
    """Several ranks on one GPU (launcher.ranks_per_gpu): a stand-in for a multi-GPU cell
    (gloo through host memory, the ranks' kernels on one GPU), never ranked, compared, scaled
    or forecast with cells that had a GPU per rank, nor among themselves."""
    ranks = finite(ranks_per_gpu)
    return ranks is not None and round(ranks) > 1


def row_shares_gpu(row: Mapping[str, Any]) -> bool:
    """`shares_gpu` of a cells-table row (tables written before the column: none share)."""
    return shares_gpu(row.get("ranks_per_gpu"))


def left_out(row: Mapping[str, Any]) -> bool:
    """A row no ranking or comparison takes: FSDP on one device, or ranks sharing a GPU."""
    return row_shards_nothing(row) or row_shares_gpu(row)


SHARED_GPU_LEFT_OUT = "ranking.shared_gpu"


def why_left_out(row: Mapping[str, Any]) -> Finding | None:
    """The finding of a row no ranking or comparison takes (`left_out`), None for the rest."""
    if row_shares_gpu(row):
        return Finding(code=SHARED_GPU_LEFT_OUT, figures={"cells": 1})
    return fsdp_on_one() if row_shards_nothing(row) else None


def left_out_findings(frame: pd.DataFrame) -> list[Finding]:
    """Why `frame`'s cells that `comparable` drops are left out, one finding per rule with
    its count of cells (none where every cell may be ranked)."""
    if frame.empty:
        return []
    rows = frame.to_dict("records")
    shared = sum(row_shares_gpu(r) for r in rows)
    fsdp = sum(row_shards_nothing(r) and not row_shares_gpu(r) for r in rows)
    findings = [fsdp_on_one(fsdp)] if fsdp else []
    if shared:
        findings.append(Finding(code=SHARED_GPU_LEFT_OUT, figures={"cells": shared}))
    return findings


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`'s cells that may be ranked and compared: all but those that shard nothing and
    those whose ranks shared a GPU."""
    if frame.empty:
        return frame
    keep = [True] * len(frame)
    if "strategy" in frame.columns and "world_size" in frame.columns:
        pairs = zip(frame["strategy"], frame["world_size"], strict=True)
        keep = [not shards_nothing(strategy, world) for strategy, world in pairs]
    if "ranks_per_gpu" in frame.columns:
        keep = [k and not shares_gpu(r) for k, r in zip(keep, frame["ranks_per_gpu"], strict=True)]
    return frame[keep]


def units(row: Mapping[str, Any]) -> tuple[list[float], str]:
    """A pooled cell's throughput per run (several runs), else per repeat, else its median:
    the units its interval is over, and what they are ('runs', 'repeats')."""
    runs = finite(row.get(RUN_COLUMN)) or 1
    if runs > 1:
        figures = parse_repeats(row.get(f"samples_per_s{RUNS_SUFFIX}"))
        if figures:
            return figures, "runs"
    figures = parse_repeats(row.get("samples_per_s_repeats"))
    if figures:
        return figures, "repeats"
    value = finite(row.get("samples_per_s"))
    return ([value] if value is not None else []), "repeats"


def unit_figures(row: Mapping[str, Any]) -> list[float]:
    """`units`' figures."""
    return units(row)[0]


@dataclass(frozen=True)
class Lead:
    """How far the first is ahead of the second: ratio - 1 with its 95 % interval."""

    change: float
    low: float | None
    high: float | None
    method: str

    @property
    def clear(self) -> bool:
        """The whole 95 % interval of the ratio lies above 1 (first ahead beyond noise)."""
        return self.low is not None and self.low > 0.0

    @property
    def wider_than_itself(self) -> bool:
        """The interval is wider than the lead (`figures.too_wide`): it says the order at most,
        not the size."""
        return too_wide(self.change, self.low, self.high)


def judge_lead(ahead: Lead | None, repeats: int) -> Finding:
    """The lead judged by its interval (`repeats`: the fewer units a side), as a finding:
    'lead.clear', 'lead.ahead_unsized', 'lead.within_noise' or 'lead.spread_unknown'."""
    if ahead is None or ahead.low is None or ahead.high is None:
        change = ahead.change if ahead is not None else None
        return Finding(code="lead.spread_unknown", figures={"change": change, "repeats": repeats})
    figures = {"change": ahead.change, "low": ahead.low, "high": ahead.high, "repeats": repeats}
    if not ahead.clear:
        return Finding(code="lead.within_noise", figures=figures)
    code = "lead.ahead_unsized" if ahead.wider_than_itself else "lead.clear"
    return Finding(code=code, figures=figures)


def lead(first: Sequence[float], second: Sequence[float], *, scale: float = 1.0) -> Lead | None:
    """How far `first` is ahead of `second` (per-repeat or per-run figures, higher is better),
    as median(first) / median(second) x `scale` - 1 with its 95 % interval (`scale`: a known
    constant between the two, e.g. the ratio of their prices when comparing cost through
    throughput). None when a side has no positive figure."""
    top = positive(first)
    bottom = positive(second)
    if not top or not bottom:
        return None
    ratio, low, high = ratio_of_medians(top, bottom)
    method = ratio_method(len(top), len(bottom))
    if low is None or high is None:
        return Lead(ratio * scale - 1.0, None, None, method)
    return Lead(ratio * scale - 1.0, low * scale - 1.0, high * scale - 1.0, method)


def positive(figures: Sequence[float]) -> list[float]:
    """The figures a ratio can use: positive ones."""
    return [float(v) for v in figures if v is not None and v > 0]
