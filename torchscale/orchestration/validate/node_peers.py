"""A GPU's matmul figure judged against the node's other GPUs as well as against its SKU.

Every GPU searches at once, sharing the node's power and cooling, and cloud nodes often cap
each GPU's power below the SKU's default: the SKU bar alone cannot tell a healthy capped node
from a faulty GPU; the GPU's peers can. The rules (a GPU lagging its peers; the whole node below
the SKU, power-capped or not) are docs/validate.md's table ('Matmul against the node's other
GPUs'). A capped node is at most WARN, not PASS: it trains below what its SKU can, which the
user should know; but no GPU of it is faulty, and a FAIL (validate exits 1) would say one is.

Pure functions over judged rows (validate/perf.py makes them).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.power_limit import PowerLimit, node_power_cap
from torchscale.orchestration.validate.check_result import CheckStatus, Measurement, worst
from torchscale.orchestration.validate.reference import (
    HEALTHY,
    expected_for,
    judge,
    thresholds_for,
)

# GPUs of one model measured together differ by a few percent (boost clocks, silicon); a GPU
# 10 % below the others' median is outside that, 20 % below is broken: the bars of a GPU against
# its SKU's healthy figure (reference.HEALTHY)
PEER_PASS = HEALTHY.pass_at
PEER_FAIL = HEALTHY.warn_at
PEER_CHECK_PREFIX = "matmul."
LOW = (CheckStatus.WARN, CheckStatus.FAIL)
# how to fix a GPU that lags or a node below its SKU (worded by
# contracts/wording/validate_measured.py)
POWER_HINT = "perf.fix_power_unknown"
CAPPED_HINT = "perf.fix_capped"
UNCAPPED_HINT = "perf.fix_uncapped"
LAGGING_HINT = "perf.fix_lagging"


def peer_status(peer_ratio: float) -> CheckStatus:
    """A GPU's verdict by its figure over its peers' median alone."""
    if peer_ratio >= PEER_PASS:
        return CheckStatus.PASS
    return CheckStatus.WARN if peer_ratio >= PEER_FAIL else CheckStatus.FAIL


def _node_below_sku(check: str, device_name: str, node_median: float) -> dict[str, float] | None:
    """The node median's ratio to the SKU's expected figure when it is below the SKU's PASS
    bar, else None. Only below: a median FAILed for being above a spec sheet is a measurement
    bug, which no power cap explains."""
    expected = expected_for(device_name, check)
    status, ratio, _ = judge(check, node_median, expected)
    if status not in LOW or expected is None or ratio is None:
        return None
    if ratio >= thresholds_for(check, expected).pass_at:
        return None
    return {"node_ratio": ratio, "expected": expected.value}


def judge_with_peers(
    rows: Sequence[Measurement],
    device_of: Mapping[int, str],
    power_of: Mapping[int, PowerLimit | None] | None = None,
) -> list[Measurement]:
    """`rows` with each GPU's matmul verdict weighed against its node's other GPUs;
    `device_of`: GPU index to device name (a GPU missing from it has no peers); `power_of`:
    GPU index to its power limits (None or missing: not read)."""
    power = power_of or {}
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for row in rows:
        name = device_of.get(row.gpu) if row.gpu is not None else None
        if name is not None and row.value is not None and row.check.startswith(PEER_CHECK_PREFIX):
            groups.setdefault((row.check, name), []).append(row)
    judged = {id(row): row for row in rows}
    for (check, name), mine in groups.items():
        if len(mine) < 2:
            continue
        node_median = statistics.median(r.value for r in mine if r.value is not None)
        node_low = _node_below_sku(check, name, node_median)
        cap, cap_figures = node_power_cap([power.get(r.gpu) for r in mine if r.gpu is not None])
        for row in mine:
            others = [r.value for r in mine if r is not row and r.value is not None]
            peers = Peers(
                statistics.median(others), len(others), node_median, node_low, cap, cap_figures
            )
            judged[id(row)] = _with_peers(
                row, peers, power.get(row.gpu) if row.gpu is not None else None
            )
    return [judged[id(row)] for row in rows]


@dataclass(frozen=True)
class Peers:
    """What one GPU is weighed against: the median of the node's other GPUs of its model, how
    many they are, the whole node's median and, when that is below the SKU's bar, its ratio to
    the SKU's figure; whether every GPU of them runs power-capped (None: unknown) and the
    limits' figures."""

    median: float
    count: int
    node_median: float
    node_below_sku: dict[str, float] | None
    power_capped: bool | None = None
    power: dict[str, Any] = field(default_factory=dict)


def _with_peers(row: Measurement, peers: Peers, power: PowerLimit | None) -> Measurement:
    assert row.value is not None
    ratio = row.value / peers.median if peers.median > 0 else 1.0
    data: dict[str, object] = {
        "peer_median": round(peers.median, 3),
        "peer_ratio": round(ratio, 3),
        "peers": peers.count,
        "node_median": round(peers.node_median, 3),
    }
    if power is not None and power.enforced_w is not None:
        data["power_limit_w"] = power.enforced_w
    if power is not None and power.default_w is not None:
        data["default_power_limit_w"] = power.default_w
    by_peers = peer_status(ratio)
    status, finding = row.status, row.finding
    sku = row.finding.model_dump() if row.finding is not None and row.expected is not None else None
    figures: dict[str, Any] = {"unit": row.unit, "sku": sku}
    # data's peer_verdict is a code (lags_peers, node_below_sku, with_peers): the words are
    # the finding's
    if by_peers is not CheckStatus.PASS:
        status = worst((by_peers, row.status))
        figures |= {"peer_ratio": ratio, "peers": peers.count, "peer_median": peers.median}
        finding = Finding(code="perf.lags_peers", figures=figures)
        data.update(peer_verdict="lags_peers", fix=LAGGING_HINT)
    elif row.status in LOW and peers.node_below_sku is not None:
        figures |= {"node_median": peers.node_median, **peers.node_below_sku}
        figures |= {"power": peers.power, "power_capped": peers.power_capped}
        finding = Finding(code="perf.node_below_sku", figures=figures)
        data.update(peer_verdict="node_below_sku", power_capped=peers.power_capped)
        if peers.power_capped:
            status = CheckStatus.WARN  # a FAIL would say a GPU is faulty: none is
            data["fix"] = CAPPED_HINT
        else:
            data["fix"] = UNCAPPED_HINT if peers.power_capped is False else POWER_HINT
    else:
        data.update(peer_verdict="with_peers")
    update = {"status": status, "finding": finding, "data": row.data | data}
    return row.model_copy(update=update)
