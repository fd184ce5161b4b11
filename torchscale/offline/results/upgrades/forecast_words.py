"""Forecast schema 1 -> 2: the sentences schema 1 stored (each term's `how`, the assumptions,
the reasons in `unavailable`) become the findings they said. A sentence is taken as a code only
where today's words of that code and its figures give it back exactly; any other is kept as
stored (`forecast.stored`), never edited."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say

_VALUE = r"[^ ,;()\[\]]+?"
_SCALE = {"_ms": 1e3, "_pct": 100.0, "_us": 1e6, "_ns": 1e9}


def _pattern(template: str) -> re.Pattern[str]:
    """'at {world} rank(s)' -> a regex with one named group per {figure}."""
    pieces = re.split(r"\{(\w+)\}", template)
    return re.compile(
        "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>{_VALUE})" for i, p in enumerate(pieces))
        + "$"
    )


def _number(text: str) -> Any:
    if text == "?":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _figures(found: re.Match[str]) -> dict[str, Any]:
    """The named groups as figures: '_ms', '_pct', '_us', '_ns' turned to the stored unit."""
    figures: dict[str, Any] = {}
    for name, text in found.groupdict().items():
        if text is None:
            continue
        value = _number(text)
        for suffix, scale in _SCALE.items():
            if name.endswith(suffix) and isinstance(value, int | float):
                name, value = (
                    name[: -len(suffix)] + ("_s" if suffix == "_ms" else ""),
                    value / scale,
                )
        figures[name] = value
    return figures


_COLLECTIVE = _pattern(
    "{op} {size} B in {buckets} bucket(s): {b2} x {steps} steps x {alpha_us} us + {s2} B x "
    "{factor} x {beta_ns} ns/B ({run_id})"
)
_POINT = _pattern("f({world})={x}: {seconds_ms} ms")
_NOT = ("b2", "s2")


def _collectives(text: str) -> list[dict[str, Any]] | None:
    out = []
    for part in text.split("; "):
        found = _COLLECTIVE.match(part)
        if found is None:
            return None
        figures = {k: v for k, v in _figures(found).items() if k not in _NOT}
        figures["alpha_s"], figures["beta"] = figures.pop("alpha"), figures.pop("beta")
        out.append(figures)
    return out


def _exposed_from_comm(text: str) -> dict[str, Any] | None:
    found = re.match(
        r"exposed at one rank (?P<base>\S+) ms \+ max\(0, T - H\), T = (?P<t>.*); H \(hidden by "
        r"backward; below 0: paid beyond the comm run's collective\) = (?P<overlap>\S+) ms"
        r"(?: \(from (?P<used>[^)]*)\))?$",
        text,
    )
    collectives = _collectives(found["t"]) if found else None
    if found is None or collectives is None:
        return None
    figures: dict[str, Any] = {
        "base_s": _number(found["base"]) / 1e3,
        "collectives": collectives,
        "overlap_s": _number(found["overlap"]) / 1e3,
    }
    if found["used"]:
        figures["from"] = found["used"].split(", ")
    return figures


def _exposed_from_cells(text: str) -> dict[str, Any] | None:
    found = re.match(
        r"exposed transfer over the bus factor \((?P<fit>least squares|through 0): "
        r"(?P<points>.*)\) read at f\((?P<world>\d+)\)=(?P<at>\S+)$",
        text,
    )
    if found is None:
        return None
    points = [_POINT.match(p) for p in found["points"].split(", ")]
    if not all(points):
        return None
    return {
        "fit": "least_squares" if found["fit"] == "least squares" else "through_zero",
        "points": [
            [f["world"], f["x"], f["seconds_s"]] for f in (_figures(p) for p in points if p)
        ],
        "world": int(found["world"]),
        "at": _number(found["at"]),
    }


_CONTENTION = re.compile(
    r"(?P<own_ms>\S+) ms x \(factor - 1\), factor = thread (?P<middle>\S+) \(between 1 and u / "
    r"d = (?P<busy>\S+) busy cores at (?P<reference_threads>\S+) thread\(s\) / (?P<demand>\S+) "
    r"at (?P<threads>[^)\s]+)\) x time-sharing (?P<shared>\S+) \(between max\(1, "
    r"(?P<ranks_per_host>\S+) x \S+ / (?P<cores>\S+) cores\) and the busiest core's ceil\(\S+ "
    r"/ \S+\) x min\(1, \S+\)\) / (?P<shared_ref>\S+) at the reference = (?P<factor>[^;\s]+)"
    r"(?:; \+ exposed communication (?P<shared_exposed_ms>\S+) ms x \(time-sharing "
    r"(?P<sharing>\S+) - 1\): the collective runs on the ranks' cores)?$"
)


def _model_error(text: str) -> dict[str, Any] | None:
    found = re.match(r"model error: (?P<body>.*): interval widened by (?P<error>\S+) %$", text)
    if found is None:
        return None
    figures: dict[str, Any] = {"error": _number(found["error"]) / 100}
    for part in found["body"].split("; "):
        if tested := re.match(r"back-testing the measured sizes \((.*)\)$", part):
            pairs = [re.match(r"w=(\d+): (\S+) %$", p) for p in tested[1].split(", ")]
            if not all(pairs):
                return None
            figures["errors"] = [[int(p[1]), float(p[2]) / 100] for p in pairs if p]
        elif spread := re.match(r"run-to-run range of the repeats up to (\S+) %$", part):
            figures["spread"] = float(spread[1]) / 100
        elif missed := re.match(r"forecasts have missed by up to (\S+) % \((.*)\)$", part):
            figures["miss"] = float(missed[1]) / 100
            scored = re.match(r"the worst of (\d+) scored here$", missed[2])
            if scored:
                figures["scored"] = int(scored[1])
        elif part != "no measured size could be back-tested":
            return None
    return figures


_APART = _pattern(
    "past the cores ({ranks_per_host} ranks x {demand} busy cores on {cores}): ranks take "
    "turns, the slowest between {fair}x (shared out perfectly) and {busiest}x (the busiest "
    "core's ranks); taken as the middle, both ends in the interval; the scheduler's wake-up "
    "latency in each collective and other processes' CPU are not modelled (no measured cell "
    "ran past the cores: measure one)"
)


def _past_the_cores_apart(text: str) -> dict[str, Any] | None:
    """The uneven form: its two ends, as the middle and half the range they were made from."""
    found = _APART.match(text)
    if found is None:
        return None
    figures = _figures(found)
    fair, busiest = figures.pop("fair"), figures.pop("busiest")
    return figures | {"shared": (fair + busiest) / 2, "half": (busiest - fair) / 2}


def _by(pattern: re.Pattern[str]) -> Callable[[str], dict[str, Any] | None]:
    def read(text: str) -> dict[str, Any] | None:
        found = pattern.match(text)
        return _figures(found) if found else None

    return read


def _templated(code: str, template: str) -> tuple[str, Callable[[str], dict[str, Any] | None]]:
    return code, _by(_pattern(template))


def _sentence_of(code: str) -> str:
    return say(Finding(code=code))


# each code's reader of its schema 1 sentence (the sentences of offline/analysis/prediction/)
_READERS: list[tuple[str, Callable[[str], dict[str, Any] | None]]] = [
    _templated(
        "forecast.term.own_work",
        "own work (median phases) measured at {world} rank(s), {threads} thread(s) each: "
        "{own_ms} ms",
    ),
    _templated(
        "forecast.term.own_work",
        "own work (median phases) measured at {world} rank(s): {own_ms} ms",
    ),
    ("forecast.term.contention", _by(_CONTENTION)),
    _templated(
        "forecast.term.stragglers",
        "sigma x e({world}) = {sigma_ms} ms x {e_n}; sigma = (p50 - min) / e(steps) of each "
        "rank's own-work steps at {reference_world} rank(s), median over ranks, {jitter_ms} ms "
        "x {scale} (own work here / there)",
    ),
    ("forecast.term.exposed_from_comm", _exposed_from_comm),
    ("forecast.term.exposed_from_cells", _exposed_from_cells),
    _templated(
        "forecast.strategy_derived",
        "{strategy} from {measured} cells: own work and overlap assumed as {m2}'s; benchmark "
        "{s2} to measure them",
    ),
    _templated(
        "forecast.threads.launcher_default",
        "each rank gets the launcher's default threads, {cores} cores // {ranks_per_host} ranks "
        "per host = {threads} (as every measured cell did); a fixed OMP_NUM_THREADS changes the "
        "compute",
    ),
    _templated(
        "forecast.threads.fixed",
        "each rank runs {threads} thread(s), as every measured cell did (OMP_NUM_THREADS fixed)",
    ),
    (
        "forecast.threads.mixed",
        lambda t: (
            {"counts": json.loads(m[1]), "threads": int(m[2])}
            if (
                m := re.match(
                    r"the measured cells ran (\[[\d, ]*\]) threads per rank, neither "
                    r"one count nor the launcher's default: assumed the default, (\d+)$",
                    t,
                )
            )
            else None
        ),
    ),
    _templated(
        "forecast.few_ranks",
        "no measured cell ran as few as {ranks_per_host} rank(s) per host: own work from "
        "{cell_id}, the fewest ({fewest} per host), with the cache, memory and core sharing of "
        "its ranks kept in (an upper side); measure a cell at this many ranks per host to know it",
    ),
    _templated(
        "forecast.cores_unrecorded.as_threads",
        "CPU cores per rank not recorded (telemetry off): taken as its {threads} thread(s); run "
        "with measurement.telemetry.enabled to record them",
    ),
    _templated(
        "forecast.shared_caches",
        "ranks sharing caches and memory bandwidth below the cores: as measured at "
        "{ranks_per_node} rank(s) per host, not extrapolated",
    ),
    _templated(
        "forecast.past_the_cores",
        "past the cores ({ranks_per_host} ranks x {demand} busy cores on {cores}): ranks take "
        "turns, {shared}x slower (they share the cores evenly); the scheduler's wake-up latency "
        "in each collective and other processes' CPU are not modelled (no measured cell ran "
        "past the cores: measure one)",
    ),
    ("forecast.past_the_cores", _past_the_cores_apart),
    _templated(
        "forecast.fewer_threads",
        "fewer threads per rank here ({threads}) than at the reference ({reference_threads}): "
        "its work slows between 1x and {thread}x (the cores it kept busy include OpenMP's "
        "spin-waits); taken as the middle, both ends in the interval; measure a cell at this "
        "thread count to know it",
    ),
    _templated(
        "forecast.comm_nodes",
        "bandwidth over {nodes} node(s) not measured: assumed that of the comm run over "
        "{measured_nodes} node(s); measure it with `torchscale comm` across {n2} nodes",
    ),
    _templated(
        "forecast.nothing_hidden",
        "no multi-rank cell measured the overlap: nothing assumed hidden behind backward, the "
        "interval down to all of it hidden up to the own work ({most_ms} ms less); a step can "
        "also pay more than the comm run's collective (ranks arriving apart, bucket copies, a "
        "CPU collective on the ranks' cores), which this interval does not hold; measure 2 "
        "ranks to learn both",
    ),
    _templated(
        "forecast.noisy_cell",
        "{cell_id} was far noisier than its peers (step CV {cv}, above {ratio} x its siblings' "
        "{usual}; mean step {mean_ms} ms, median {median_ms} ms): a busy machine? Forecast from "
        "its median; measure it again when quiet",
    ),
    _templated(
        "forecast.noisy_cell",
        "{cell_id} was far noisier than its peers (step CV {cv}, above 1: a std above the mean; "
        "mean step {mean_ms} ms, median {median_ms} ms): a busy machine? Forecast from its "
        "median; measure it again when quiet",
    ),
    _templated(
        "forecast.cell_nodes",
        "cells measured on {measured_nodes} node(s): the link between nodes assumed as fast as "
        "the one measured; measure it with `torchscale comm` across {nodes} nodes",
    ),
    ("forecast.model_error", _model_error),
    _templated(
        "forecast.no_narrower",
        "interval no narrower than its noisiest input: ±{widest_pct} %, the throughput of "
        "cells/{cell_id}.json",
    ),
]
_CONSTANT = (
    "forecast.term.gpu_unshared",
    "forecast.gpu_unshared",
    "forecast.cores_unrecorded",
    "forecast.one_rank_jitter",
    "forecast.no_comm_run",
)


def finding_of(text: str) -> Finding:
    """The finding a schema 1 sentence said, where today's words of it give the sentence back
    exactly; else the sentence kept as stored."""
    for code in _CONSTANT:
        if _sentence_of(code) == text:
            return Finding(code=code)
    for code, read in _READERS:
        figures = read(text)
        if figures is None:
            continue
        figures = {k: v for k, v in figures.items() if k not in ("m2", "s2", "n2")}
        if code == "forecast.past_the_cores":
            figures.setdefault("half", 0)  # the even form: no range between the ends
        finding = Finding(code=code, figures=figures)
        try:
            if say(finding) == text:
                return finding
        except (KeyError, TypeError, ValueError):  # a look-alike sentence of other figures
            continue
    return Finding(code="forecast.stored", figures={"words": text})


def forecast_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """A schema 1 forecast as schema 2: its sentences as findings."""
    upgraded = dict(data, schema_version=2)
    upgraded["terms"] = [dict(t, how=finding_of(t["how"]).model_dump()) for t in data["terms"]]
    upgraded["assumptions"] = [finding_of(a).model_dump() for a in data.get("assumptions") or []]
    upgraded["unavailable"] = {
        k: finding_of(v).model_dump() for k, v in (data.get("unavailable") or {}).items()
    }
    return upgraded
