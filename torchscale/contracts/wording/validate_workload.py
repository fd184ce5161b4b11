"""Words for a validate report's workload level (`validate --level
workload`: `workload.*`, stored by orchestration/validate/workload_judge.py) and for what is
ranked and compared (`ranking.*`: a compile gain, FSDP on one device)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording import why as reason
from torchscale.contracts.wording.spell import change_whole, pct_whole, three_digits, watts

# Words for `validate --level workload`: its steps' findings (codes and figures stored in the
# validate report by orchestration/validate/workload_judge.py) and the level's verdict.

F = Mapping[str, Any]

NO_WRAPPER = "no wrapper at world 1: DDP needs a peer"

ONE_GPU_UNPROVEN = (
    "not exercised on one GPU: the DDP wrapper, sharding, and any collective between devices "
    "(NCCL moved nothing)"
)


def _say(figures: Any) -> str:
    """A finding stored among another's figures, in its own words."""
    from torchscale.contracts import wording  # the joined phrases, made after this module

    return wording.say(Finding.model_validate(figures))


_RATE = "{samples_per_s:.3g} samples/s"

_MFU = _RATE + ", MFU {mfu:share0}"


def _why(f: F) -> str:
    return str(reason(f["why"] if not isinstance(f["why"], dict) else Finding(**f["why"])))


def _ended(f: F, otherwise: str) -> str:
    """Why a cell ended as it did: its error (`CellError.finding`), where it has one."""
    return _say(f["why"]) if f.get("why") else otherwise


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _max_batch(f: F) -> str:
    used = f.get("memory_used")
    share = f" at {pct_whole(used)} of memory" if used is not None else ""
    if not f["limit_reached"]:
        return f"largest batch {f['max_batch']}{share}, {f['probes']} probes"
    answer = (
        f"fits {f['limit']} (the limit tried: 4 x the cells' batch){share}, {f['probes']} probes"
    )
    if f.get("estimate") is not None:
        answer += f"; estimate ~{f['estimate']} from the probes' peaks (linear, not probed)"
    return answer


def step_words(f: F) -> str:
    """The profile's step as its diagnosis heads it (figures of workload_judge.profile_step)."""
    kind, step = f["kind"], three_digits(f["step_ms"], "ms") if f.get("step_ms") is not None else ""
    if kind == "none":
        return "no step time"
    if kind == "plain":
        return f"step {step}"
    if kind == "unclear":
        return (
            f"step {step} traced ({change_whole(f['added'])} over "
            "the untraced step, within the noise of its few traced steps)"
        )
    if kind == "traced":
        return f"step {step} traced, {change_whole(f['added'])} over the untraced"
    traced = three_digits(f["traced_ms"], "ms")
    return f"step {step} untraced (traced {traced}, {change_whole(f['added'])} under the profiler)"


def _profiled(f: F) -> str:
    collectives = f", {f['collectives']} collectives matched" if f["world"] > 1 else ""
    diagnosis = "" if f["diagnosed"] else "; no diagnosis"
    ranks = _plural(f["ranks"], "rank")
    return f"{ranks}, {f['mode']}, {step_words(f['step'])}{collectives}{diagnosis}"


def _comm_failed(f: F) -> str:
    if f.get("wrong"):
        return f"{f['wrong']} wrong element(s)"
    if f.get("rows"):
        return f"{f['rows']} row(s) failed"
    if f["status"] == "ok":
        return f"the bandwidth gate {f['gate']}"
    return f"the sweep ended {f['status']}"


def _power(f: F) -> str:
    said = f"up to {watts(f['watts'])}" if f.get("watts") is not None else "no power figure"
    if f.get("blind"):
        said += (
            f"; {f['blind']} cell(s) without one, as their windows are short "
            f"({f['label']}: {_why(f)})"
        )
    return f"NVML sampled every cell; {said}"


def _worth_a_look(f: F) -> str:
    return f" Worth a look: {', '.join(f['warns'])}." if f.get("warns") else ""


def _works(f: F) -> str:
    if f["path"] == "GPU (NCCL)" and f["world"] < 2:
        verdict = f"The training stack works end to end on one GPU; {ONE_GPU_UNPROVEN}."
    else:
        verdict = (
            f"The {f['path']} training stack works end to end on this node "
            f"({_plural(f['world'], 'rank')})."
        )
    return verdict + _worth_a_look(f)


# Words for what is ranked and compared: a compile gain by its interval (no digits where the
# interval is wider than the gain), and FSDP on one device left out of every ranking.


def gain_figure(figures: Mapping[str, Any]) -> str:
    """'1.57x [1.53, 1.84]' (no interval: '1.50x'): the one figure every surface prints."""
    ratio, low, high = figures.get("ratio"), figures.get("low"), figures.get("high")
    if ratio is None:
        return "-"
    if low is None or high is None:
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x [{low:.2f}, {high:.2f}]"


def _units(figures: Mapping[str, Any]) -> str:
    unit = figures.get("unit", "repeats")
    return f"{figures.get('compiled_units')} + {figures.get('eager_units')} {unit}"


NOT_MEASURABLE = "ranking.compile_not_measurable"


def gain_text(code: str, figures: Mapping[str, Any]) -> str:
    """A table's cell: `gain_figure`, or 'not measurable (2 + 2 repeats)' where the interval is
    wider than the gain (the first screen shows no digits of such a figure)."""
    return f"not measurable ({_units(figures)})" if code == NOT_MEASURABLE else gain_figure(figures)


def _not_measurable(figures: Mapping[str, Any]) -> str:
    """'compiled faster beyond noise, by a ratio not measurable (2 + 2 repeats)'.

    The order first, as a lead is said ('ahead ... beyond noise, by a margin not measurable');
    without one, 'compiled/eager not measurable (2 + 2 repeats)'."""
    beyond = figures.get("beyond")
    if beyond:
        return f"compiled {beyond} beyond noise, by a ratio not measurable ({_units(figures)})"
    return f"compiled/eager {gain_text(NOT_MEASURABLE, figures)}"


def _gain(verdict: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda f: f"compiled/eager {gain_figure(f)}, {verdict} ({_units(f)})"


def _cells(f: Mapping[str, Any]) -> str:
    cells = f.get("cells", 1)
    return "its" if cells == 1 else f"{cells} cells'"


PHRASES: Phrases = {
    "workload.cell_skipped": lambda f: f"the planner skipped it: {_ended(f, 'no reason')}",
    "workload.cell_ended": lambda f: f"{f['status']}: {_ended(f, 'no reason recorded')}",
    "workload.no_throughput": "it ran but measured no throughput",
    "workload.rate": _RATE,
    "workload.mfu": _MFU,
    "workload.mfu_unjudged": "MFU not judged",
    "workload.mfu_no_cpu_peak": "MFU: no CPU peak to judge against",
    "workload.mfu_unknown": lambda f: f"MFU not judged: {_why(f)}",
    "workload.mfu_above": (_MFU + ": above {ceiling:share0}, no dense training step reaches it"),
    "workload.mfu_ddp_floor": (_MFU + " (the floor is judged on ddp only)"),
    "workload.mfu_below": (_MFU + ": below {floor:share0} ({source})"),
    "workload.no_wrapper": NO_WRAPPER,
    "workload.unplaced": "no world size on this node runs it: {why}",
    "workload.compile_gain": lambda f: f"{f['strategy']}: {_say(f['gain'])}",
    "workload.compile_unjudged": "{strategy}: not judged (no throughput figure)",
    "workload.compile_none": "no strategy ran both ways",
    "workload.no_result": "{what} left no result",
    "workload.max_batch_failed": lambda f: (
        f"{f['label']}: {_say(f['why']) if f.get('why') else None}"
        + (f": {f['given']}" if f.get("given") else "")
    ),
    "workload.max_batch": _max_batch,
    "workload.oom_missed": lambda f: (
        f"a batch that cannot fit ended {f['status']}: {_ended(f, 'it ran')}"
    ),
    "workload.oom_classified": lambda f: (
        "classified out of memory "
        + (f"on rank {f['rank']}" if f.get("rank") is not None else "with no rank named")
        + ("; the cells after it ran" if f.get("recovered") else "")
    ),
    "workload.oom_not_released": lambda f: (
        "classified out of memory "
        + (f"on rank {f['rank']}" if f.get("rank") is not None else "with no rank named")
        + ", but the next cells failed"
    ),
    "workload.oom_memory_unknown": "the device's memory is unknown ({why})",
    "workload.oom_overcommit": (
        "vm.overcommit_memory is 1: a CPU allocation never fails, the OOM killer acts"
    ),
    "workload.nsys_cpu": "the CPU path is profiled with torch.profiler (nsys is run on GPUs)",
    "workload.nsys_absent": "nsys is not on PATH",
    "workload.comm_one_device": "one device: nothing to exchange",
    "workload.profile_run_failed": lambda f: (
        f"the profiled run {f['status']}: {_ended(f, 'no reason recorded')}"
    ),
    "workload.profile_no_analysis": "no analysis: {why}",
    "workload.ranks_unanalysed": "{analysed} of {world} ranks analysed",
    "workload.no_step": "no complete step in the traces",
    "workload.no_compute": "no compute in the traces",
    "workload.no_kernels": "the profiler produced no GPU kernels",
    "workload.no_matched": "no collective matched across ranks",
    "workload.profiled": _profiled,
    "workload.comm_failed": _comm_failed,
    "workload.comm_passed": (
        "{ops:list}: {sizes} sizes checked, busbw up to {busbw_gbps:.3g} GB/s ({backend})"
    ),
    "workload.no_measured_cell": "no cell was measured",
    "workload.no_telemetry": lambda f: f"{f['label']}: {_why(f)}",
    "workload.cpu_telemetry": "CPU: process CPU and memory sampled (no NVML)",
    "workload.no_power": lambda f: f"{f['label']}: no NVML power ({_why(f)})",
    "workload.throttled": "{label} throttled: {reasons:list}",
    "workload.power": _power,
    "workload.report_missing": lambda f: f"not written: {', '.join(f['missing']) or 'any format'}",
    "workload.report_written": "written: {written:list}",
    "workload.step_refused": lambda f: str(f["error"]),
    "workload.stopped": "stopped by {how} during {step}",
    "workload.not_proven": (
        "The {path} training stack is NOT proven on this node: {failed:list} failed."
    ),
    "workload.works": _works,
    # how to fix them
    "workload.fix_look": "the cell's JSON and logs are in {where}",
    "workload.fix_see": "see {where}",
    "workload.fix_see_folder": "see {sub} in the folder",
    "workload.fix_traces": "the traces are in {where}",
    "workload.fix_report_plan": (
        "the workload level planned a cell that cannot run: please report it"
    ),
    "workload.fix_report_peak": (
        "the FLOP count or the GPU's peak is wrong: please report it with the cell's JSON"
    ),
    "workload.fix_clocks": (
        "check clocks and throttling (nvidia-smi -q -d PERFORMANCE) and that no other process "
        "shares the GPU"
    ),
    "workload.fix_planner_refuses": "the planner refuses every shape of it here: please report it",
    "workload.fix_compile_slower": (
        "compiled {strategies:list} is slower than eager beyond the repeats' spread: the cells' "
        "rank logs show graph breaks and recompiles"
    ),
    "workload.fix_sweep_log": "see the sweep's log",
    "workload.fix_oom_missed": (
        "the out-of-memory classification missed it: please report it with oom/"
    ),
    "workload.fix_oom_release": (
        "memory was not released after the failure: see the next cells' errors"
    ),
    "workload.fix_no_step_model": lambda f: (
        _why(f) if f.get("why") else "the traces gave no step model"
    ),
    "workload.fix_telemetry_docs": "see docs/telemetry.md, 'When a figure is missing'",
    "workload.fix_nvml": "check that pynvml (nvidia-ml-py) is installed and sees the GPUs",
    "workload.fix_throttled": "nvidia-smi -q -d PERFORMANCE shows why; cooling or a power cap",
    "workload.fix_report_cmd": "run `torchscale report -s FOLDER/runs` to see why",
    "workload.fix_refused": "fix what it names, then run the level again",
    "workload.fix_again": "run it again",
    "workload.fix_report_bug": "please report this as a torchscale bug, with the folder",
    "ranking.compiled_faster": _gain("compiled faster"),
    "ranking.compiled_slower": _gain("compiled slower"),
    "ranking.compile_no_clear_difference": _gain("no clear difference"),
    "ranking.compile_no_interval": _gain("no interval: one figure on a side"),
    "ranking.fsdp_on_one": (
        "FSDP on one device shards nothing: FSDP2's machinery over the whole model, never ranked "
        "or compared with another configuration"
    ),
    "ranking.shared_gpu": lambda f: (
        f"{_cells(f)} ranks shared a GPU (launcher.ranks_per_gpu): a stand-in for a "
        "multi-GPU cell, never ranked or compared with another configuration"
    ),
    NOT_MEASURABLE: _not_measurable,
}
