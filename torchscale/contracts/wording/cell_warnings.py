"""Words for a cell result's warnings and reliability: `CellResult.warnings`
(`warning.*`), each GPU's clock verdict (`telemetry.ranks[].clock_finding`, `clocks.*`), the
busy-machine verdict (`busy.*`), the cell's noise (`noise.*`, offline/analysis/reliability.py)
and what a run can be used for (`purpose.*`, offline/analysis/run_purpose.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.busy_machine import BUSY_NOTE
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import (
    EDGES_INCLUDED,
    IN_WINDOW,
    MIN_FLAGGED_SAMPLES,
    POWER_CAP,
)
from torchscale.contracts.wording import Phrases, reason_of
from torchscale.contracts.wording import why as unavailable_why
from torchscale.contracts.wording.cell_telemetry import limit_why
from torchscale.contracts.wording.spell import as_set, cv, pct, pct_set, pct_whole, two_figures

# Words for a cell's warnings (`CellWarning.finding`): each writer stores a code
# and its figures; the sentence every surface shows is made here.

TF32_HOW = (
    "for TF32 set launcher.env TORCH_ALLOW_TF32_CUBLAS_OVERRIDE: '1', or train in bf16 "
    "(precision: bf16)"
)


def _sync_variance(f: Mapping[str, Any]) -> str:
    # above 1 (other parts varying against the wait) a share would read as impossible; None:
    # not recorded
    share = f["share"]
    part = f"{min(share, 1.0) * 100:.0f} % of" if share is not None and share < 1.005 else "most of"
    return (
        f"High variance in gradient sync time: CV {cv(f['wait_cv'])}, {part} the step-time "
        f"variance (step CV {cv(f['step_cv'])} > {cv(f['threshold'])}): the network or "
        "waiting for peers, not compute"
    )


def _injected(f: Mapping[str, Any]) -> str:
    ms = as_set(f["ms"])
    return (
        f"Injected delay (--inject-delay {f['rank']}:{f['phase']}:{ms}): rank {f['rank']} "
        f"sleeps {ms} ms in its {f['phase']} phase every step: the straggler and load "
        "imbalance it causes are artificial"
    )


def _busy(f: Mapping[str, Any]) -> str:
    from torchscale.contracts import wording

    parts = []
    for host in f["hosts"]:
        said = wording.say(Finding(code=host["code"], figures=host["figures"]))
        peak = host.get("load_avg_max")
        load = f"; load average up to {peak:.1f}" if peak is not None else ""
        parts.append(f"on {host['host']}, {said}{load}")
    return f"busy machine: {'; '.join(parts)} during the measured windows; {BUSY_NOTE}"


def _gpu_shared(f: Mapping[str, Any]) -> str:
    shared = []
    for host in f["hosts"]:
        pids = host["pids"]
        which = f"PID {', '.join(map(str, pids))}" if pids else "PIDs of another PID namespace"
        shared.append(f"{host['host']}: {host['processes']} ({which})")
    total = sum(host["processes"] for host in f["hosts"])
    return (
        f"GPU shared: {total} other compute process(es) on the cell's GPUs during the "
        f"measured windows ({'; '.join(shared)}); their kernels time-share the GPU with the "
        f"cell's: {BUSY_NOTE}"
    )


def _throttled(f: Mapping[str, Any]) -> str:
    ranks = "; ".join(f"rank {r['rank']} ({r['gpu']})" for r in f["ranks"])
    return (
        f"GPU clocks throttled during the measured windows: {ranks} (the figures were measured "
        "below full clocks; each GPU's clock verdict says why)"
    )


def _compiled_in_windows(f: Mapping[str, Any]) -> str:
    what = (
        f"{f['frames']} frame(s), {f['compile_s']:.2f} s of compiling"
        + (f", {f['graph_breaks']} graph break(s)" if f["graph_breaks"] else "")
        + f" on rank(s) {', '.join(map(str, f['ranks']))}"
    )
    if f["first_compile"]:
        return (
            f"torch.compile compiled inside the measured windows ({what}): with "
            "measurement.warmup_steps 0 its first compile runs in the first window, whose "
            "steps are timed with the compile in them; give warmup_steps >= 1"
        )
    return (
        f"torch.compile recompiled inside the measured windows ({what}): a guard failed or a "
        "new code path ran after the warm-up, and those steps are timed with the compile in "
        "them (TORCH_LOGS=recompiles names the failed guard)"
    )


def _compile_off(f: Mapping[str, Any]) -> str:
    return (
        f"training.compile off: {f['parameters']:,} parameters, under "
        f"{f['min_parameters'] // 1_000_000} M, so its step is launch-bound and compiling "
        "(seconds per cell) would not pay back; set training.compile: true to compile it"
    )


def _exit_after_result(f: Mapping[str, Any]) -> str:
    return (
        f"{f.get('program', 'torchrun')} exited with {f['returncode']} after the result was "
        f"written (shutdown failure; measurement kept): see {f['log_dir']}"
    )


def _shared_gpu(f: Mapping[str, Any]) -> str:
    gpus = "one GPU" if f.get("gpus", 1) == 1 else f"each of {f['gpus']} GPUs"
    return (
        f"{f['ranks']} ranks shared {gpus} over {f.get('backend', 'gloo')} "
        "(launcher.ranks_per_gpu): it ran torchscale's multi-rank CUDA path, not a "
        "multi-GPU job (no NCCL, no NVLink, the ranks' kernels queued on one GPU); never "
        "ranked, compared or scaled with cells that had a GPU per rank"
    )


def warning_words(warning: Any) -> str:
    """A `CellWarning` in words, by its finding."""
    from torchscale.contracts import wording

    return wording.say(warning.finding)


# Words for the findings of GPU clocks over the measured windows (contracts/gpu_clocks.py
# judges; each code's figures are named there, in `judge_clocks`).

WHERE = {IN_WINDOW: "in-window samples", EDGES_INCLUDED: "samples, window edges included"}


def _of(f: Mapping[str, Any]) -> str:
    return f"of {f['samples']} {WHERE.get(f.get('where', ''), 'samples')}"


def _transients(f: Mapping[str, Any]) -> str:
    once = f.get("transients") or []
    return f"; {', '.join(once)} in 1 sample only (a transient)" if once else ""


def _limit(f: Mapping[str, Any]) -> str:
    enforced, default = f.get("enforced_w"), f.get("default_w")
    if enforced is None or default is None:
        return f"power limit unknown ({limit_why(f.get('limit_unknown'))})"
    if enforced < default:
        return f"power limit {enforced:g} W, below its {default:g} W default"
    return f"power limit {enforced:g} W, its default"


def _clock(f: Mapping[str, Any]) -> str:
    clock, top = f.get("clock_mhz"), f.get("max_mhz")
    if clock is None or not top:
        return ""
    lowest = f.get("lowest_mhz")
    held = f"SM clock median {clock:g} MHz in them" + (
        f" (lowest {lowest:g})" if lowest is not None else ""
    )
    if lowest is None:  # an old result: the mean of its samples
        held = f"SM clock mean {clock:.0f} MHz"
    sku = " (the SKU table's)" if f.get("max_from_sku") else ""
    return f", {held}, {clock / top * 100:.0f} % of its {top:g} MHz max{sku}"


def _draw(f: Mapping[str, Any]) -> str:
    power, enforced = f.get("power_w"), f.get("enforced_w")
    if power is None:
        return "; power draw not read"
    if not enforced:
        return f"; drawing {power:.0f} W"
    return f"; drawing {power:.0f} W, {power / enforced * 100:.0f} % of its limit"


def _seen(f: Mapping[str, Any]) -> str:
    return f"{POWER_CAP} in {f['capped']} {_of(f)}"


def hardware_slowdown(f: Mapping[str, Any]) -> str:
    counts = ", ".join(f"{reason} in {n}" for reason, n in f["counts"].items())
    return f"{counts} {_of(f)}"


def full(f: Mapping[str, Any]) -> str:
    capped = f.get("capped", 0)
    many = f"{MIN_FLAGGED_SAMPLES} or more" if capped or f.get("transients") else "any"
    once = f"; {POWER_CAP} in 1 sample only" if capped else ""
    return f"no slowdown reason in {many} {_of(f)}{once}{_transients(f)}"


def site_cap(f: Mapping[str, Any]) -> str:
    return f"{_seen(f)} under a site cap: {_limit(f)}"


def power_managed(f: Mapping[str, Any]) -> str:
    return (
        f"at its power limit (normal under dense load): {_seen(f)}{_clock(f)}; {_limit(f)}"
        f"{_draw(f) if f.get('enforced_w') else ''}{_transients(f)}"
    )


def low_under_limit(f: Mapping[str, Any]) -> str:
    return (
        f"clocks low while the GPU draws well under its limit: {_seen(f)}{_clock(f)}; "
        f"{_limit(f)}{_draw(f)}{_transients(f)}"
    )


def draw_unknown(f: Mapping[str, Any]) -> str:
    return (
        f"{_seen(f)}{_clock(f)}; {_limit(f)}, power draw not read: whether the limit or "
        f"something else held the clocks is not known{_transients(f)}"
    )


def low_limit_unknown(f: Mapping[str, Any]) -> str:
    return f"{_seen(f)}{_clock(f)}; {_limit(f)}: a site cap cannot be ruled out{_transients(f)}"


def not_judged(f: Mapping[str, Any]) -> str:
    unknown = f.get("max_unknown")
    why = unavailable_why(reason_of(unknown)) if unknown else "no SM clock read in those samples"
    return (
        f"{_seen(f)}: whether it cost clocks is not known: {_limit(f)}; maximum SM clock "
        f"unknown ({why}){_transients(f)}"
    )


# Words for the findings of a machine busy with other work beside a cell (the verdict of
# contracts/busy_machine.py; figures: other_cores, cell_cores, cores, free_cores, ranks,
# threshold, slowdown, and tick_cores where unresolved).


def _used(figures: Mapping[str, Any]) -> str:
    """'other processes used 0.43 of 2 cores, the cell's 2 rank(s) 1.6 (0.43 free)'."""
    of = f" of {figures['cores']}" if figures.get("cores") else ""
    free = figures.get("free_cores")
    left = f" ({two_figures(free)} free)" if free is not None else ""
    return (
        f"other processes used {two_figures(figures['other_cores'])}{of} cores, the cell's "
        f"{figures['ranks']} rank(s) {two_figures(figures['cell_cores'])}{left}"
    )


def _contended(figures: Mapping[str, Any]) -> str:
    slowdown = figures.get("slowdown")
    explains = "" if slowdown is None else f", enough to slow it by {pct_whole(slowdown)} or more"
    return f"{_used(figures)}: busy from {two_figures(figures['threshold'])}{explains}"


def _quiet(figures: Mapping[str, Any]) -> str:
    return f"{_used(figures)}: below the busy threshold {two_figures(figures['threshold'])}"


def _unresolved(figures: Mapping[str, Any]) -> str:
    return (
        f"{_used(figures)}: within one tick of the kernel's CPU accounting "
        f"({two_figures(figures['tick_cores'])} core) of the busy threshold "
        f"{two_figures(figures['threshold'])}, not judged"
    )


# Words for the findings of a cell's noise: too few repeats to judge, or a figure that varies.
# Figures (offline/analysis/reliability.py): `repeats` and their `unit` ('repeat', or 'run' for a
# pooled cell), `half` (the throughput's 95 % interval, half its width over the median), `spread`
# (the farthest unit from the units' median, relative), `step_cv`, and the `bound` they are held
# to; a figure not known is None.


def _units(figures: Mapping[str, Any]) -> str:
    count, unit = int(figures["repeats"]), str(figures.get("unit") or "repeat")
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _cv_of(cv: float, plain: bool) -> str:
    """'step-time CV 31.5 %', or on the first screen 'step times vary by 31.5 %' (the glossary
    names the CV behind it)."""
    return f"step times vary by {pct(cv)}" if plain else f"step-time CV {pct(cv)}"


def _cv(figures: Mapping[str, Any], plain: bool = False) -> str:
    cv = figures.get("step_cv")
    return _cv_of(cv, plain) if cv is not None else "step-time CV not recorded"


def _bound(figures: Mapping[str, Any]) -> str:
    return "±" + pct_set(float(figures["bound"]))


# what a "spread" is wherever one is shown (offline/analysis/stats.py, `spread_from_median`)
SPREAD = "the farthest repeat's distance from the repeats' median, over that median"

# the three conditions a reliable cell meets, keyed by the figure the rule holds to the bound,
# each as met and as missed: the glossary names them from here, so it says the rule's own
CONDITIONS: dict[str, tuple[str, str]] = {
    "half": (
        "throughput's 95 % interval within {bound} of the median",
        "a 95 % interval wider than {bound}",
    ),
    "spread": (
        "every repeat within {bound} of the repeats' median",
        "a repeat more than {bound} from the repeats' median",
    ),
    "step_cv": ("step-time CV at most {cv}", "step-time CV above {cv}"),
}


def condition(key: str, bound: float, *, met: bool = True) -> str:
    """One of `CONDITIONS` at `bound`: 'every repeat within ±10 % of the repeats' median'."""
    words = CONDITIONS[key][0 if met else 1]
    return words.format(bound="±" + pct_set(bound), cv=pct_set(bound))


def glossary(bound: float) -> dict[str, str]:
    """The glossary's words for the levels, each naming exactly the conditions the rule
    (offline/analysis/reliability.py) applies at `bound`."""
    interval, repeats, cv = (condition(key, bound) for key in CONDITIONS)
    wide, off, steps = (condition(key, bound, met=False) for key in CONDITIONS)
    return {
        level_word("reliable"): f"a cell with its {interval}, {repeats} and {cv}",
        level_word("varies"): f"a cell with {off} or {steps} (its step times vary inside its "
        "windows), whatever its interval",
        level_word("too_few_repeats"): f"a cell with {repeats} and {cv}, but {wide}: its "
        "repeats are too few (2 repeats have 1 degree of freedom), and more repeats settle it",
    }


def level_word(level: str) -> str:
    """A reliability level's word ('noisy' for `varies`): its data key is never shown."""
    from torchscale.contracts.wording import say

    return say(Finding(code=f"noise.level.{level}"))


def varies(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'varies more than ±10 %: 4 repeats up to ±14.7 % from their median, step-time CV 28.1 %'
    (only what passes the bound)."""
    bound = float(figures["bound"])
    parts = []
    spread, cv = figures.get("spread"), figures.get("step_cv")
    if spread is not None and spread > bound:
        parts.append(f"{_units(figures)} up to ±{pct(spread)} from their median")
    if cv is not None and cv > bound:
        parts.append(_cv_of(cv, plain))
    return f"varies more than {_bound(figures)}: {', '.join(parts)}"


def too_few(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'too few repeats to judge: 2 repeats within ±2.2 % of their median give a 95 % interval
    of ±29.5 %, above ±10 %; step-time CV 5.5 %'."""
    spread = figures.get("spread")
    within = f" within ±{pct(spread)} of their median" if spread is not None else ""
    unit = str(figures.get("unit") or "repeat")
    return (
        f"too few {unit}s to judge: {_units(figures)}{within} give a 95 % interval of "
        f"±{pct(figures['half'])}, above {_bound(figures)}; {_cv(figures, plain)}"
    )


def spread_unknown(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'one repeat: no run-to-run spread to judge throughput by; step-time CV 3.0 %'."""
    why = "one repeat" if int(figures["repeats"]) < 2 else "no throughput interval"
    return f"{why}: no run-to-run spread to judge throughput by; {_cv(figures, plain)}"


def reliable(figures: Mapping[str, Any], plain: bool = False) -> str:
    """'throughput's 95 % interval ±2.0 % of the median over 3 repeats, repeats up to ±1.0 %
    from their median and step-time CV 5.0 %, all within ±10 %' (the glossary's three)."""
    spread, unit = figures.get("spread"), str(figures.get("unit") or "repeat")
    repeats = f"{unit}s up to ±{pct(spread)}" if spread is not None else f"{unit}s not recorded"
    return (
        f"throughput's 95 % interval ±{pct(figures['half'])} of the median over "
        f"{_units(figures)}, {repeats} from their median and {_cv(figures, plain)}, all within "
        f"{_bound(figures)}"
    )


# each phrase words its figures technically, or with `plain=True` as the first screen says them
_WORDED: dict[str, Callable[..., str]] = {
    "noise.reliable": reliable,
    "noise.varies": varies,
    "noise.too_few_repeats": too_few,
    "noise.spread_unknown": spread_unknown,
}


def plain(finding: Finding) -> str:
    """A cell's reliability in the first screen's words: as `PHRASES` say it, the step-time CV
    said as how much the step times vary (the glossary names the CV)."""
    phrase = _WORDED.get(finding.code)
    if phrase is None:  # a busy machine's words (noise.busy_machine), as every surface says them
        from torchscale.contracts import wording

        return wording.say(finding)
    return phrase(finding.figures, plain=True)


# Words for what a run can and cannot be used for (offline/analysis/run_purpose.py decides the
# codes: the first line of a report and of `benchmark`'s end answer, docs/reporting.md "What a
# run is for"), and for a steady cell on a busy machine (offline/analysis/reliability.py).
# Figures: `cells` (the measured cells the verdict covers), `why` ('cpu' or 'host_bound'),
# `world` (the one world size every cell ran at), `node_gpus` (the GPUs its node has, None where
# not recorded), `device` ('cuda', 'cpu').


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _ranks(count: int, device: str) -> str:
    return _plural(count, "CPU rank" if device == "cpu" else "GPU")


def path_check(figures: Mapping[str, Any]) -> str:
    return (
        "A path check, not a measurement: these cells prove the code path runs "
        "(validate --level workload); no figure of theirs is judged"
    )


def no_gpu_figure(figures: Mapping[str, Any]) -> str:
    if figures.get("why") == "cpu":
        # a CPU report never names GPUs (its ranks are CPU ranks): 'accelerator'
        return "No accelerator figure here: CPU ranks measure Python, the host and gloo"
    return "No GPU figure: the GPU waited for the host throughout"


def scaling_unmeasured(figures: Mapping[str, Any]) -> str:
    world, gpus = int(figures["world"]), figures.get("node_gpus")
    device = str(figures.get("device") or "cuda")
    if gpus is not None and int(gpus) <= world and device != "cpu":
        return f"Scaling not measured: this node has {_ranks(int(gpus), device)}"
    return f"Scaling not measured: every cell ran on {_ranks(world, device)}"


def busy_machine(figures: Mapping[str, Any]) -> str:
    """'ran on a busy machine: steady (...), but other processes took its cores or GPUs
    during its windows, so its figures measure the contention'."""
    return (
        f"ran on a busy machine: steady ({reliable(figures)}), but other processes took its "
        "cores or GPUs during its windows, so its figures measure the contention"
    )


PHRASES: Phrases = {
    # a reliability level's word (offline/analysis/reliability.py `Level`)
    "noise.level.reliable": "reliable",
    "noise.level.varies": "noisy",
    "noise.level.too_few_repeats": "too few repeats",
    "noise.level.spread_unknown": "spread unknown",
    "noise.level.busy_machine": "busy machine",
    "warning.step_time_cv": "High variance in step time: CV {cv:cv} > {threshold:cv}",
    "warning.sync_variance": _sync_variance,
    "warning.injected_delay": _injected,
    "warning.busy_machine": _busy,
    "warning.gpu_shared": _gpu_shared,
    "warning.throttled": _throttled,
    "warning.compiled_in_windows": _compiled_in_windows,
    "warning.tf32_off": (
        (
            "fp32 matmuls with TF32 off (torch's default): slower than TF32 on this GPU (dense "
            "peak {fp32_tflops:set} against {tf32_tflops:set} TFLOP/s); "
        )
        + TF32_HOW
    ),
    "warning.cpu_amp": "amp (fp16 autocast) on CPU is slow and not representative of GPUs",
    "warning.cpu_oversubscribed": (
        "{ranks} CPU ranks on {cores} core(s): oversubscribed, timings include contention"
    ),
    "warning.compile_off_small_model": _compile_off,
    "warning.slurm_few_cpus": (
        "the Slurm step has {cpus} CPU(s) on {where} for {ranks} rank(s): ranks, torchrun and "
        "NCCL's threads share them and the figures are CPU-bound; set "
        "launcher.slurm.cpus_per_task (or exclusive: true)"
    ),
    "warning.killed_after_result": (
        "the ranks had not exited {grace_s:set} s after the result was written: killed in their "
        "shutdown; measurement kept: see {log_dir}"
    ),
    "warning.timed_out_after_result": (
        "the ranks had not exited {timeout_s:set} s after the launch (the cell timeout) although "
        "the result was written: killed in their shutdown; measurement kept: see {log_dir}"
    ),
    "warning.exit_after_result": _exit_after_result,
    "warning.shared_gpu": _shared_gpu,
    "warning.path_check": (
        "a path check (validate --level workload): it proves the code path runs; none of its "
        "figures is judged"
    ),
    "clocks.hardware_slowdown": hardware_slowdown,
    "clocks.full": full,
    "clocks.site_cap": site_cap,
    "clocks.power_managed": power_managed,
    "clocks.low_under_limit": low_under_limit,
    "clocks.draw_unknown": draw_unknown,
    "clocks.low_limit_unknown": low_limit_unknown,
    "clocks.not_judged": not_judged,
    "busy.contended": _contended,
    "busy.quiet": _quiet,
    "busy.unresolved": _unresolved,
    **_WORDED,
    "purpose.path_check": path_check,
    "purpose.no_gpu_figure": no_gpu_figure,
    "purpose.scaling_unmeasured": scaling_unmeasured,
    "noise.busy_machine": busy_machine,
}
