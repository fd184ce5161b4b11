"""The straggler verdict's words of result schema 16-19 (analysis schema 9 and older) turned
back into findings (contracts/wording/verdicts.py): its one line (`summary`), why its
candidate is not named (`not_named`) and the diagnosis' busy-machine `caveat`. A sentence is
recognised exactly: the finding is rebuilt from the verdict's own fields (and the few figures
only the sentence holds), and kept only where today's words for it are the stored sentence;
anything else stays as stored words (`stored_summary`, `stored_not_named`, `stored_caveat`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.contracts.wording.verdicts import INJECTED, UNTESTED, WITHDRAWN

Data = dict[str, Any]

BUSY = re.compile(r"busy machine \(others used (\S+) cores on (.+)\): check the host first")
SHARED = re.compile(r"(\d+) ranks share (\d+) cores on (.+): check the host first")
BELOW = re.compile(r"below the (\d+) % minimum effect \(")
FEW_STEPS = re.compile(
    r"(\d+) paired steps(?:, (\d+) of (\d+) left out: not on every rank)?; the test needs at "
    r"least (\d+) \(trace or measure more steps\)"
)
ON_PAR = re.compile(r"while its own work is on par \(([-+]?[\d.]+) ms(?:, step ([\d.]+) ms)?\)")
PLAIN_WHY = (
    "straggler.too_few_ranks",
    "straggler.none_above",
    "straggler.noise_interval",
    "straggler.noise_few_steps",
    "straggler.below_minimum",
)


def _exactly(text: str, candidates: Iterator[Finding]) -> Finding | None:
    """The first candidate whose words are `text`."""
    return next((f for f in candidates if say(f) == text), None)


def _caveat_candidates(text: str) -> Iterator[Finding]:
    if busy := BUSY.fullmatch(text):
        cores = None if busy[1] == "?" else float(busy[1])
        yield Finding(code="caveat.busy_machine", figures={"cores": cores, "host": busy[2]})
    if shared := SHARED.fullmatch(text):
        figures = {"ranks": int(shared[1]), "cores": int(shared[2]), "host": shared[3]}
        yield Finding(code="caveat.shared_cores", figures=figures)


def _why_candidates(text: str, verdict: Data) -> Iterator[Finding]:
    for code in PLAIN_WHY:
        yield Finding(code=code)
    floor, below = verdict.get("min_effect_s"), BELOW.match(text)
    if below and floor:
        share = int(below[1]) / 100
        figures = {"share": share, "min_effect_s": floor, "step_s": floor / share}
        yield Finding(code="straggler.below_minimum", figures=figures)
    if few := FEW_STEPS.fullmatch(text):
        left_out = int(few[2]) if few[2] else 0
        steps = int(few[3]) if few[3] else int(few[1])
        figures = {"paired": int(few[1]), "left_out": left_out, "steps": steps}
        yield Finding(code="straggler.too_few_steps", figures={**figures, "needed": int(few[4])})
    if text.startswith(WITHDRAWN):
        yield Finding(code="straggler.withdrawn", figures={"by": text.removeprefix(WITHDRAWN)})


def _triple(estimate: Any) -> list[Any] | None:
    if not isinstance(estimate, dict):
        return None
    return [estimate.get("value"), estimate.get("low"), estimate.get("high")]


def _summary_candidates(
    text: str, verdict: Data, why: Finding | None, caveat: Finding | None
) -> Iterator[Finding]:
    pattern = verdict.get("pattern")
    if why is not None:
        yield Finding(code="straggler.untested", figures={"why": why.model_dump()})
        gap = _triple(verdict.get("gap_s"))
        figures = {"candidate": verdict.get("candidate_rank"), "gap": gap, "pattern": pattern}
        yield Finding(code="straggler.not_named", figures={**figures, "why": why.model_dump()})
    if not verdict.get("named") or verdict.get("kind") is None:
        return
    after: Data = {"injected": True} if INJECTED in text else {}
    if caveat is not None and text.endswith(f"; {say(caveat)}"):
        after["caveat"] = caveat.model_dump()
    rank, kind = verdict.get("rank"), verdict["kind"]
    if kind == "communication" and (par := ON_PAR.search(text)):
        work, step = float(par[1]) / 1e3, float(par[2]) / 1e3 if par[2] else None
        late = {"late": _triple(verdict.get("late_s")), "work_s": work, "step_s": step}
        yield Finding(code="straggler.late", figures={"rank": rank, **late, **after})
    for name in ("gap_s", "host_wait_s"):
        figures = {"rank": rank, "kind": kind, "phase": verdict.get("phase")}
        figures |= {"gap": _triple(verdict.get(name)), "pattern": pattern}
        yield Finding(code="straggler.named", figures={**figures, **after})


def _text(data: Data, name: str) -> str | None:
    text = data.get(name, data.get(f"stored_{name}"))
    return text if isinstance(text, str) else None


def _coded(data: Data, name: str, field: str, finding: Finding | None) -> Data:
    """`data` with the sentence `name` replaced by its finding in `field`, or kept as stored."""
    text = _text(data, name)
    out = {k: v for k, v in data.items() if k not in (name, f"stored_{name}")}
    if finding is not None:
        return {**out, field: finding.model_dump()}
    return {**out, f"stored_{name}": text} if text is not None else out


def coded_diagnosis(diagnosis: Any) -> Any:
    """A stored diagnosis (a dict) whose verdict and caveat words are findings where
    recognised exactly (see the module doc)."""
    if not isinstance(diagnosis, dict):
        return diagnosis
    said_caveat = _text(diagnosis, "caveat")
    caveat = _exactly(said_caveat, _caveat_candidates(said_caveat)) if said_caveat else None
    out = _coded(diagnosis, "caveat", "busy", caveat)
    verdict = diagnosis.get("straggler")
    if not isinstance(verdict, dict) or verdict.get("said") is not None:
        return out
    why_text = _text(verdict, "not_named")
    summary = _text(verdict, "summary") or ""
    if why_text is None and summary.startswith(UNTESTED):  # schema 12 and older: said only here
        why_text = summary.removeprefix(UNTESTED)
    why = _exactly(why_text, _why_candidates(why_text, verdict)) if why_text else None
    said = _exactly(summary, _summary_candidates(summary, verdict, why, caveat))
    stored_why = _text(verdict, "not_named") is not None
    verdict = _coded(verdict, "summary", "said", said)
    if stored_why:
        verdict = _coded(verdict, "not_named", "why_not", why)
    elif why is not None and said is not None and said.code == "straggler.untested":
        verdict = {**verdict, "why_not": why.model_dump()}
    return {**out, "straggler": verdict}
