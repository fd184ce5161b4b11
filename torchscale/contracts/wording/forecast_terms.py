"""The words of a forecast's terms and assumptions (offline/analysis/prediction/): each formula
and note made from its figures here, so a forecast's figures are spelled where every other
figure is. They are still stored as the sentences these make (`Forecast.assumptions`,
`ForecastTerm.how`: tests/project/test_stored_free_text.py, NOT_YET)."""

from __future__ import annotations

from collections.abc import Iterable

from torchscale.contracts.wording.figures import format_value


def _ms(seconds: float) -> str:
    """A term's seconds in a formula: three significant figures of milliseconds, '41.2 ms'."""
    return f"{seconds * 1e3:.3g} ms"


def _g(value: float) -> str:
    """A factor in a formula: three significant figures, '1.25'."""
    return f"{value:.3g}"


def collective(
    op: str,
    size: int,
    buckets: int,
    steps: int,
    alpha_s: float,
    factor: float,
    beta: float,
    run_id: str,
) -> str:
    """One collective's time by the alpha-beta fit of a comm run."""
    return (
        f"{op} {size} B in {buckets} bucket(s): {buckets} x {steps} steps x "
        f"{alpha_s * 1e6:.3g} us + {size} B x {_g(factor)} x {beta * 1e9:.3g} ns/B ({run_id})"
    )


def nothing_hidden(most_s: float) -> str:
    return (
        "no multi-rank cell measured the overlap: nothing assumed hidden behind "
        f"backward, the interval down to all of it hidden up to the own work "
        f"({_ms(most_s)} less); a step can also pay more than the comm run's "
        "collective (ranks arriving apart, bucket copies, a CPU collective on the "
        "ranks' cores), which this interval does not hold; measure 2 ranks to learn "
        "both"
    )


def exposed_at_one_rank(base_s: float, how: str, overlap_s: float) -> str:
    return (
        f"exposed at one rank {_ms(base_s)} + max(0, T - H), T = {how}; "
        f"H (hidden by backward; below 0: paid beyond the comm run's collective) = "
        f"{_ms(overlap_s)}"
    )


def bus_points(points: Iterable[tuple[int, float, float]]) -> str:
    """'f(2)=0.5: 3.1 ms, f(4)=0.75: 4.0 ms': the exposed transfer at each measured size."""
    return ", ".join(f"f({world})={_g(x)}: {_ms(seconds)}" for world, x, seconds in points)


def over_bus_factor(how_fit: str, points: str, world: int, at: float) -> str:
    return f"exposed transfer over the bus factor ({how_fit}: {points}) read at f({world})={_g(at)}"


def shared_collective(exposed_s: float, sharing: float) -> str:
    return (
        f"; + exposed communication {_ms(exposed_s)} x "
        f"(time-sharing {_g(sharing)} - 1): the collective runs on the ranks' cores"
    )


def back_tested(errors: Iterable[tuple[int, float]]) -> str:
    said = ", ".join(f"w={w}: {format_value(e, 'change_pct')}" for w, e in errors)
    return f"back-testing the measured sizes ({said})"


def missed_by(miss: float, source: str) -> str:
    return f"forecasts have missed by up to {miss * 100:.0f} % ({source})"


def no_narrower(widest: float, cell_id: str) -> str:
    return (
        f"interval no narrower than its noisiest input: ±{widest * 100:.0f} %, the throughput of "
        f"cells/{cell_id}.json"
    )


def no_step(step_s: float) -> str:
    return (
        f"its terms add up to {step_s * 1e3:.2f} ms, no step: the measured cells "
        "disagree (measure them again on a quieter machine)"
    )


def siblings(ratio: float, usual: float) -> str:
    return f"{ratio:g} x its siblings' {usual:.2g}"


def far_noisier(cell_id: str, cv: float, than: str, mean_s: float, median_s: float) -> str:
    return (
        f"{cell_id} was far noisier than its peers (step CV {cv:.2g}, above "
        f"{than}; mean step {_ms(mean_s)}, median "
        f"{_ms(median_s)}): a busy machine? Forecast from its median; "
        "measure it again when quiet"
    )


def straggler_jitter(
    world: int, sigma_s: float, e_n: float, reference_world: int, jitter_s: float, scale: float
) -> str:
    return (
        f"sigma x e({world}) = {_ms(sigma_s)} x {e_n:.3f}; sigma = (p50 - min) / e(steps) "
        f"of each rank's own-work steps at {reference_world} rank(s), median over ranks, "
        f"{_ms(jitter_s)} x {_g(scale)} (own work here / there)"
    )


def few_ranks(ranks_per_host: float, cell_id: str, fewest: float) -> str:
    return (
        f"no measured cell ran as few as {ranks_per_host:g} rank(s) per host: own work from "
        f"{cell_id}, the fewest ({fewest:g} per host), with the cache, memory and core "
        "sharing of its ranks kept in (an upper side); measure a cell at this many ranks per "
        "host to know it"
    )


def own_work(world: int, threads: int | None, own_s: float) -> str:
    return (
        f"own work (median phases) measured at {world} rank(s)"
        + (f", {threads} thread(s) each" if threads else "")
        + f": {own_s * 1e3:.4g} ms"
    )


def shared_caches(ranks_per_node: float) -> str:
    return (
        f"ranks sharing caches and memory bandwidth below the cores: as measured at "
        f"{ranks_per_node:g} rank(s) per host, not extrapolated"
    )


def past_the_cores(
    ranks_per_host: float, demand: float, cores: int | None, shared: float, half: float
) -> str:
    fair, busiest = shared - half, shared + half
    turns = (
        f"the slowest between {_g(fair)}x (shared out perfectly) and {_g(busiest)}x (the "
        "busiest core's ranks); taken as the middle, both ends in the interval"
        if half > 0
        else f"{_g(shared)}x slower (they share the cores evenly)"
    )
    return (
        f"past the cores ({ranks_per_host:g} ranks x {demand:.2g} busy cores on {cores}): "
        f"ranks take turns, {turns}; the scheduler's wake-up latency in each collective "
        "and other processes' CPU are not modelled (no measured cell ran past the cores: "
        "measure one)"
    )


def fewer_threads(threads: int | None, reference_threads: int | None, thread: float) -> str:
    return (
        f"fewer threads per rank here ({threads}) than at the reference "
        f"({reference_threads}): its work slows between 1x and {_g(thread)}x (the cores "
        "it kept busy include OpenMP's spin-waits); taken as the middle, both ends in the "
        "interval; measure a cell at this thread count to know it"
    )


def contention_formula(
    own_s: float,
    middle: float,
    busy: float | None,
    reference_threads: int | None,
    demand: float | None,
    threads: int | None,
    shared: float,
    ranks_per_host: float,
    cores: int | None,
    shared_ref: float,
    factor: float,
) -> str:
    """Own work x (factor - 1): the thread factor times the time-sharing at the target over the
    reference's."""
    wants = demand if demand is not None else 0
    return (
        f"{own_s * 1e3:.4g} ms x (factor - 1), factor = thread {_g(middle)} (between 1 "
        f"and u / d = {busy if busy is not None else 0:.3g} busy cores at "
        f"{reference_threads or '?'} thread(s) / {wants:.3g} at "
        f"{threads or '?'}) x time-sharing {_g(shared)} (between max(1, {ranks_per_host:g} x "
        f"{wants:.3g} / {cores or '?'} cores) and the busiest "
        f"core's ceil({ranks_per_host:g} / {cores or '?'}) x min(1, "
        f"{wants:.3g})) / {_g(shared_ref)} at the reference "
        f"= {_g(factor)}"
    )
