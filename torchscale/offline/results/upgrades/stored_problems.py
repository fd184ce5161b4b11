"""The diagnosis' ranked problems of schema 16-19 (and profile analyses of schema 9 or older)
were stored as sentences (`title`, `evidence`, `recommendation`); from result schema 20 a
problem stores its code and figures (contracts/wording/problems.py words them). A stored
problem becomes its code where today's words of a code, made from the figures the sentences
and the problem's own cost hold, are exactly the stored ones (the straggler's busy-machine
caveat, which the diagnosis stores once, left out); any other stays as stored
(`problem.stored`, the schema's reading). Recognised: data waits, launch waits, exposed
communication and load imbalance without a per-rank wait line.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import Problem

Figures = dict[str, Any]
DEVICES = {"rank": "cpu", "GPU": "cuda", "device": "xpu"}
_PCT = r"(-?[\d.]+) %"


def _device(word: str) -> str:
    return DEVICES.get(word, "cuda")


def _pct(text: str) -> float:
    return float(text) / 100.0


def _data_wait(title: str, evidence: list[str], cost: Any) -> Iterator[Finding]:
    if title != "Training waits for data":
        return
    figures: Figures = {"device": "cpu", "data": cost, "worst_rank": None, "worst_share": None}
    if len(evidence) > 1:
        m = re.fullmatch(rf"slowest: (?:rank (\d+)|(GPU|device)-(\d+)) at {_PCT} of its step",
                         evidence[1])  # fmt: skip
        if m is None:
            return
        figures["device"] = "cpu" if m[1] is not None else _device(m[2])
        figures["worst_rank"] = int(m[1] if m[1] is not None else m[3])
        figures["worst_share"] = _pct(m[4])
    yield Finding(code="problem.data_wait", figures=figures)


def _launch_wait(title: str, evidence: list[str], cost: Any) -> Iterator[Finding]:
    m = re.fullmatch(r"(GPU|device) idle waiting for the host to launch work", title)
    if m is not None:
        figures = {"device": _device(m[1]), "host_wait": cost}
        yield Finding(code="problem.launch_wait", figures=figures)


def _exposed_comm(title: str, evidence: list[str], cost: Any) -> Iterator[Finding]:
    m = re.fullmatch(r"Exposed (?:(\S+) )?communication", title)
    if m is None:
        return
    comm = next((re.search(rf"hidden or not: {_PCT}", e) for e in evidence if "or not:" in e), None)
    overlap = next((re.search(r"overlap: (\d+) %", e) for e in evidence if "overlap:" in e), None)
    for strategy, gloo, nodes in itertools.product(
        (None, "tp", "pp", "hybrid"), (True, False), (None, 1)
    ):
        yield Finding(
            code="problem.exposed_comm",
            figures={
                "backend": m[1],
                "exposed": cost,
                "waits_known": "waiting for peers excluded" in evidence[0],
                "comm_frac": _pct(comm[1]) if comm is not None else None,
                "overlap_pct": float(overlap[1]) if overlap is not None else None,
                "strategy": strategy,
                "nodes": nodes,
                "gloo": gloo,
            },
        )


IMBALANCE_TITLES = (
    ("problem.imbalance.host", r"Ranks wait for (?:rank (\d+)|(GPU|device)-(\d+)), which the "
     r"host held back \(it waited for a CPU\)"),
    ("problem.imbalance.disputed", r"Waiting for peers: the slowest rank's own work is disputed "
     r"by other evidence()()()"),
    ("problem.imbalance.waited_for", r"Ranks wait for (?:rank (\d+)|(GPU|device)-(\d+)), though "
     r"its measured work is not significantly slower"),
    ("problem.imbalance.turns", r"Load imbalance: ranks take turns waiting for each other()()()"),
)  # fmt: skip


def _imbalance(title: str, evidence: list[str], cost: Any, verdict: Any) -> Iterator[Finding]:
    for code, pattern in IMBALANCE_TITLES:
        m = re.fullmatch(pattern, title)
        if m is None:
            continue
        spread = next((re.search(rf"slowest rank by {_PCT}", e) for e in evidence), None)
        rank = m[1] or m[3]
        for device in ("cpu", "cuda", "xpu") if m[2] is None else (_device(m[2]),):
            yield Finding(
                code=code,
                figures={
                    "device": device,
                    "rank": int(rank) if rank else None,
                    "stall": cost,
                    "verdict": verdict,
                    "rank_waits": [],
                    "compute_spread": _pct(spread[1]) if spread is not None else None,
                },
            )


def _candidates(item: dict[str, Any], verdict: Any) -> Iterator[Finding]:
    title, evidence, cost = item["title"], list(item.get("evidence") or []), item["cost_share"]
    if not evidence:
        return
    yield from _data_wait(title, evidence, cost)
    yield from _launch_wait(title, evidence, cost)
    yield from _exposed_comm(title, evidence, cost)
    yield from _imbalance(title, evidence, cost, verdict)


def coded_problem(item: Any, caveat: str | None, verdict: Any) -> Any:
    """`item` (a stored problem) as its code where its words are exactly a code's, else as
    stored; `caveat`: the diagnosis' (a copy of it closing the evidence is not the problem's);
    `verdict`: the diagnosis' straggler verdict (an imbalance's evidence quotes it)."""
    if not isinstance(item, dict) or "title" not in item or "cost_share" not in item:
        return item
    evidence = list(item.get("evidence") or [])
    if caveat and evidence and evidence[-1] == caveat:
        evidence = evidence[:-1]
    stored = {**item, "evidence": evidence}
    for finding in _candidates(stored, verdict):
        try:
            problem = Problem(
                finding=finding, category=item.get("category", ""), cost_share=item["cost_share"]
            )
            said = (problem.title, problem.evidence, problem.recommendation)
        except (ValidationError, KeyError, TypeError, ValueError):
            continue
        if said == (item["title"], evidence, item.get("recommendation") or ""):
            return {
                "finding": finding.model_dump(mode="json"),
                "category": item.get("category"),
                "cost_share": item["cost_share"],
            }
    return item


def coded_diagnosis(diagnosis: Any) -> Any:
    """A stored diagnosis with each problem it recognises as its code (`coded_problem`)."""
    if not isinstance(diagnosis, dict) or not diagnosis.get("findings"):
        return diagnosis
    caveat, verdict = diagnosis.get("caveat"), diagnosis.get("straggler")
    findings = [coded_problem(item, caveat, verdict) for item in diagnosis["findings"]]
    return {**diagnosis, "findings": findings}
