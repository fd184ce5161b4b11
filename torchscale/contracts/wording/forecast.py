"""Words for a forecast (offline/analysis/prediction/): each term's formula
(`ForecastTerm.how`: `forecast.term.*`) and each assumption (`forecast.*`), worded when shown;
`said_once` says many forecasts' assumptions once, each figure as its range over them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases, render
from torchscale.contracts.wording.spell import Span, format_value, ms_sig, pct, sig


def _or_unknown(value: Any) -> Any:
    return value if value else "?"


def _collective(c: Mapping[str, Any]) -> str:
    """One collective's time by the alpha-beta fit of a comm run."""
    return (
        f"{c['op']} {c['size']} B in {c['buckets']} bucket(s): {c['buckets']} x {c['steps']} "
        f"steps x {c['alpha_s'] * 1e6:.3g} us + {c['size']} B x {sig(c['factor'])} x "
        f"{c['beta'] * 1e9:.3g} ns/B ({c['run_id']})"
    )


def _exposed_at_one_rank(f: Mapping[str, Any]) -> str:
    used = f.get("from") or []
    return (
        f"exposed at one rank {ms_sig(f['base_s'])} + max(0, T - H), T = "
        f"{'; '.join(_collective(c) for c in f['collectives'])}; "
        f"H (hidden by backward; below 0: paid beyond the comm run's collective) = "
        f"{ms_sig(f['overlap_s'])}" + (f" (from {', '.join(used)})" if used else "")
    )


_FITS = {"least_squares": "least squares", "through_zero": "through 0"}


def _over_bus_factor(f: Mapping[str, Any]) -> str:
    points = ", ".join(f"f({w})={sig(x)}: {ms_sig(s)}" for w, x, s in f["points"])
    return (
        f"exposed transfer over the bus factor ({_FITS[f['fit']]}: {points}) read at "
        f"f({f['world']})={sig(f['at'])}"
    )


def _own_work(f: Mapping[str, Any]) -> str:
    return (
        f"own work (median phases) measured at {f['world']} rank(s)"
        + (f", {f['threads']} thread(s) each" if f.get("threads") else "")
        + f": {f['own_s'] * 1e3:.4g} ms"
    )


def _contention(f: Mapping[str, Any]) -> str:
    """Own work x (factor - 1): the thread factor times the time-sharing at the target over the
    reference's; past the cores, the collective's share of the turns added."""
    wants = f["demand"] if f.get("demand") is not None else 0
    busy = f["busy"] if f.get("busy") is not None else 0
    rph, cores = f["ranks_per_host"], _or_unknown(f.get("cores"))
    shared = f.get("shared_exposed_s")
    return (
        f"{f['own_s'] * 1e3:.4g} ms x (factor - 1), factor = thread {sig(f['middle'])} (between 1 "
        f"and u / d = {busy:.3g} busy cores at {_or_unknown(f.get('reference_threads'))} "
        f"thread(s) / {wants:.3g} at {_or_unknown(f.get('threads'))}) x time-sharing "
        f"{sig(f['shared'])} (between max(1, {rph:g} x {wants:.3g} / {cores} cores) and the "
        f"busiest core's ceil({rph:g} / {cores}) x min(1, {wants:.3g})) / {sig(f['shared_ref'])} "
        f"at the reference = {sig(f['factor'])}"
        + (
            f"; + exposed communication {ms_sig(shared)} x (time-sharing {sig(f['sharing'])} - 1): "
            "the collective runs on the ranks' cores"
            if shared is not None
            else ""
        )
    )


def _model_error(f: Mapping[str, Any]) -> str:
    errors = f.get("errors")
    if errors:
        said = ", ".join(f"w={w}: {format_value(e, 'change_pct')}" for w, e in errors)
        parts = [f"back-testing the measured sizes ({said})"]
    else:
        parts = ["no measured size could be back-tested"]
    if f.get("spread") is not None:
        parts.append(f"run-to-run range of the repeats up to {pct(f['spread'])}")
    if f.get("miss") is not None:
        scored = f.get("scored")
        source = (
            f"the worst of {scored} scored here"
            if scored
            else "the stated default until a track record exists"
        )
        parts.append(f"forecasts have missed by up to {f['miss'] * 100:.0f} % ({source})")
    return f"model error: {'; '.join(parts)}: interval widened by {pct(f['error'])}"


def _noisy_cell(f: Mapping[str, Any]) -> str:
    than = (
        f"{f['ratio']:g} x its siblings' {f['usual']:.2g}"
        if f.get("usual") is not None
        else "1: a std above the mean"
    )
    return (
        f"{f['cell_id']} was far noisier than its peers (step CV {f['cv']:.2g}, above "
        f"{than}; mean step {ms_sig(f['mean_s'])}, median {ms_sig(f['median_s'])}): a busy "
        "machine? Forecast from its median; measure it again when quiet"
    )


def _past_the_cores(f: Mapping[str, Any]) -> str:
    shared, half = f["shared"], f["half"]
    turns = (
        f"the slowest between {sig(shared - half)}x (shared out perfectly) and "
        f"{sig(shared + half)}x (the busiest core's ranks); taken as the middle, both ends in the "
        "interval"
        if half > 0
        else f"{sig(shared)}x slower (they share the cores evenly)"
    )
    return (
        f"past the cores ({f['ranks_per_host']:g} ranks x {f['demand']:.2g} busy cores on "
        f"{f['cores']}): ranks take turns, {turns}; the scheduler's wake-up latency in each "
        "collective and other processes' CPU are not modelled (no measured cell ran past the "
        "cores: measure one)"
    )


NO_STEP = (
    "its terms add up to {step_ms:.2f} ms, no step: the measured cells disagree (measure them "
    "again on a quieter machine)"
)


def no_step(step_s: float) -> str:
    """Why there is no forecast (a refusal, printed, never stored)."""
    return render(NO_STEP, {"step_ms": step_s * 1e3})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def said_once(findings: Iterable[Finding]) -> list[str]:
    """Each assumption once: the findings of one code that differ only in their numbers are
    worded once, each number as its range over them ('1.58-1.92x slower'), in the order first
    found; a code whose phrase cannot word a range is said once per distinct wording."""
    from torchscale.contracts.wording import PHRASES as ALL
    from torchscale.contracts.wording import render, say

    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        rest = {k: v for k, v in finding.figures.items() if not _is_number(v)}
        groups.setdefault(finding.code + json.dumps(rest, sort_keys=True), []).append(finding)
    said: list[str] = []
    for members in groups.values():
        figures: dict[str, Any] = dict(members[0].figures)
        for name, value in figures.items():
            if _is_number(value):
                values = [m.figures[name] for m in members]
                figures[name] = Span(min(values), max(values))
        phrase = ALL.get(members[0].code)
        try:
            words = [render(phrase, figures)] if phrase is not None and len(members) > 1 else []
        except (TypeError, ValueError, KeyError):
            words = []
        for text in words or [say(m) for m in members]:
            if text not in said:
                said.append(text)
    return said


PHRASES: Phrases = {
    # terms: how each was computed
    "forecast.term.own_work": _own_work,
    "forecast.term.gpu_unshared": "GPU: one device per rank, nothing shared",
    "forecast.term.contention": _contention,
    "forecast.term.stragglers": (
        "sigma x e({world}) = {sigma_s:ms} x {e_n:.3f}; sigma = (p50 - min) / e(steps) of each "
        "rank's own-work steps at {reference_world} rank(s), median over ranks, {jitter_s:ms} x "
        "{scale:sig3} (own work here / there)"
    ),
    "forecast.term.exposed_from_comm": _exposed_at_one_rank,
    "forecast.term.exposed_from_cells": _over_bus_factor,
    # assumptions
    "forecast.strategy_derived": (
        "{strategy} from {measured} cells: own work and overlap assumed as {measured}'s; "
        "benchmark {strategy} to measure them"
    ),
    "forecast.threads.launcher_default": (
        "each rank gets the launcher's default threads, {cores} cores // {ranks_per_host} ranks "
        "per host = {threads} (as every measured cell did); a fixed OMP_NUM_THREADS changes the "
        "compute"
    ),
    "forecast.threads.fixed": (
        "each rank runs {threads} thread(s), as every measured cell did (OMP_NUM_THREADS fixed)"
    ),
    "forecast.threads.mixed": (
        "the measured cells ran {counts} threads per rank, neither one count nor the launcher's "
        "default: assumed the default, {threads}"
    ),
    "forecast.few_ranks": (
        "no measured cell ran as few as {ranks_per_host:g} rank(s) per host: own work from "
        "{cell_id}, the fewest ({fewest:g} per host), with the cache, memory and core sharing of "
        "its ranks kept in (an upper side); measure a cell at this many ranks per host to know "
        "it"
    ),
    "forecast.gpu_unshared": (
        "GPU ranks share no compute: host CPU and PCIe contention not modelled"
    ),
    "forecast.cores_unrecorded.as_threads": (
        "CPU cores per rank not recorded (telemetry off): taken as its {threads} thread(s); run "
        "with measurement.telemetry.enabled to record them"
    ),
    "forecast.cores_unrecorded": (
        "CPU cores per rank not recorded (telemetry off): no time-sharing past the host's cores; "
        "run with measurement.telemetry.enabled to record them"
    ),
    "forecast.shared_caches": (
        "ranks sharing caches and memory bandwidth below the cores: as measured at "
        "{ranks_per_node:g} rank(s) per host, not extrapolated"
    ),
    "forecast.past_the_cores": _past_the_cores,
    "forecast.fewer_threads": (
        "fewer threads per rank here ({threads}) than at the reference ({reference_threads}): "
        "its work slows between 1x and {thread:sig3}x (the cores it kept busy include OpenMP's "
        "spin-waits); taken as the middle, both ends in the interval; measure a cell at this "
        "thread count to know it"
    ),
    "forecast.one_rank_jitter": (
        "stragglers from one rank's step-to-step jitter, assumed independent across ranks; "
        "measure 2 ranks to see it in a synchronised step"
    ),
    "forecast.comm_nodes": (
        "bandwidth over {nodes} node(s) not measured: assumed that of the comm run over "
        "{measured_nodes} node(s); measure it with `torchscale comm` across {nodes} nodes"
    ),
    "forecast.no_comm_run": (
        "no comm run: exposed communication scaled with the bus bytes from the measured cells, "
        "the share hidden behind backward assumed as measured; run `torchscale comm` to fit the "
        "collective itself"
    ),
    "forecast.nothing_hidden": (
        "no multi-rank cell measured the overlap: nothing assumed hidden behind backward, the "
        "interval down to all of it hidden up to the own work ({most_s:ms} less); a step can "
        "also pay more than the comm run's collective (ranks arriving apart, bucket copies, a "
        "CPU collective on the ranks' cores), which this interval does not hold; measure 2 ranks "
        "to learn both"
    ),
    "forecast.noisy_cell": _noisy_cell,
    "forecast.cell_nodes": (
        "cells measured on {measured_nodes} node(s): the link between nodes assumed as fast as "
        "the one measured; measure it with `torchscale comm` across {nodes} nodes"
    ),
    "forecast.model_error": _model_error,
    "forecast.no_narrower": (
        "interval no narrower than its noisiest input: ±{widest:share0}, the throughput of "
        "cells/{cell_id}.json"
    ),
}
